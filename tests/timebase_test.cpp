// The profiler's clock (timebase.h): TSC ticks mapped onto CLOCK_MONOTONIC through anchors,
// checked on hand-made anchors whose answers are known; then a profiled busy-wait of a
// known steady_clock length, through the TSC where the CPU has an invariant one and
// through CLOCK_MONOTONIC with OPSCOPE_PROFILE_NO_TSC=1 (each in a process of its own:
// the choice is made once per process).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>

#include "child_process.h"
#include "opscope/profiler/record_function.h"
#include "opscope/profiler/session.h"
#include "opscope/profiler/timebase.h"

using namespace opscope::prof;
using detail::Anchor;
using detail::Timebase;

namespace {

// Two segments of different rates: 0.5 ns per tick over [1000, 3000), 1 ns per tick over
// [3000, 5000].
Timebase two_segments() {
  Timebase tb;
  tb.add({5000, 3100});
  tb.add({1000, 100});  // out of order: kept sorted by tick
  tb.add({3000, 1100});
  return tb;
}

}  // namespace

TEST(Timebase, AnchorsMapExactly) {
  Timebase tb = two_segments();
  EXPECT_EQ(tb.to_ns(1000), 100);
  EXPECT_EQ(tb.to_ns(3000), 1100);
  EXPECT_EQ(tb.to_ns(5000), 3100);
}

TEST(Timebase, BetweenAnchorsInterpolatesEachSegmentsRate) {
  Timebase tb = two_segments();
  EXPECT_EQ(tb.to_ns(2000), 600);   // 0.5 ns/tick
  EXPECT_EQ(tb.to_ns(4000), 2100);  // 1 ns/tick
  EXPECT_EQ(tb.to_ns(1001), 101);   // 100.5 rounds to nearest (away from zero)
  EXPECT_EQ(tb.to_ns(2999), 1100);  // 1099.5
  // Out of time order (the lookup keeps the last segment as a hint): same answers.
  EXPECT_EQ(tb.to_ns(4500), 2600);
  EXPECT_EQ(tb.to_ns(1500), 350);
  EXPECT_EQ(tb.to_ns(4500), 2600);
}

TEST(Timebase, OutsideTheAnchorsExtendsTheNearestSegment) {
  Timebase tb = two_segments();
  EXPECT_EQ(tb.to_ns(0), -400);     // the first segment's 0.5 ns/tick, backwards
  EXPECT_EQ(tb.to_ns(7000), 5100);  // the last segment's 1 ns/tick
}

TEST(Timebase, ARepeatedTickKeepsTheFirstAnchor) {
  Timebase tb = two_segments();
  tb.add({3000, 99999});
  EXPECT_EQ(tb.to_ns(3000), 1100);
  EXPECT_EQ(tb.to_ns(4000), 2100);
}

TEST(Timebase, OneAnchorUsesTheNominalRateNoneIsTheIdentity) {
  Timebase none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.to_ns(12345), 12345);
  Timebase one;
  one.add({3000, 50});
  EXPECT_FALSE(one.empty());
  EXPECT_EQ(one.to_ns(3000), 50);
  EXPECT_EQ(one.to_ns(9000), 50 + 2000);  // 3 ticks per ns
}

TEST(Timebase, AnAnchorReadsBothClocksTogether) {
  Anchor a = detail::take_anchor();
  Anchor b = detail::take_anchor();
  EXPECT_GT(a.tsc, 0);
  EXPECT_LE(a.tsc, b.tsc);
  EXPECT_LE(a.ns, b.ns);
  EXPECT_GT(a.ns, 0);
}

namespace {

// Profiles a range around a busy-wait of 20 ms of steady_clock, read inside the range
// (inner) and outside it (outer); prints what the check needs.
OPSCOPE_CHILD_ENTRY(clock_busy_wait) {
  using clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC, as the profile's times
  auto ns = [](clock::time_point t) { return int64_t(t.time_since_epoch() / std::chrono::nanoseconds(1)); };
  ProfilerConfig cfg;
  cfg.layers = kFramework;
  Profiler p(cfg);
  p.start();
  clock::time_point outer0 = clock::now(), inner0, inner1;
  {
    OPSCOPE_RECORD_FUNCTION("busy_wait");
    inner0 = clock::now();
    while (clock::now() - inner0 < std::chrono::milliseconds(20)) {
    }
    inner1 = clock::now();
  }
  clock::time_point outer1 = clock::now();
  p.stop();
  const Trace& t = p.trace();
  for (const TraceEvent& e : t.events)
    if (e.kind == EventKind::range && e.name == "busy_wait") {
      std::printf("result: %d %lld %lld %lld %lld %lld %lld\n", detail::use_tsc() ? 1 : 0,
                  (long long)ns(outer0), (long long)ns(inner0), (long long)ns(inner1), (long long)ns(outer1),
                  (long long)(t.base_time_ns + e.t0), (long long)(t.base_time_ns + e.t1));
      return 0;
    }
  std::printf("no busy_wait range in the profile\n");
  return 1;
}

struct BusyWait {
  int tsc = -1;
  int64_t outer0 = 0, inner0 = 0, inner1 = 0, outer1 = 0, t0 = 0, t1 = 0;
};

BusyWait busy_wait_in_child(const std::vector<std::string>& env, std::string* log) {
  opscope::testutil::ChildResult r = opscope::testutil::run_child("clock_busy_wait", env);
  *log = r.log;
  BusyWait b;
  size_t at = r.log.rfind("result: ");
  if (r.status != 0 || at == std::string::npos) return b;
  std::istringstream in(r.log.substr(at + 8));
  in >> b.tsc >> b.outer0 >> b.inner0 >> b.inner1 >> b.outer1 >> b.t0 >> b.t1;
  return b;
}

// The range holds the inner readings and lies within the outer ones, to 1% of the wait:
// a clock mapped at a wrong rate or offset lands outside. (A preemption between two
// readings widens the outer pair; it never moves the profile's times out of it.)
void expect_within_one_percent(const BusyWait& b, const std::string& log) {
  ASSERT_GT(b.inner1 - b.inner0, 0) << log;
  const int64_t slack = (b.inner1 - b.inner0) / 100;
  EXPECT_GE(b.t0, b.outer0 - slack) << log;
  EXPECT_LE(b.t0, b.inner0 + slack) << log;
  EXPECT_GE(b.t1, b.inner1 - slack) << log;
  EXPECT_LE(b.t1, b.outer1 + slack) << log;
  EXPECT_GE(b.t1 - b.t0, (b.inner1 - b.inner0) * 99 / 100) << log;
  EXPECT_LE(b.t1 - b.t0, (b.outer1 - b.outer0) * 101 / 100) << log;
}

}  // namespace

TEST(ProfilerClock, ByDefaultABusyWaitIsProfiledToWithin1PercentOfItsLength) {
  std::string log;
  BusyWait b = busy_wait_in_child({"OPSCOPE_PROFILE_NO_TSC"}, &log);
  ASSERT_NE(b.tsc, -1) << log;
  EXPECT_EQ(b.tsc, detail::tsc_invariant() ? 1 : 0) << "the TSC is used exactly when it is invariant";
  expect_within_one_percent(b, log);
}

TEST(ProfilerClock, WithNoTscABusyWaitIsProfiledToWithin1PercentOfItsLength) {
  std::string log;
  BusyWait b = busy_wait_in_child({"OPSCOPE_PROFILE_NO_TSC=1"}, &log);
  ASSERT_NE(b.tsc, -1) << log;
  EXPECT_EQ(b.tsc, 0) << "OPSCOPE_PROFILE_NO_TSC=1 still read the TSC";
  expect_within_one_percent(b, log);
}
