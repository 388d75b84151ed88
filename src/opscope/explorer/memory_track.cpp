#include "opscope/explorer/memory_track.h"

#include <algorithm>
#include <map>

namespace opscope::explorer {

std::vector<MemoryTrack> memory_tracks(const prof::Trace& trace) {
  std::map<int32_t, MemoryTrack> by_device;
  const auto& ev = trace.events;
  for (uint32_t i = 0; i < ev.size(); ++i) {  // events are in time order
    if (ev[i].kind != prof::EventKind::alloc && ev[i].kind != prof::EventKind::free) continue;
    MemoryTrack& m = by_device[ev[i].device];
    m.t.push_back(ev[i].t0);
    m.bytes.push_back(ev[i].value);
    m.event.push_back(i);
  }
  std::vector<MemoryTrack> out;
  for (analysis::DeviceMemory& s : analysis::memory_summary(trace)) {
    MemoryTrack& m = by_device[s.device];
    m.summary = std::move(s);
    out.push_back(std::move(m));
  }
  return out;
}

MemoryWindow memory_window(const MemoryTrack& m, int64_t t0, int64_t t1, int max_points) {
  MemoryWindow w;
  const size_t first = size_t(std::upper_bound(m.t.begin(), m.t.end(), t0) - m.t.begin());
  const size_t last = size_t(std::upper_bound(m.t.begin(), m.t.end(), t1) - m.t.begin());
  int64_t cur = first > 0 ? m.bytes[first - 1] : m.summary.start_bytes;  // in effect at t0
  w.events = int64_t(last - first);
  w.max_bytes = cur;
  w.max_t = t0;
  for (size_t i = first; i < last; ++i)
    if (m.bytes[i] > w.max_bytes) w.max_bytes = m.bytes[i], w.max_t = m.t[i];

  max_points = std::max(max_points, 3);
  if (w.events + 2 <= max_points) {
    w.t.push_back(t0), w.bytes.push_back(cur);
    for (size_t i = first; i < last; ++i) w.t.push_back(m.t[i]), w.bytes.push_back(cur = m.bytes[i]);
  } else {
    // Buckets of equal time; each point is the most allocated at any time in its bucket
    // (the value carried in counts, so a plateau stays where it is).
    w.downsampled = true;
    const int buckets = max_points - 1;
    const double width = double(t1 - t0) / buckets;
    size_t i = first;
    for (int b = 0; b < buckets; ++b) {
      int64_t start = t0 + int64_t(double(b) * width);
      int64_t end = b + 1 == buckets ? t1 + 1 : t0 + int64_t(double(b + 1) * width);
      int64_t peak = cur;
      for (; i < last && m.t[i] < end; ++i) peak = std::max(peak, m.bytes[i]), cur = m.bytes[i];
      w.t.push_back(start), w.bytes.push_back(peak);
    }
  }
  w.t.push_back(t1), w.bytes.push_back(cur);
  return w;
}

}  // namespace opscope::explorer
