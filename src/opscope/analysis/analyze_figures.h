// The figures of each analysis as (key, value) pairs, in the order the JSON and the
// text print them, and their spread across ranks: what analyze_json.cpp and
// analyze_text.cpp share. Durations end in _ns; the rest are counts.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "opscope/analysis/analyze.h"

namespace opscope::analysis {

using Figures = std::vector<std::pair<std::string, int64_t>>;

Figures temporal_figures(const Temporal& t);
Figures idle_figures(const IdleBreakdown& i);
Figures kernel_figures(const KernelBreakdown& k);
Figures overlap_figures(const Overlap& o);
Figures launch_figures(const LaunchStats& l);
Figures queue_figures(const QueueLengths& q);
Figures path_figures(const CriticalPath& c);
Figures host_figures(const HostTime& h);

struct Spread {
  int64_t min = 0, median = 0, max = 0;
  int64_t min_rank = -1, max_rank = -1;
};

// Each figure's spread over the ranks (ranks without device work left out of the device
// analyses by the caller).
std::vector<std::pair<std::string, Spread>> spread(const std::vector<std::pair<int64_t, Figures>>& per_rank);

// A kernel's total device time on each rank, for the kernels that take the most on any
// rank (top `n` by their largest total).
struct KernelSpread {
  std::string name;
  KernelKind kind = KernelKind::comp;
  Spread total;
  std::vector<std::pair<int64_t, int64_t>> per_rank;  // (rank, total ns)
};
std::vector<KernelSpread> kernel_spread(const std::vector<const RankAnalysis*>& ranks, size_t n);

// "12.345 ms", "850.0 µs", "120 ns".
std::string human_ns(int64_t ns);

}  // namespace opscope::analysis
