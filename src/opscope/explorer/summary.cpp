#include "opscope/explorer/summary.h"

#include <algorithm>
#include <regex>
#include <unordered_map>

#include "opscope/analysis/peaks.h"
#include "opscope/explorer/recommend.h"

namespace opscope::explorer {

using nlohmann::json;
using prof::EventKind;

namespace {

// Total length covered by a set of intervals (sorted in place).
int64_t union_ns(std::vector<std::pair<int64_t, int64_t>>& iv) {
  std::sort(iv.begin(), iv.end());
  int64_t total = 0, a = INT64_MIN, b = INT64_MIN;
  for (auto [s, e] : iv) {
    if (s > b) {
      if (b > a) total += b - a;
      a = s, b = e;
    } else {
      b = std::max(b, e);
    }
  }
  if (b > a) total += b - a;
  return total;
}

double gbps(int64_t bytes, int64_t ns) { return ns > 0 ? double(bytes) / double(ns) : 0.0; }

// Framework ops placed under the device's roofline: arithmetic intensity (flops per
// byte of their launches) against achieved GFLOP/s. Ops whose launches do no flops
// (copies, concat) have no place on a log scale and are only counted.
json roofline_points(const Profile& p) {
  const analysis::KeyAverages& ka = p.key_averages();
  const analysis::Roofline& roof = ka.roofline();
  json points = json::array();
  int64_t data_only = 0;
  for (const analysis::KeyAverage& r : ka.rows()) {
    if (r.kind != EventKind::op || r.device_total_ns <= 0 || r.bytes <= 0) continue;
    if (r.flops <= 0) {
      ++data_only;
      continue;
    }
    double ai = double(r.flops) / double(r.bytes);
    points.push_back({{"name", r.name}, {"calls", r.count}, {"device_ns", r.device_total_ns},
                      {"bytes", r.bytes}, {"flops", r.flops}, {"ai", ai}, {"gflops", r.gflops()},
                      {"gbps", r.gbps()}, {"bound", roof.known() ? roof.bound(ai) : ""},
                      {"fraction", roof.known() ? roof.fraction(r.gbps(), r.gflops()) : 0.0}});
  }
  return {{"peak_gbps", roof.peak_gbps}, {"peak_gflops", roof.peak_gflops}, {"ridge", roof.ridge()},
          {"known", roof.known()}, {"points", std::move(points)}, {"data_only_ops", data_only}};
}

}  // namespace

double stated_peak_gbps(const prof::Trace& trace) {
  if (double gbps = analysis::profile_peaks(trace).memory_gbps; gbps > 0) return gbps;
  static const std::regex re(R"(([0-9]+(?:\.[0-9]+)?)\s*GB/s)");
  for (const auto& d : trace.devices) {
    std::smatch m;
    if (std::regex_search(d.description, m, re)) return std::stod(m[1]);
  }
  return 0;
}

const json& Profile::summary() const {
  std::call_once(summary_once_, [&] { summary_ = summarize(*this); });
  return summary_;
}

json summarize(const Profile& p) {
  const auto& trace = p.trace();
  const auto& tl = p.timeline();
  const auto& ev = trace.events;
  json s;
  const int64_t span = tl.end() - tl.begin();
  s["span_ns"] = span;

  // Host time: what the threads spent inside top-level framework ops.
  int64_t host_ns = 0;
  std::vector<std::pair<int64_t, int64_t>> busy;
  json cores = json::array();
  for (size_t li = 0; li < tl.lanes().size(); ++li) {
    const Lane& lane = tl.lanes()[li];
    if (lane.layer == Layer::framework && lane.depth == 0)
      for (size_t k = 0; k < lane.t0.size(); ++k) host_ns += lane.t1[k] - lane.t0[k];
    if (lane.layer != Layer::device) continue;
    int64_t core_busy = 0;
    for (size_t k = 0; k < lane.t0.size(); ++k) {
      core_busy += lane.t1[k] - lane.t0[k];
      busy.emplace_back(lane.t0[k], lane.t1[k]);
    }
    cores.push_back({{"lane", li},
                     {"name", lane.depth ? lane.name : lane.group},
                     {"busy_ns", core_busy},
                     {"kernels", lane.t0.size()},
                     {"utilization", span > 0 ? double(core_busy) / double(span) : 0.0}});
  }
  int64_t core_ns = 0;
  for (const auto& c : cores) core_ns += c["busy_ns"].get<int64_t>();
  s["host_ns"] = host_ns;
  s["device_ns"] = union_ns(busy);  // any core busy
  s["device_core_ns"] = core_ns;     // summed over cores
  s["cores"] = std::move(cores);

  // Achieved bandwidth per kernel name: the device work itself (kernel events, by the
  // kernel's name), never the runtime calls that launched it (an imported trace's
  // launches are cudaLaunchKernel, cudaMemcpyAsync...). A launch's slices on several
  // cores are one span, its bytes and flops the launch's where it has a launch event.
  struct K { int64_t launches = 0, ns = 0, bytes = 0, flops = 0; };
  struct Span { std::string_view name; int64_t t0, t1, bytes, flops; };
  std::unordered_map<uint64_t, size_t> span_of;
  std::vector<Span> spans;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    const prof::TraceEvent& e = ev[i];
    if (e.kind != EventKind::kernel) continue;
    auto [it, fresh] = e.id ? span_of.try_emplace(e.id, spans.size()) : std::pair{span_of.end(), true};
    if (fresh) {
      spans.push_back({e.name, e.t0, e.t1, e.bytes, e.flops});
      continue;
    }
    Span& sp = spans[it->second];
    sp.t0 = std::min(sp.t0, e.t0), sp.t1 = std::max(sp.t1, e.t1);
    sp.bytes += e.bytes, sp.flops += e.flops;
  }
  std::unordered_map<uint64_t, uint32_t> launch_of;
  for (uint32_t i = 0; i < ev.size(); ++i)
    if (ev[i].kind == EventKind::launch && ev[i].id) launch_of.try_emplace(ev[i].id, i);
  std::unordered_map<std::string_view, K> by_name;
  for (auto& [id, at] : span_of)
    if (auto l = launch_of.find(id); l != launch_of.end())  // the launch's figures win, as in key_averages
      spans[at].bytes = ev[l->second].bytes, spans[at].flops = ev[l->second].flops;
  for (const Span& sp : spans) {
    K& k = by_name[sp.name];
    ++k.launches;
    k.ns += sp.t1 - sp.t0;
    k.bytes += sp.bytes;
    k.flops += sp.flops;
  }
  double peak = stated_peak_gbps(trace);
  const analysis::Peaks peaks = analysis::profile_peaks(trace);
  std::string peak_source = peak <= 0 ? "best observed" : peaks.datasheet() ? "datasheet: " + peaks.model : "device";
  if (peak <= 0)
    for (auto& [name, k] : by_name) peak = std::max(peak, gbps(k.bytes, k.ns));
  json kernels = json::array();
  for (auto& [name, k] : by_name) {
    double bw = gbps(k.bytes, k.ns);
    kernels.push_back({{"name", name}, {"launches", k.launches}, {"device_ns", k.ns},
                       {"bytes", k.bytes}, {"flops", k.flops}, {"gbps", bw},
                       {"gflops", k.ns > 0 ? double(k.flops) / double(k.ns) : 0.0},
                       {"peak_fraction", peak > 0 ? bw / peak : 0.0}});
  }
  std::sort(kernels.begin(), kernels.end(), [](const json& a, const json& b) {
    return a["device_ns"].get<int64_t>() > b["device_ns"].get<int64_t>();
  });
  s["kernels"] = std::move(kernels);
  s["peak_gbps"] = peak;
  s["peak_source"] = peak_source;

  json top = json::array();
  auto rows = p.key_averages().sorted("self_device_time_total");
  for (size_t i = 0; i < rows.size() && top.size() < 10; ++i) {
    const analysis::KeyAverage& r = rows[i];
    if (r.kind == EventKind::kernel) continue;  // ops here; kernels have their own table
    top.push_back({{"name", r.name}, {"kind", prof::kind_name(r.kind)}, {"calls", r.count},
                   {"self_cpu_ns", r.self_cpu_ns}, {"self_device_ns", r.self_device_ns},
                   {"device_total_ns", r.device_total_ns}});
  }
  s["top_ops"] = std::move(top);
  s["roofline"] = roofline_points(p);
  s["recommendations"] = recommend(p);
  s["dropped"] = trace.dropped;
  // Each device's allocator peak and the op it happened in (empty: no allocator events).
  json memory = json::array();
  for (const MemoryTrack& track : p.memory()) {  // the memory view's, computed once per profile
    const analysis::DeviceMemory& m = track.summary;
    memory.push_back({{"device", m.device}, {"name", m.name}, {"peak_bytes", m.peak_bytes},
                      {"peak_t", m.peak_time_ns}, {"peak_op", m.peak_op_path}, {"allocs", m.allocs}});
  }
  s["memory"] = std::move(memory);
  return s;
}

}  // namespace opscope::explorer
