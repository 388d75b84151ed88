// Each device's allocated bytes over time (the caching allocator's alloc/free events) as
// the explorer draws them: a step series per device, and a window of it downsampled to a
// point budget by keeping each bucket's maximum, so a peak never disappears when zoomed out.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "opscope/analysis/memory.h"
#include "opscope/profiler/trace.h"

namespace opscope::explorer {

struct MemoryTrack {
  analysis::DeviceMemory summary;  // peak, when, in which op; the device's name
  std::vector<int64_t> t;      // event times, ascending
  std::vector<int64_t> bytes;  // allocated after each event
  std::vector<uint32_t> event; // index into Trace::events
};

// One per device with alloc/free events, by device index.
std::vector<MemoryTrack> memory_tracks(const prof::Trace& trace);

struct MemoryWindow {
  // A step series: bytes[i] holds from t[i] until t[i + 1]. The first point is at t0
  // (the value then), the last at t1 (the value at the window's end).
  std::vector<int64_t> t, bytes;
  int64_t events = 0;          // alloc/free events inside (t0, t1]
  bool downsampled = false;    // each point is the maximum over its bucket
  int64_t max_bytes = 0;       // exact maximum over the window
  int64_t max_t = 0;           // when it was first reached (t0 when carried in)
};

// The window [t0, t1] (t0 < t1) of `track` in at most max_points (>= 3) points.
MemoryWindow memory_window(const MemoryTrack& track, int64_t t0, int64_t t1, int max_points);

}  // namespace opscope::explorer
