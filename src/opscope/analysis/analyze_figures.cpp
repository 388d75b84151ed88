#include "opscope/analysis/analyze_figures.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace opscope::analysis {

Figures temporal_figures(const Temporal& t) {
  return {{"span_ns", t.span_ns}, {"idle_ns", t.idle_ns}, {"compute_ns", t.compute_ns}, {"non_compute_ns", t.non_compute_ns}};
}

Figures idle_figures(const IdleBreakdown& i) {
  const IdleSplit& d = i.device;
  return {{"idle_ns", d.total_ns()},
          {"host_wait_ns", d.of(IdleKind::host_wait)},
          {"kernel_wait_ns", d.of(IdleKind::kernel_wait)},
          {"other_ns", d.of(IdleKind::other)},
          {"host_wait_gaps", d.gaps[0]},
          {"kernel_wait_gaps", d.gaps[1]},
          {"other_gaps", d.gaps[2]}};
}

Figures kernel_figures(const KernelBreakdown& k) {
  return {{"comp_ns", k.of(KernelKind::comp)},           {"comm_ns", k.of(KernelKind::comm)},
          {"mem_ns", k.of(KernelKind::mem)},             {"comp_count", k.kind_count[size_t(KernelKind::comp)]},
          {"comm_count", k.kind_count[size_t(KernelKind::comm)]}, {"mem_count", k.kind_count[size_t(KernelKind::mem)]}};
}

Figures overlap_figures(const Overlap& o) {
  return {{"comm_ns", o.comm_ns}, {"compute_ns", o.compute_ns}, {"overlap_ns", o.overlap_ns}, {"exposed_ns", o.exposed_ns}};
}

Figures launch_figures(const LaunchStats& l) {
  return {{"launches", l.launches},
          {"delay_p50_ns", l.delay_p50_ns},
          {"delay_p90_ns", l.delay_p90_ns},
          {"delay_p99_ns", l.delay_p99_ns},
          {"delay_max_ns", l.delay_max_ns},
          {"cpu_p50_ns", l.cpu_p50_ns},
          {"gpu_p50_ns", l.gpu_p50_ns},
          {"shorter_than_launch", l.shorter_than_launch},
          {"shorter_than_launch_gpu_ns", l.shorter_gpu_ns},
          {"runtime_outliers", l.runtime_outliers},
          {"delay_outliers", l.delay_outliers}};
}

Figures queue_figures(const QueueLengths& q) {
  int64_t full = 0;
  for (const StreamQueue& s : q.streams) full += s.full_ns;
  return {{"streams", int64_t(q.streams.size())}, {"max_length", q.max_length()}, {"full_ns", full}};
}

Figures path_figures(const CriticalPath& c) {
  Figures f = {{"length_ns", c.length_ns}};
  for (int k = 0; k < kPathKinds; ++k) f.emplace_back(std::string(path_kind_name(PathKind(k))) + "_ns", c.ns[size_t(k)]);
  return f;
}

Figures host_figures(const HostTime& h) {
  return {{"span_ns", h.span_ns}, {"busy_ns", h.busy_ns}, {"idle_ns", h.idle_ns}, {"launch_calls", h.launch_calls},
          {"launch_call_ns", h.launch_call_ns}};
}

namespace {

Spread spread_of(std::vector<std::pair<int64_t, int64_t>> v) {  // (value, rank)
  Spread s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front().first, s.min_rank = v.front().second;
  s.max = v.back().first, s.max_rank = v.back().second;
  // The largest value's first rank is named when several share it.
  for (auto& [value, rank] : v)
    if (value == s.max) {
      s.max_rank = rank;
      break;
    }
  s.median = v[(v.size() - 1) / 2].first;
  return s;
}

}  // namespace

std::vector<std::pair<std::string, Spread>> spread(const std::vector<std::pair<int64_t, Figures>>& per_rank) {
  std::vector<std::pair<std::string, Spread>> out;
  if (per_rank.empty()) return out;
  for (size_t f = 0; f < per_rank.front().second.size(); ++f) {
    std::vector<std::pair<int64_t, int64_t>> v;
    for (auto& [rank, figs] : per_rank) v.emplace_back(figs[f].second, rank);
    out.emplace_back(per_rank.front().second[f].first, spread_of(std::move(v)));
  }
  return out;
}

std::vector<KernelSpread> kernel_spread(const std::vector<const RankAnalysis*>& ranks, size_t n) {
  std::map<std::string, KernelSpread> by_name;
  for (const RankAnalysis* r : ranks)
    for (const KernelStat& k : r->kernels.kernels) {
      KernelSpread& s = by_name[k.name];
      s.name = k.name;
      s.kind = k.kind;
      s.per_rank.emplace_back(r->rank, k.total_ns);
    }
  std::vector<KernelSpread> out;
  for (auto& [name, s] : by_name) {
    std::vector<std::pair<int64_t, int64_t>> v;
    for (const RankAnalysis* r : ranks) {  // a rank that never ran the kernel: 0
      auto it = std::find_if(s.per_rank.begin(), s.per_rank.end(), [&](auto& p) { return p.first == r->rank; });
      v.emplace_back(it == s.per_rank.end() ? 0 : it->second, r->rank);
    }
    s.total = spread_of(std::move(v));
    out.push_back(std::move(s));
  }
  std::stable_sort(out.begin(), out.end(), [](const KernelSpread& a, const KernelSpread& b) { return a.total.max > b.total.max; });
  if (out.size() > n) out.resize(n);
  return out;
}

std::string human_ns(int64_t ns) {
  const double a = double(ns < 0 ? -ns : ns);
  if (a < 1e3) return fmt::format("{} ns", ns);
  if (a < 1e6) return fmt::format("{:.1f} µs", double(ns) / 1e3);
  if (a < 1e9) return fmt::format("{:.3f} ms", double(ns) / 1e6);
  return fmt::format("{:.3f} s", double(ns) / 1e9);
}

}  // namespace opscope::analysis
