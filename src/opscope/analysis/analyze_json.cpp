// TraceAnalysis::to_json: one key per analysis (temporal, idle, kernels, overlap,
// launches, queues, critical_path, host), each with its definition, its figures per rank
// (durations in ns) and their spread across ranks. docs/ANALYSES.md documents the keys.
#include <nlohmann/json.hpp>

#include "opscope/analysis/analyze.h"
#include "opscope/analysis/analyze_figures.h"

namespace opscope::analysis {

namespace {

using nlohmann::ordered_json;

ordered_json span_json(int64_t t0, int64_t t1) { return {{"t0", t0}, {"t1", t1}}; }

ordered_json spread_json(const std::vector<std::pair<int64_t, Figures>>& per_rank) {
  ordered_json j = ordered_json::object();
  if (per_rank.size() < 2) return j;
  for (auto& [key, s] : spread(per_rank))
    j[key] = {{"min", s.min}, {"median", s.median}, {"max", s.max}, {"min_rank", s.min_rank}, {"max_rank", s.max_rank}};
  return j;
}

ordered_json split_json(const IdleSplit& s) {
  ordered_json j = ordered_json::object();
  for (int k = 0; k < kIdleKinds; ++k)
    j[idle_kind_name(IdleKind(k))] = {{"ns", s.ns[size_t(k)]}, {"gaps", s.gaps[size_t(k)]},
                                      {"longest", span_json(s.longest_t0[size_t(k)], s.longest_t1[size_t(k)])}};
  return j;
}

ordered_json kinds_json(const KernelBreakdown& k) {
  ordered_json j = ordered_json::object();
  const int64_t all = k.total_ns();
  for (int x = 0; x < kKernelKinds; ++x)
    j[kernel_kind_name(KernelKind(x))] = {{"ns", k.kind_ns[size_t(x)]}, {"count", k.kind_count[size_t(x)]},
                                          {"share", all ? double(k.kind_ns[size_t(x)]) / double(all) : 0.0}};
  return j;
}

// One analysis: its definition, per-rank entries made by `entry`, and the spread of
// `figures` over the ranks with device work.
template <class Entry, class Figs>
ordered_json section(const TraceAnalysis& a, const char* definition, bool device, Entry&& entry, Figs&& figures) {
  ordered_json j;
  j["definition"] = definition;
  ordered_json per = ordered_json::array();
  std::vector<std::pair<int64_t, Figures>> figs;
  for (const RankAnalysis& r : a.ranks) {
    if (device && !r.has_device) continue;
    ordered_json e = {{"rank", r.rank}};
    if (!r.source.empty()) e["source"] = r.source;
    Figures f = figures(r);
    for (auto& [k, v] : f) e[k] = v;
    entry(r, e);
    per.push_back(std::move(e));
    figs.emplace_back(r.rank, std::move(f));
  }
  j["available"] = !per.empty();
  if (per.empty()) j["why"] = "the trace has no device events (kernels, memcpys, memsets): this analysis needs GPU events";
  j["per_rank"] = std::move(per);
  j["across_ranks"] = spread_json(figs);
  return j;
}

ordered_json steps_json(const RankAnalysis& r, const char* what) {
  ordered_json steps = ordered_json::array();
  for (const StepAnalysis& s : r.per_step) {
    ordered_json e = {{"step", s.name}, {"t0", s.t0}, {"t1", s.t1}};
    const std::string w = what;
    Figures f = w == "temporal" ? temporal_figures(s.temporal)
                : w == "idle"   ? idle_figures(s.idle)
                : w == "kernels" ? kernel_figures(s.kernels)
                : w == "overlap" ? overlap_figures(s.overlap)
                                 : launch_figures(s.launches);
    for (auto& [k, v] : f) e[k] = v;
    steps.push_back(std::move(e));
  }
  return steps;
}

}  // namespace

std::string TraceAnalysis::to_json() const {
  const TraceAnalysis& a = *this;
  const bool per_step = options.per_step;
  ordered_json j;
  j["source"] = source;
  ordered_json ranks = ordered_json::array();
  for (const RankAnalysis& r : a.ranks) ranks.push_back(r.rank);
  j["ranks"] = ranks;
  j["span"] = "each rank: its first to its last device event";
  j["kernel_wait_threshold_ns"] = options.kernel_wait_ns;
  j["warnings"] = warnings;
  if (const RankAnalysis* s = slowest())
    j["slowest_rank"] = {{"rank", s->rank}, {"work_ns", s->work_ns()}, {"median_work_ns", median_work_ns()},
                         {"definition", "the rank whose device spent the longest on its own work: span − idle − "
                                        "exposed communication"}};
  else
    j["slowest_rank"] = nullptr;

  j["temporal"] = section(
      a, "span = first to last device event; idle = span − |∪ device work|; compute = |∪ COMP work|; non_compute = "
         "span − idle − compute",
      true,
      [&](const RankAnalysis& r, ordered_json& e) {
        e["t0"] = r.temporal.t0, e["t1"] = r.temporal.t1;
        if (per_step) e["per_step"] = steps_json(r, "temporal");
      },
      [](const RankAnalysis& r) { return temporal_figures(r.temporal); });

  j["idle"] = section(
      a, "each gap in ∪ device work, by the work that ends it: host_wait (its launch call returned after the gap "
         "began), kernel_wait (queued, gap under the threshold), other",
      true,
      [&](const RankAnalysis& r, ordered_json& e) {
        e["device"] = split_json(r.idle.device);
        ordered_json streams = ordered_json::array();
        for (const StreamIdle& s : r.idle.streams)
          streams.push_back({{"stream", r.queues[size_t(s.queue)]}, {"idle", split_json(s.split)}});
        e["streams"] = streams;
        if (per_step) e["per_step"] = steps_json(r, "idle");
      },
      [](const RankAnalysis& r) { return idle_figures(r.idle); });

  std::vector<const RankAnalysis*> with_device;
  for (const RankAnalysis& r : a.ranks)
    if (r.has_device) with_device.push_back(&r);
  j["kernels"] = section(
      a, "device time summed per piece of work, by kind (COMM, COMP, MEM: the name rules of kernel_kind.h) and by "
         "kernel name; device kernels only, never the runtime calls that launched them",
      true,
      [&](const RankAnalysis& r, ordered_json& e) {
        e["kinds"] = kinds_json(r.kernels);
        ordered_json top = ordered_json::array();
        for (size_t i = 0; i < r.kernels.kernels.size() && int(i) < options.top_kernels; ++i) {
          const KernelStat& k = r.kernels.kernels[i];
          top.push_back({{"name", k.name}, {"kind", kernel_kind_name(k.kind)}, {"count", k.count},
                         {"total_ns", k.total_ns}, {"mean_ns", k.mean_ns()}, {"min_ns", k.min_ns},
                         {"max_ns", k.max_ns}, {"longest", span_json(k.longest_t0, k.longest_t1)}});
        }
        e["top"] = top;
        e["distinct"] = r.kernels.kernels.size();
        if (per_step) e["per_step"] = steps_json(r, "kernels");
      },
      [](const RankAnalysis& r) { return kernel_figures(r.kernels); });
  if (with_device.size() >= 2) {
    ordered_json spread_top = ordered_json::array();
    for (const KernelSpread& k : kernel_spread(with_device, size_t(options.top_kernels))) {
      ordered_json per = ordered_json::object();
      for (auto& [rank, ns] : k.per_rank) per[std::to_string(rank)] = ns;
      spread_top.push_back({{"name", k.name}, {"kind", kernel_kind_name(k.kind)}, {"min_ns", k.total.min},
                            {"median_ns", k.total.median}, {"max_ns", k.total.max}, {"slowest_rank", k.total.max_rank},
                            {"per_rank_ns", per}});
    }
    j["kernels"]["top_across_ranks"] = spread_top;
  }

  j["overlap"] = section(
      a, "comm = |∪ COMM work|; overlap = |∪ COMM ∩ ∪ COMP|; ratio = overlap / comm; exposed = comm − overlap", true,
      [&](const RankAnalysis& r, ordered_json& e) {
        e["ratio"] = r.overlap.ratio();
        e["longest_exposed"] = span_json(r.overlap.exposed_t0, r.overlap.exposed_t1);
        if (per_step) e["per_step"] = steps_json(r, "overlap");
      },
      [](const RankAnalysis& r) { return overlap_figures(r.overlap); });

  j["launches"] = section(
      a, "launch delay = work start − its launch call's end (>= 0); cpu / gpu = the call's / the work's duration; "
         "shorter_than_launch: gpu < cpu; outliers: calls over 50 µs, delays over 100 µs",
      true,
      [&](const RankAnalysis& r, ordered_json& e) {
        e["delay_total_ns"] = r.launches.delay_total_ns;
        ordered_json bins = ordered_json::array();
        for (const DelayBin& b : r.launches.histogram)
          bins.push_back({{"lo_ns", b.lo_ns}, {"hi_ns", b.hi_ns >= 0 ? ordered_json(b.hi_ns) : ordered_json(nullptr)},
                          {"count", b.count},
                          {"example", b.count ? span_json(b.example_t0, b.example_t1) : ordered_json(nullptr)}});
        e["histogram"] = bins;
        if (per_step) e["per_step"] = steps_json(r, "launches");
      },
      [](const RankAnalysis& r) { return launch_figures(r.launches); });

  j["queues"] = section(
      a, "a stream's queue length: work launched on it not yet started (+1 at the launch call's start, −1 at the "
         "work's start); mean is time-weighted over the stream's span; full_ns: time at 1024 or more",
      true,
      [&](const RankAnalysis& r, ordered_json& e) {
        ordered_json streams = ordered_json::array();
        for (const StreamQueue& s : r.queue_lengths.streams)
          streams.push_back({{"stream", r.queues[size_t(s.queue)]}, {"launches", s.launches},
                             {"max_length", s.max_length}, {"mean_length", s.mean_length}, {"span_ns", s.span_ns},
                             {"full_ns", s.full_ns}, {"at_max", span_json(s.max_t0, s.max_t1)}});
        e["streams"] = streams;
      },
      [](const RankAnalysis& r) { return queue_figures(r.queue_lengths); });

  j["critical_path"] = section(
      a, "one iteration (the median ProfilerStep; the whole span without steps), walked back from its end: device "
         "work, the launch delay or stream gap before it, the host back to the sync it waited in",
      true,
      [&](const RankAnalysis& r, ordered_json& e) {
        const CriticalPath& c = r.critical_path;
        e["iteration"] = c.iteration;
        e["step"] = c.step;
        e["steps"] = c.steps;
        e["t0"] = c.t0, e["t1"] = c.t1;
        e["bound"] = c.bound();
        // The longest segments (the full path can have thousands), in time order.
        std::vector<const PathSegment*> segs;
        for (const PathSegment& s : c.segments) segs.push_back(&s);
        std::stable_sort(segs.begin(), segs.end(), [](auto* x, auto* y) { return x->t1 - x->t0 > y->t1 - y->t0; });
        if (segs.size() > 50) segs.resize(50);
        std::stable_sort(segs.begin(), segs.end(), [](auto* x, auto* y) { return x->t0 < y->t0; });
        ordered_json out = ordered_json::array();
        for (const PathSegment* s : segs) {
          ordered_json x = {{"kind", path_kind_name(s->kind)}, {"t0", s->t0}, {"t1", s->t1}, {"ns", s->t1 - s->t0},
                            {"label", s->label}};
          if (s->has_event) x["event"] = s->event;
          out.push_back(std::move(x));
        }
        e["segments"] = out;
        e["segment_count"] = c.segments.size();
      },
      [](const RankAnalysis& r) { return path_figures(r.critical_path); });

  j["host"] = section(
      a, "span = first to last framework op on the rank's host threads; busy = |∪ ops| of the busiest thread; idle = "
         "span − busy",
      false,
      [&](const RankAnalysis& r, ordered_json& e) {
        e["t0"] = r.host.t0, e["t1"] = r.host.t1;
        ordered_json threads = ordered_json::array();
        for (const ThreadTime& t : r.host.threads)
          threads.push_back({{"thread", t.name}, {"busy_ns", t.busy_ns}, {"ops", t.ops}});
        e["threads"] = threads;
      },
      [](const RankAnalysis& r) { return host_figures(r.host); });
  return j.dump(2);
}

}  // namespace opscope::analysis
