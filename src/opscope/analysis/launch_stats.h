// Kernel launch statistics (HTA's get_cuda_kernel_launch_stats), per rank, over the
// device work whose launch call is in the window:
//   launch delay  = the work's start − the end of the call that launched it, at least 0:
//                   how long it sat queued behind other work;
//   cpu / gpu     = the call's duration / the work's duration;
//   shorter than its launch: gpu < cpu, a kernel that costs the host more to launch than
//                   the device to run (fuse it, or replay it in a CUDA graph);
//   outliers      = calls longer than 50 µs (runtime_cutoff) and delays over 100 µs
//                   (launch_delay_cutoff), HTA's defaults.
// The delays' histogram has fixed bins (0, 1, 2, 5, 10, 20, 50 µs, ... 1 ms and over),
// each with its longest delay as an example.
#pragma once
#include <cstdint>
#include <vector>

#include "opscope/analysis/rank_view.h"

namespace opscope::analysis {

constexpr int64_t kRuntimeCutoffNs = 50'000;
constexpr int64_t kLaunchDelayCutoffNs = 100'000;

struct DelayBin {
  int64_t lo_ns = 0, hi_ns = 0;  // hi_ns = -1: no upper bound
  int64_t count = 0;
  int64_t example_t0 = 0, example_t1 = 0;  // its longest delay: the call's start to the work's start
  int64_t example_delay_ns = -1;
};

struct LaunchStats {
  int64_t launches = 0;  // device work with its launch call in the window
  int64_t delay_p50_ns = 0, delay_p90_ns = 0, delay_p99_ns = 0, delay_max_ns = 0, delay_total_ns = 0;
  int64_t cpu_p50_ns = 0, gpu_p50_ns = 0;
  int64_t shorter_than_launch = 0;     // work that ran shorter than its call
  int64_t shorter_gpu_ns = 0, shorter_cpu_ns = 0;  // their device time, their calls' time
  int64_t runtime_outliers = 0, delay_outliers = 0;
  std::vector<DelayBin> histogram;
};

LaunchStats launch_stats(const RankView& view);

}  // namespace opscope::analysis
