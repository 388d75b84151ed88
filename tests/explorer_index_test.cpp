// The explorer's indexes on hand-made traces: lookups by id when ids do not grow with
// time (the sorted-links path), duplicates, and lanes whose times match their events.
#include <gtest/gtest.h>

#include <vector>

#include "opscope/explorer/correlation.h"
#include "opscope/explorer/synthetic.h"
#include "opscope/explorer/timeline_index.h"

namespace opscope::explorer {
namespace {

using prof::EventKind;

std::vector<uint32_t> list(std::span<const uint32_t> s) { return {s.begin(), s.end()}; }

prof::TraceEvent ev(EventKind kind, int64_t t0, uint64_t id, uint64_t parent) {
  prof::TraceEvent e;
  e.kind = kind;
  e.t0 = t0;
  e.t1 = t0 + 10;
  e.id = id;
  e.parent = parent;
  e.track = kind == EventKind::kernel ? 1 : 0;
  return e;
}

TEST(ExplorerCorrelationIndex, LooksUpIdsThatDoNotGrowWithTime) {
  prof::Trace t;
  t.tracks.push_back({prof::Track::Kind::host_thread, "main thread", 1, -1, -1});
  t.tracks.push_back({prof::Track::Kind::device_core, "cpu:0 core 0", 0, 0, 0});
  auto& e = t.events;
  e.push_back(ev(EventKind::op, 0, 9, 0));         // 0: op 9
  e.push_back(ev(EventKind::op, 1, 3, 9));         // 1: op 3 inside 9
  e.push_back(ev(EventKind::launch, 2, 50, 3));    // 2: launch 50 of op 3
  e.push_back(ev(EventKind::launch, 3, 20, 9));    // 3: launch 20 of op 9
  e.push_back(ev(EventKind::kernel, 4, 50, 3));    // 4
  e.push_back(ev(EventKind::kernel, 5, 20, 9));    // 5
  e.push_back(ev(EventKind::kernel, 6, 50, 3));    // 6
  e.push_back(ev(EventKind::op, 7, 3, 0));         // 7: a second op 3 (damaged ids)
  e.push_back(ev(EventKind::launch, 8, 40, 3));    // 8: launch 40 of op 3
  e.push_back(ev(EventKind::kernel, 9, 20, 9));    // 9
  CorrelationIndex c(t);
  EXPECT_EQ(c.op_by_id(3), 1);  // the first of the two
  EXPECT_EQ(c.op_by_id(9), 0);
  EXPECT_EQ(c.op_by_id(4), -1);
  EXPECT_EQ(c.launch_by_id(20), 3);
  EXPECT_EQ(c.launch_by_id(21), -1);
  EXPECT_EQ(list(c.launches_of_op(3)), (std::vector<uint32_t>{2, 8}));
  EXPECT_EQ(list(c.launches_of_op(9)), (std::vector<uint32_t>{3}));
  EXPECT_EQ(list(c.kernels_of_launch(50)), (std::vector<uint32_t>{4, 6}));
  EXPECT_EQ(list(c.kernels_of_launch(20)), (std::vector<uint32_t>{5, 9}));
  EXPECT_TRUE(c.kernels_of_launch(40).empty());
  EXPECT_EQ(list(c.child_ops(9)), (std::vector<uint32_t>{1}));
  EXPECT_EQ(c.launch_device_ns(3), 9 + 10 - 5);  // kernels 5 and 9
  Chain ch = c.chain(0);  // op 9: its launch and those of op 3 nested in it
  EXPECT_EQ(ch.launches, (std::vector<uint32_t>{2, 3, 8}));
  EXPECT_EQ(ch.kernels, (std::vector<uint32_t>{4, 5, 6, 9}));
}

TEST(ExplorerTimelineIndex, LaneTimesAndLanesOfEventsAgree) {
  SyntheticSpec spec;
  spec.events = 30000;
  spec.threads = 2;
  prof::Trace t = synthetic_trace(spec);
  TimelineIndex tl(t);
  size_t placed = 0;
  for (size_t li = 0; li < tl.lanes().size(); ++li) {
    const Lane& lane = tl.lanes()[li];
    ASSERT_EQ(lane.t0.size(), lane.events.size());
    ASSERT_EQ(lane.t1.size(), lane.events.size());
    for (size_t k = 0; k < lane.events.size(); ++k) {
      const auto& e = t.events[lane.events[k]];
      EXPECT_EQ(lane.t0[k], e.t0);
      EXPECT_EQ(lane.t1[k], std::max(e.t0, e.t1));
      EXPECT_EQ(tl.lane_of(lane.events[k]), int(li));
      EXPECT_EQ(lane.track, e.track);
    }
    placed += lane.events.size();
    if (li > 0) {  // ordered by group (framework, runtime, device; track), then depth
      const Lane& prev = tl.lanes()[li - 1];
      EXPECT_TRUE(std::tuple(int(prev.layer), prev.track, prev.depth) <
                  std::tuple(int(lane.layer), lane.track, lane.depth));
    }
  }
  EXPECT_EQ(placed, t.events.size());
}

}  // namespace
}  // namespace opscope::explorer
