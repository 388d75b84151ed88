// Host time, per rank: how busy its host threads were running framework ops. It needs
// no device events, so a CPU-only trace gets it too.
//
//   span   = the first op's start to the last op's end, over the rank's host threads
//   busy   = per thread, |∪ its ops| (nested ops count once)
//   idle   = span − the busiest thread's busy time: where even the main thread ran no op
//            (Python between ops, the data loader, a sleep)
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "opscope/analysis/rank_view.h"

namespace opscope::analysis {

struct ThreadTime {
  int32_t track = 0;
  std::string name;
  int64_t busy_ns = 0, ops = 0;
};

struct HostTime {
  int64_t t0 = 0, t1 = 0, span_ns = 0;
  int64_t busy_ns = 0, idle_ns = 0;  // of the busiest thread
  int64_t launch_calls = 0, launch_call_ns = 0;  // runtime calls that queued device work
  std::vector<ThreadTime> threads;   // busiest first
};

HostTime host_time(const RankView& view);

}  // namespace opscope::analysis
