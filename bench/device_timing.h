// Timing for the benchmarks that run ops on the CPU device: wall seconds, and the best of
// n runs of a function followed by a device synchronize (so queued kernels are counted).
#pragma once
#include <algorithm>
#include <chrono>

#include "opscope/runtime/device.h"

namespace opscope::bench {

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <class F>
double best_of(int n, F&& fn) {
  double best = 1e30;
  for (int i = 0; i < n; ++i) {
    double t0 = now_s();
    fn();
    cpu().synchronize();
    best = std::min(best, now_s() - t0);
  }
  return best;
}

}  // namespace opscope::bench
