// Idle time breakdown (HTA's get_idle_time_breakdown): why one rank's device sat idle.
//
// The device is idle in each gap of ∪ device work (the gaps add up to the temporal
// breakdown's idle). The work that starts at a gap's end says why:
//   host wait    its launch call returned after the gap began: the device had nothing
//                queued and waited for the host to launch (CPU-side overhead);
//   kernel wait  else, the gap is shorter than the kernel-wait threshold (a flag;
//                10 µs by default): the work was queued and the gap is the cost of
//                starting the next kernel;
//   other        else: queued work waited on something else (an event of another
//                stream, a collective's peer), or its launch is outside the window.
// Per stream (HTA's per-stream view) the same rules classify the gaps between that
// stream's own work.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "opscope/analysis/rank_view.h"

namespace opscope::analysis {

enum class IdleKind : uint8_t { host_wait, kernel_wait, other };
constexpr int kIdleKinds = 3;
const char* idle_kind_name(IdleKind k);  // "host_wait", "kernel_wait", "other"

constexpr int64_t kDefaultKernelWaitNs = 10'000;

struct IdleSplit {
  std::array<int64_t, kIdleKinds> ns{};     // time per kind
  std::array<int64_t, kIdleKinds> gaps{};   // gaps per kind
  std::array<int64_t, kIdleKinds> longest_t0{}, longest_t1{};  // each kind's longest gap
  int64_t total_ns() const { return ns[0] + ns[1] + ns[2]; }
  int64_t of(IdleKind k) const { return ns[size_t(k)]; }
};

struct StreamIdle {
  int32_t queue = 0;  // RankView::queues
  IdleSplit split;
};

struct IdleBreakdown {
  int64_t kernel_wait_threshold_ns = kDefaultKernelWaitNs;
  IdleSplit device;                 // gaps in ∪ device work
  std::vector<StreamIdle> streams;  // each stream's gaps
};

IdleBreakdown idle_time_breakdown(const RankView& view, int64_t kernel_wait_ns = kDefaultKernelWaitNs);

}  // namespace opscope::analysis
