// The one clock of opscope: CLOCK_MONOTONIC in nanoseconds. Host threads and the CPU
// device's cores read the same clock, so host and device timestamps need no alignment.
#pragma once
#include <cstdint>
#include <ctime>

namespace opscope {

inline int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace opscope
