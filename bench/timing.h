// Wall seconds, and two functions timed alternately on the calling thread: for benchmarks
// with or without the opscope library (sgemm_choice links only the BLAS libraries).
#pragma once
#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

namespace opscope::bench {

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Median seconds a call of a and of b over 9 alternated samples of `reps` calls each, on
// this thread (so that drift in the machine's load hits both sides).
template <class A, class B>
std::pair<double, double> alternated(A&& a, B&& b, int reps) {
  a(), b();
  std::vector<double> ta, tb;
  for (int i = 0; i < 9; ++i) {
    double t0 = now_s();
    for (int r = 0; r < reps; ++r) a();
    double t1 = now_s();
    for (int r = 0; r < reps; ++r) b();
    double t2 = now_s();
    ta.push_back((t1 - t0) / reps), tb.push_back((t2 - t1) / reps);
  }
  std::sort(ta.begin(), ta.end()), std::sort(tb.begin(), tb.end());
  return {ta[4], tb[4]};
}

}  // namespace opscope::bench
