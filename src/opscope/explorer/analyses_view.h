// The trace analyses (analysis/analyze.h) as the explorer's Summary draws them: per rank
// its breakdown (compute, non-compute, idle), its idle-time split, its comm/comp overlap
// and its launch-delay histogram. Every figure carries the timeline range that shows it
// (t0, t1 in the trace's ns): a rank's span, the longest gap of each idle kind, the
// longest stretch of exposed communication, each delay bin's longest delay.
#pragma once
#include <nlohmann/json.hpp>

#include "opscope/analysis/analyze.h"

namespace opscope::explorer {

// {"ranks": [{"rank", "t0", "t1", "span_ns", "compute_ns", "non_compute_ns", "idle_ns",
//   "idle": [{"kind", "ns", "gaps", "t0", "t1"}], "overlap": {"comm_ns", "overlap_ns",
//   "exposed_ns", "ratio", "t0", "t1"}, "launches": {"launches", "delay_p50_ns",
//   "delay_p90_ns", "delay_max_ns", "histogram": [{"lo_ns", "hi_ns", "count", "t0", "t1"}]}}],
//  "slowest_rank": N | null, "warnings": [...]}; ranks without device work are left out.
nlohmann::json analyses_view(const analysis::TraceAnalysis& a);

}  // namespace opscope::explorer
