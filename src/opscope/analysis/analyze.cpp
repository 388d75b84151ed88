#include "opscope/analysis/analyze.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "opscope/core/error.h"

namespace opscope::analysis {

void check_analyze_options(const AnalyzeOptions& o) {
  if (o.kernel_wait_ns < 0) fail("--kernel-wait-ns", "{} is not a duration in ns (>= 0)", o.kernel_wait_ns);
  if (o.top_kernels < 0) fail("--top", "{} is not a count of kernels (>= 0)", o.top_kernels);
}

RankAnalysis analyze_rank(const RankView& v, const AnalyzeOptions& o) {
  RankAnalysis r;
  r.rank = v.rank;
  r.has_device = v.has_device();
  r.gpu = v.gpu;
  for (const Queue& q : v.queues) r.queues.push_back(q.name);
  r.steps = int64_t(v.steps.size());
  r.host = host_time(v);
  if (!r.has_device) return r;
  r.temporal = temporal_breakdown(v);
  r.idle = idle_time_breakdown(v, o.kernel_wait_ns);
  r.kernels = kernel_breakdown(v);
  r.overlap = comm_comp_overlap(v);
  r.launches = launch_stats(v);
  r.queue_lengths = queue_lengths(v);
  r.critical_path = critical_path(v, o.kernel_wait_ns);
  if (o.per_step) {
    std::vector<RankView> steps = step_views(v);
    for (size_t i = 0; i < steps.size(); ++i) {
      const RankView& s = steps[i];
      StepAnalysis a;
      a.name = v.steps[i].name;
      a.t0 = v.steps[i].t0;
      a.t1 = v.steps[i].t1;
      a.temporal = temporal_breakdown(s);
      a.idle = idle_time_breakdown(s, o.kernel_wait_ns);
      a.kernels = kernel_breakdown(s);
      a.kernels.kernels.clear();  // per step: the kinds; the top kernels are the rank's
      a.overlap = comm_comp_overlap(s);
      a.launches = launch_stats(s);
      r.per_step.push_back(std::move(a));
    }
  }
  return r;
}

bool TraceAnalysis::has_device() const {
  return std::any_of(ranks.begin(), ranks.end(), [](const RankAnalysis& r) { return r.has_device; });
}

const RankAnalysis* TraceAnalysis::slowest() const {
  const RankAnalysis* best = nullptr;
  int n = 0;
  for (const RankAnalysis& r : ranks) {
    if (!r.has_device) continue;
    ++n;
    if (!best || r.work_ns() > best->work_ns()) best = &r;
  }
  return n >= 2 ? best : nullptr;
}

int64_t TraceAnalysis::median_work_ns() const {
  std::vector<int64_t> w;
  for (const RankAnalysis& r : ranks)
    if (r.has_device) w.push_back(r.work_ns());
  if (w.empty()) return 0;
  std::sort(w.begin(), w.end());
  return w[(w.size() - 1) / 2];
}

void add_rank_warnings(TraceAnalysis& a) {
  if (a.ranks.empty()) return;
  if (!a.has_device()) {
    a.warnings.push_back(
        "no device events (kernels, memcpys, memsets): only the host analysis ran; the device analyses (temporal, "
        "idle, kernels, overlap, launches, queues, critical path) need GPU events — record with "
        "ProfilerActivity.CUDA (torch.profiler) or the device layer (opscope)");
    return;
  }
  std::vector<std::string> without;
  for (const RankAnalysis& r : a.ranks)
    if (!r.has_device) without.push_back(fmt::format("{}", r.rank));
  if (!without.empty())
    a.warnings.push_back(fmt::format("rank{} {} had no device events: the device analyses leave {} out",
                                     without.size() > 1 ? "s" : "", fmt::join(without, ", "),
                                     without.size() > 1 ? "them" : "it"));
  bool differ = false;
  for (const RankAnalysis& r : a.ranks) differ = differ || r.steps != a.ranks.front().steps;
  if (differ) {
    std::vector<std::string> counts;
    for (const RankAnalysis& r : a.ranks) counts.push_back(fmt::format("rank {}: {}", r.rank, r.steps));
    a.warnings.push_back(fmt::format("the ranks recorded different numbers of ProfilerSteps ({}): each rank is "
                                     "analysed over its own steps, and per-step figures do not line up across ranks",
                                     fmt::join(counts, ", ")));
  }
}

TraceAnalysis analyze(const Trace& trace, const AnalyzeOptions& o) {
  check_analyze_options(o);
  TraceAnalysis a;
  a.options = o;
  std::vector<int64_t> ranks = trace_ranks(trace);
  if (o.rank != kAllRanks) {
    if (std::find(ranks.begin(), ranks.end(), o.rank) == ranks.end()) {
      if (ranks == std::vector<int64_t>{-1})
        fail("--rank", "rank {} is not in the profile: it holds one process (no ranks)", o.rank);
      fail("--rank", "rank {} is not in the profile (its ranks: {})", o.rank, fmt::join(ranks, ", "));
    }
    ranks = {o.rank};
  }
  for (int64_t r : ranks) a.ranks.push_back(analyze_rank(rank_view(trace, r), o));
  add_rank_warnings(a);
  return a;
}

}  // namespace opscope::analysis
