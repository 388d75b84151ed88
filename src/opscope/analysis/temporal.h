// Temporal breakdown (HTA's get_temporal_breakdown): where one rank's device time went.
//
//   span         = the last device event's end − the first device event's start
//   idle         = span − |∪ all device work|   (no kernel, memcpy or memset running)
//   compute      = |∪ COMP work|                 (kernel_kind.h)
//   non_compute  = span − idle − compute         (COMM and MEM work no compute hides)
//
// ∪ merges overlapping work, so two streams busy at once count once: the three parts
// add up to the span.
#pragma once
#include <cstdint>

#include "opscope/analysis/rank_view.h"

namespace opscope::analysis {

struct Temporal {
  int64_t t0 = 0, t1 = 0;  // the span, in the trace's time
  int64_t span_ns = 0, idle_ns = 0, compute_ns = 0, non_compute_ns = 0;
};

Temporal temporal_breakdown(const RankView& view);

}  // namespace opscope::analysis
