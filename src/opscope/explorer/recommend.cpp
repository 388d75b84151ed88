#include "opscope/explorer/recommend.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

namespace opscope::explorer {

using nlohmann::json;
using prof::EventKind;

namespace {

// A kernel moving at least a byte per flop is memory bound: elementwise ops, reductions.
bool memory_bound(const prof::TraceEvent& launch) {
  return launch.bytes > 0 && launch.flops <= launch.bytes;
}

struct LaunchSpan {
  uint32_t launch;
  int64_t t0, t1;  // on the device
};

std::vector<LaunchSpan> device_spans(const Profile& p) {
  const auto& ev = p.trace().events;
  std::vector<LaunchSpan> out;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    if (ev[i].kind != EventKind::launch) continue;
    const auto& ks = p.correlation().kernels_of_launch(ev[i].id);
    if (ks.empty()) continue;
    LaunchSpan s{i, INT64_MAX, INT64_MIN};
    for (uint32_t k : ks) s.t0 = std::min(s.t0, ev[k].t0), s.t1 = std::max(s.t1, ev[k].t1);
    out.push_back(s);
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.t0 < b.t0; });
  return out;
}

std::string us(int64_t ns) { return fmt::format("{:.1f} µs", double(ns) / 1e3); }

template <class T>
T median(std::vector<T> v) {
  if (v.empty()) return T{};
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

void fuse(const Profile& p, const std::vector<LaunchSpan>& spans, json& out) {
  const auto& ev = p.trace().events;
  std::unordered_map<uint32_t, int64_t> dev_ns;
  for (auto& s : spans) dev_ns[s.launch] = s.t1 - s.t0;
  struct Pattern { int64_t count = 0, device_ns = 0, saving_ns = 0; std::vector<uint32_t> example; };
  std::map<std::string, Pattern> patterns;
  auto close_run = [&](std::vector<uint32_t>& run) {
    if (run.size() >= 2) {
      std::string key;
      int64_t ns = 0, bytes = 0, max_bytes = 0;
      for (size_t k = 0; k < run.size(); ++k) {
        key += (k ? " → " : "") + ev[run[k]].name;
        ns += dev_ns[run[k]];
        bytes += ev[run[k]].bytes;
        max_bytes = std::max(max_bytes, ev[run[k]].bytes);
      }
      Pattern& pat = patterns[key];
      ++pat.count;
      pat.device_ns += ns;
      // A fused kernel still moves the largest input/output once.
      pat.saving_ns += bytes > 0 ? int64_t(double(ns) * (1.0 - double(max_bytes) / double(bytes))) : 0;
      if (pat.example.empty()) {
        for (uint32_t l : run) {
          int64_t op = p.correlation().op_by_id(ev[l].parent);
          if (op >= 0) pat.example.push_back(uint32_t(op));
          pat.example.push_back(l);
        }
      }
    }
    run.clear();
  };
  // Per host thread, in issue order: a run grows over memory-bound launches of different
  // ops; a compute-bound launch or a host wait (sync) ends it.
  std::map<int32_t, std::vector<uint32_t>> runs;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    const auto& e = ev[i];
    if (e.kind == EventKind::sync) {
      close_run(runs[e.track]);
    } else if (e.kind == EventKind::launch && dev_ns.count(i)) {
      auto& run = runs[e.track];
      if (!memory_bound(e)) {
        close_run(run);
        continue;
      }
      if (!run.empty() && ev[run.back()].parent == e.parent) close_run(run);
      run.push_back(i);
    }
  }
  for (auto& [track, run] : runs) close_run(run);
  std::vector<std::pair<std::string, Pattern>> ranked(patterns.begin(), patterns.end());
  std::sort(ranked.begin(), ranked.end(),
            [](auto& a, auto& b) { return a.second.saving_ns > b.second.saving_ns; });
  for (size_t r = 0; r < ranked.size() && r < 3; ++r) {
    auto& [key, pat] = ranked[r];
    size_t n = 0;
    for (uint32_t e : pat.example) n += ev[e].kind == EventKind::launch;
    out.push_back(
        {{"kind", "fuse"},
         {"title", fmt::format("Fuse or compile {} consecutive elementwise kernels", n)},
         {"detail", fmt::format("{} runs {} times back to back; each kernel reads and writes "
                                "memory that the next one reads again. A fused kernel (compile) "
                                "moves the data once.",
                                key, pat.count)},
         {"impact_ns", pat.saving_ns},
         {"evidence", {{"sequence", key}, {"occurrences", pat.count},
                       {"device_ns", pat.device_ns}, {"estimated_saving_ns", pat.saving_ns}}},
         {"events", pat.example}});
  }
}

void launch_bound(const std::vector<LaunchSpan>& spans, json& out) {
  if (spans.size() < 8) return;
  constexpr int64_t kShort = 50'000;      // a kernel under 50 µs is short
  constexpr int64_t kThinkTime = 10'000'000;  // a gap over 10 ms is the program, not launches
  std::vector<int64_t> durs, gaps;
  int64_t idle = 0, end = spans[0].t1, window = spans.back().t1 - spans[0].t0;
  std::vector<uint32_t> example;
  for (size_t i = 0; i < spans.size(); ++i) {
    durs.push_back(spans[i].t1 - spans[i].t0);
    if (i == 0) continue;
    int64_t gap = spans[i].t0 - end;
    end = std::max(end, spans[i].t1);
    if (gap <= 0 || gap > kThinkTime) continue;
    bool both_short = spans[i].t1 - spans[i].t0 < kShort && spans[i - 1].t1 - spans[i - 1].t0 < kShort;
    if (!both_short) continue;
    gaps.push_back(gap);
    idle += gap;
    if (example.size() < 6) {
      if (example.empty() || example.back() != spans[i - 1].launch) example.push_back(spans[i - 1].launch);
      example.push_back(spans[i].launch);
    }
  }
  int64_t med = median(durs);
  double idle_frac = window > 0 ? double(idle) / double(window) : 0;
  if (med >= kShort || idle_frac < 0.2) return;
  out.push_back(
      {{"kind", "launch_bound"},
       {"title", "Launch-bound: device cores idle between short kernels"},
       {"detail", fmt::format("The median kernel runs {} and the device waits {} (median) for the "
                              "next one; {:.0f}% of the device's active window is such gaps. Fewer, "
                              "larger launches (fuse, compile, batch) keep the cores busy.",
                              us(med), us(median(gaps)), idle_frac * 100)},
       {"impact_ns", idle},
       {"evidence", {{"launches", spans.size()}, {"median_kernel_ns", med},
                     {"median_gap_ns", median(gaps)}, {"idle_ns", idle},
                     {"idle_fraction", idle_frac}}},
       {"events", example}});
}

void low_bandwidth(const Profile& p, const std::vector<LaunchSpan>& spans, double peak, json& out) {
  if (peak <= 0) return;
  const auto& ev = p.trace().events;
  struct K { int64_t ns = 0, bytes = 0, flops = 0; uint32_t example = 0; };
  std::map<std::string, K> by_name;
  int64_t total = 0;
  for (auto& s : spans) {
    K& k = by_name[ev[s.launch].name];
    if (k.ns == 0) k.example = s.launch;
    k.ns += s.t1 - s.t0, k.bytes += ev[s.launch].bytes, k.flops += ev[s.launch].flops;
    total += s.t1 - s.t0;
  }
  for (auto& [name, k] : by_name) {
    if (k.ns <= 0 || k.bytes <= 0 || k.flops > k.bytes || k.ns * 10 < total) continue;
    double bw = double(k.bytes) / double(k.ns);
    if (bw >= 0.35 * peak) continue;
    out.push_back(
        {{"kind", "low_bandwidth"},
         {"title", fmt::format("{} reaches {:.0f}% of peak bandwidth", name, 100 * bw / peak)},
         {"detail", fmt::format("A memory-bound kernel taking {:.0f}% of device time moves {:.1f} GB/s "
                                "against a peak of {:.1f} GB/s: check its access pattern "
                                "(strided or non-contiguous inputs) and its split across cores.",
                                100.0 * double(k.ns) / double(total), bw, peak)},
         {"impact_ns", int64_t(double(k.ns) * (1.0 - bw / peak))},
         {"evidence", {{"kernel", name}, {"device_ns", k.ns}, {"bytes", k.bytes},
                       {"gbps", bw}, {"peak_gbps", peak}}},
         {"events", {k.example}}});
  }
}

}  // namespace

json recommend(const Profile& p, double peak_gbps) {
  json out = json::array();
  auto spans = device_spans(p);
  fuse(p, spans, out);
  launch_bound(spans, out);
  low_bandwidth(p, spans, peak_gbps, out);
  std::sort(out.begin(), out.end(), [](const json& a, const json& b) {
    return a["impact_ns"].get<int64_t>() > b["impact_ns"].get<int64_t>();
  });
  if (p.trace().dropped > 0) {
    out.insert(out.begin(),
               {{"kind", "dropped"},
                {"title", fmt::format("{} events were dropped", p.trace().dropped)},
                {"detail", "A per-thread buffer filled up during capture: every figure here "
                           "undercounts. Raise the max events per core or profile fewer steps."},
                {"impact_ns", 0},
                {"evidence", {{"dropped", p.trace().dropped}}},
                {"events", json::array()}});
  }
  for (size_t i = 0; i < out.size(); ++i) out[i]["rank"] = i + 1;
  return out;
}

}  // namespace opscope::explorer
