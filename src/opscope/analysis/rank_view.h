// One rank's part of a finished trace, in the compact form every trace analysis reads:
// its device work (each kernel, memcpy or memset as one span, with its kind and its
// queue), the runtime calls that launched it, the host's waits, its ProfilerSteps and
// its host threads' ops. A profile of several ranks (an import of per-rank traces) has
// one view per rank; a single process is rank -1.
//
// Device work is a launch's span on the device: max(t1) − min(t0) over its events, so
// the CPU device's slices of one launch on several cores count once (as key_averages
// counts them). Its queue is the GPU stream it ran on, or on the CPU device the stream
// its launch was queued on.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "opscope/analysis/kernel_kind.h"
#include "opscope/analysis/trace.h"

namespace opscope::analysis {

struct DeviceWork {
  int64_t t0 = 0, t1 = 0;
  int32_t queue = 0;    // RankView::queues
  int32_t name = 0;     // RankView::names
  int32_t launch = -1;  // RankView::launches; -1: its launch fell outside the window
  KernelKind kind = KernelKind::comp;
  uint32_t event = 0;   // its first kernel event in the trace
};

// The runtime call that queued device work (cudaLaunchKernel, cudaMemcpyAsync, opscope's
// runtime::launch).
struct LaunchCall {
  int64_t t0 = 0, t1 = 0;
  int32_t track = 0;
  uint32_t event = 0;
};

// A host thread's span of time: a wait on the device (sync) or a framework op.
struct HostSpan {
  int64_t t0 = 0, t1 = 0;
  int32_t track = 0;
  uint32_t event = 0;
};

struct Step {
  std::string name;  // "ProfilerStep#3"
  int64_t t0 = 0, t1 = 0;
  int32_t track = 0;
  uint32_t event = 0;
};

struct Queue {
  std::string name;  // "cuda:0 stream 7", "rank 1 cuda:0 stream 7", "cpu:0 stream 0"
  int32_t device = -1, stream = -1;
};

struct RankView {
  int64_t rank = -1;
  std::vector<std::string> names;        // distinct work names
  std::vector<Queue> queues;
  std::vector<std::string> track_names;  // the trace's, by track index
  std::vector<DeviceWork> work;          // sorted by t0
  std::vector<LaunchCall> launches;
  std::vector<HostSpan> syncs;           // host waits on the device, sorted by t0
  std::vector<HostSpan> host_ops;        // framework ops on host threads, sorted by t0
  std::vector<Step> steps;               // ProfilerStep#N ranges, sorted by t0
  bool gpu = false;                      // some work ran on a GPU stream

  bool has_device() const { return !work.empty(); }
  // First device event's start to the last one's end (0, 0 without device work).
  int64_t t0() const;
  int64_t t1() const;
};

// The ranks of a trace's tracks, ascending; {-1} when it is one process.
std::vector<int64_t> trace_ranks(const Trace& trace);

// The view of rank `rank` (-1: every track of a one-process trace).
RankView rank_view(const Trace& trace, int64_t rank);

// One view per ProfilerStep: the work each step issued (work whose launch call, or the
// work itself when its launch is not in the window, started inside the step's range),
// with that work's launches, the host's waits and ops inside the step, and the step.
std::vector<RankView> step_views(const RankView& view);

// Whether a range name is a torch.profiler step ("ProfilerStep#12").
bool is_step_name(std::string_view name);

}  // namespace opscope::analysis
