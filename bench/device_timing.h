// Timing for the benchmarks that run ops on the CPU device: the best of n runs of a function
// followed by a device synchronize (so queued kernels are counted). Wall seconds and
// alternated timing: timing.h.
#pragma once
#include <algorithm>

#include "opscope/runtime/device.h"
#include "timing.h"

namespace opscope::bench {

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
