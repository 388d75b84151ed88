// The one clock. Every timestamp in a profile is CLOCK_MONOTONIC nanoseconds
// (core/clock.h): the runtime and the CPU device's cores read it directly, so their
// events need no alignment. Framework op scopes sit on the hot path, where
// clock_gettime costs ~28 ns under kvm-clock; they read the TSC instead (~12 ns) and
// are mapped onto CLOCK_MONOTONIC at collection through anchors — (TSC, monotonic)
// pairs read back to back at start, at every step() and at stop — by piecewise-linear
// interpolation. The TSC is used only when the CPU reports it invariant (constant rate,
// synchronized across cores, not stopped in idle states), so the mapping is monotonic
// and aligned with the device's timestamps to within the anchors' read gap (tens of
// ns); otherwise hooks read CLOCK_MONOTONIC directly. A CUDA device would need one more
// step: its own clock, anchored to CLOCK_MONOTONIC with an offset measured at start.
#pragma once
#include <x86intrin.h>

#include <cstdint>
#include <vector>

#include "opscope/core/clock.h"

namespace opscope::prof::detail {

bool tsc_invariant();
// Whether the hooks read the TSC: it is invariant and OPSCOPE_PROFILE_NO_TSC is not 1
// (decided once per process, at the first recording thread).
bool use_tsc();

// A host timestamp for the hot path: TSC ticks when `tsc` (use_tsc()), else ns.
inline int64_t host_ticks(bool tsc) { return tsc ? int64_t(__rdtsc()) : now_ns(); }

struct Anchor {
  int64_t tsc = 0;
  int64_t ns = 0;
};
// A (TSC, CLOCK_MONOTONIC) pair read as close together as a few tries allow.
Anchor take_anchor();

// Maps TSC ticks to CLOCK_MONOTONIC ns through a session's anchors.
class Timebase {
 public:
  void add(Anchor a);
  bool empty() const { return anchors_.empty(); }
  // Not thread-safe (keeps the last segment used: records come mostly in time order).
  int64_t to_ns(int64_t tsc) const;

 private:
  std::vector<Anchor> anchors_;  // sorted by tsc
  std::vector<double> slope_;    // ns per tick of segment [i, i+1]
  mutable size_t hint_ = 0;
};

}  // namespace opscope::prof::detail
