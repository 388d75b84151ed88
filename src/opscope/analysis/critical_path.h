// A lightweight critical path of one iteration (a ProfilerStep; HTA's critical path
// analysis, without its full event graph): the chain of host and device activity the
// iteration's end waited on, walked backwards from that end.
//
// The iteration ends when both its host range has ended and the last work it launched
// has finished. From there, at each point:
//   device work W    runs on the path. Before it, W waited on whichever came last:
//                    its launch call's return (→ "launch delay", then the host that
//                    made the call), or the previous work on its stream. That previous
//                    work, when the gap is under the kernel-wait threshold, is a
//                    "kernel gap" (the cost of starting W). A longer gap is a "wait" on
//                    the latest work of another stream that ended inside it (an event
//                    dependency), else on the stream's previous work.
//   the host at t    ran CPU code ("cpu") back to the latest sync it was in. The sync
//                    waited for the device work that ended last inside it ("sync" is its
//                    return latency); with none, the sync counts as CPU time too.
// The walk stops at the iteration's start. The median-length ProfilerStep is the
// iteration shown (a representative one, not an outlier); a trace with no steps gets
// the path of its whole span, marked as not an iteration.
//
// Each category's time along the path adds up to the iteration's length; the largest
// names what bounds it (HTA's bound types).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "opscope/analysis/idle_time.h"
#include "opscope/analysis/rank_view.h"

namespace opscope::analysis {

enum class PathKind : uint8_t { cpu, launch_delay, compute, communication, memory, kernel_gap, sync, wait };
constexpr int kPathKinds = 8;
const char* path_kind_name(PathKind k);  // "cpu", "launch_delay", "compute", ...

struct PathSegment {
  PathKind kind = PathKind::cpu;
  int64_t t0 = 0, t1 = 0;
  std::string label;  // the kernel's name, the host thread's, the stream's
  uint32_t event = 0;
  bool has_event = false;
};

struct CriticalPath {
  bool iteration = false;  // the path of one ProfilerStep (else the whole span)
  std::string step;        // "ProfilerStep#7"
  int64_t steps = 0;       // ProfilerSteps in the rank
  int64_t t0 = 0, t1 = 0, length_ns = 0;
  std::array<int64_t, kPathKinds> ns{};
  std::vector<PathSegment> segments;  // in time order, neighbours of one kind and label merged
  int64_t of(PathKind k) const { return ns[size_t(k)]; }
  // "gpu_compute_bound", "cpu_bound", "gpu_communication_bound", "launch_overhead",
  // "kernel_overhead" or "waiting": what takes the largest share.
  std::string bound() const;
};

CriticalPath critical_path(const RankView& view, int64_t kernel_wait_ns = kDefaultKernelWaitNs);

}  // namespace opscope::analysis
