// The explorer's index over one Trace: events laid out in lanes (a host thread's framework
// ops by nesting depth, its runtime events, each device core), each lane sorted by t0 with
// no two events overlapping, so a time window is two binary searches away. query() merges
// events shorter than one pixel, which bounds a lane's answer by the pixel budget, not by
// the profile's size.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "opscope/profiler/trace.h"

namespace opscope::explorer {

enum class Layer : uint8_t { framework, runtime, device };
Layer layer_of(prof::EventKind kind);
const char* layer_name(Layer layer);

struct Lane {
  std::string name;   // "main thread", "main thread · runtime", "cpu:0 core 1"
  std::string group;  // lanes of one group are drawn together (depth 0, 1, ...)
  Layer layer = Layer::framework;
  int32_t track = 0;  // index into Trace::tracks
  int32_t depth = 0;
  std::vector<int64_t> t0, t1;    // sorted; t1[i] <= t0[i + 1]
  std::vector<uint32_t> events;   // index into Trace::events
};

// One thing to draw. count == 1: the event itself; count > 1: a run of events each shorter
// than a pixel, drawn as one block; event is then the longest of the run (its name labels it).
struct Drawable {
  int64_t t0 = 0, t1 = 0;
  uint32_t event = 0;
  uint32_t count = 1;
};

class TimelineIndex {
 public:
  explicit TimelineIndex(const prof::Trace& trace);

  const std::vector<Lane>& lanes() const { return lanes_; }
  int lane_of(uint32_t event) const { return lane_of_[event]; }
  int64_t begin() const { return begin_; }
  int64_t end() const { return end_; }

  // Distinct event names, and each event's index into them (the timeline sends ids).
  const std::vector<std::string>& names() const { return names_; }
  uint32_t name_id(uint32_t event) const { return name_of_[event]; }

  // Everything in `lane` that overlaps [t0, t1], with events shorter than (t1 - t0) / px
  // merged with neighbours closer than a pixel. At most 2 * px + 4 drawables.
  std::vector<Drawable> query(int lane, int64_t t0, int64_t t1, int px) const;

  // Indices (into lane.events) of the events overlapping [t0, t1]: [first, last).
  std::pair<size_t, size_t> window(int lane, int64_t t0, int64_t t1) const;

 private:
  std::vector<Lane> lanes_;
  std::vector<int32_t> lane_of_;
  std::vector<std::string> names_;
  std::vector<uint32_t> name_of_;
  int64_t begin_ = 0, end_ = 0;
};

}  // namespace opscope::explorer
