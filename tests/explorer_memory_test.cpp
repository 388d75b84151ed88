// The explorer's memory view (/api/profiles/{id}/memory): each device's allocated bytes
// over a window as a step series, the window's bounds, downsampling that keeps every
// peak, the profile's peak with its op, the operator table's memory fields, and errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "opscope/explorer/api.h"
#include "opscope/explorer/memory_track.h"
#include "opscope/explorer/synthetic.h"
#include "trace_util.h"

using nlohmann::json;
using namespace opscope::explorer;
using namespace opscope::prof;
using opscope::test::mem;
using opscope::test::scope;

namespace {

// op "step" (1) [0, 1000] > op "A" (2) [100, 400]; device 0 allocated after each event:
// 1200 @50 (1000 were allocated before), 6200 @160 (in A), 6700 @300 (in A: the peak),
// 1700 @350, 1200 @600; device 1: 64 @650.
Trace small_trace() {
  Trace t;
  t.devices = {{0, "cpu:0", "", 2}, {1, "cpu:1", "", 2}};
  t.tracks.resize(1);
  t.tracks[0].name = "main thread";
  t.events = {scope(EventKind::op, "step", 1, 0, 0, 1000),
              mem(EventKind::alloc, 50, 1, 200, 1200),
              scope(EventKind::op, "A", 2, 1, 100, 400),
              mem(EventKind::alloc, 160, 2, 5000, 6200),
              mem(EventKind::alloc, 300, 2, 500, 6700),
              mem(EventKind::free, 350, 2, 5000, 1700),
              mem(EventKind::free, 600, 1, 500, 1200),
              mem(EventKind::alloc, 650, 1, 64, 64, 1)};
  t.dropped_per_track = {0};
  return t;
}

ExplorerApi api_of(Trace t) {
  return ExplorerApi({std::make_shared<Profile>("small", "test", std::move(t))});
}

json memory(const ExplorerApi& api, const Params& params, int status = 200, const std::string& id = "0") {
  ApiResponse r = api.get("/api/profiles/" + id + "/memory", params);
  EXPECT_EQ(r.status, status) << r.body.dump();
  return r.body;
}

std::vector<int64_t> ints(const json& j) { return j.get<std::vector<int64_t>>(); }

}  // namespace

TEST(ExplorerMemory, WholeProfileSeriesAndPeak) {
  ExplorerApi api = api_of(small_trace());
  json m = memory(api, {});
  EXPECT_EQ(m["t0"], 0);
  EXPECT_EQ(m["t1"], 1000);
  ASSERT_EQ(m["devices"].size(), 2u);
  const json& d = m["devices"][0];
  EXPECT_EQ(d["name"], "cpu:0");
  EXPECT_EQ(d["downsampled"], false);
  EXPECT_EQ(d["events"], 5);
  // The value before the first event (1000 allocated before the profile), each event,
  // and the value at the window's end.
  EXPECT_EQ(ints(d["t"]), (std::vector<int64_t>{0, 50, 160, 300, 350, 600, 1000}));
  EXPECT_EQ(ints(d["bytes"]), (std::vector<int64_t>{1000, 1200, 6200, 6700, 1700, 1200, 1200}));
  EXPECT_EQ(d["peak"]["bytes"], 6700);
  EXPECT_EQ(d["peak"]["t"], 300);
  EXPECT_EQ(d["peak"]["op"], "step > A");
  EXPECT_EQ(d["peak"]["start_bytes"], 1000);
  EXPECT_EQ(d["window_max"]["bytes"], 6700);
  EXPECT_EQ(m["devices"][1]["name"], "cpu:1");
  EXPECT_EQ(m["devices"][1]["peak"]["op"], "step");
}

TEST(ExplorerMemory, WindowBoundsCarryTheValueIn) {
  ExplorerApi api = api_of(small_trace());
  json d = memory(api, {{"t0", "200"}, {"t1", "700"}})["devices"][0];
  EXPECT_EQ(ints(d["t"]), (std::vector<int64_t>{200, 300, 350, 600, 700}));
  EXPECT_EQ(ints(d["bytes"]), (std::vector<int64_t>{6200, 6700, 1700, 1200, 1200}));
  EXPECT_EQ(d["events"], 3);
  // No event inside: the value in effect, flat across the window.
  d = memory(api, {{"t0", "400"}, {"t1", "500"}})["devices"][0];
  EXPECT_EQ(ints(d["t"]), (std::vector<int64_t>{400, 500}));
  EXPECT_EQ(ints(d["bytes"]), (std::vector<int64_t>{1700, 1700}));
  EXPECT_EQ(d["window_max"]["bytes"], 1700);
  EXPECT_EQ(d["window_max"]["t"], 400);
  // An event exactly at t0 is already in effect there.
  d = memory(api, {{"t0", "300"}, {"t1", "320"}})["devices"][0];
  EXPECT_EQ(ints(d["bytes"]), (std::vector<int64_t>{6700, 6700}));
  // Before every event: the bytes allocated before the profile.
  d = memory(api, {{"t0", "-100"}, {"t1", "10"}})["devices"][0];
  EXPECT_EQ(ints(d["bytes"]), (std::vector<int64_t>{1000, 1000}));
  // The whole-profile peak stays, whatever the window.
  EXPECT_EQ(d["peak"]["bytes"], 6700);
}

TEST(ExplorerMemory, DownsamplingKeepsThePeakOfEveryWindow) {
  SyntheticSpec spec;
  spec.events = 60000;
  spec.threads = 2;
  ExplorerApi api({std::make_shared<Profile>("big", "synthetic", synthetic_trace(spec))});
  const Trace& t = api.profiles()[0]->trace();
  // Brute force: the most allocated at any time in [a, b] (events inside, and the value
  // carried in from before a).
  auto most = [&](int64_t a, int64_t b) {
    int64_t before = 0, best = -1;
    for (const auto& e : t.events) {
      if (e.kind != EventKind::alloc && e.kind != EventKind::free) continue;
      if (e.t0 <= a) before = e.value;
      else if (e.t0 <= b) best = std::max(best, e.value);
    }
    return std::max(best, before);
  };
  const auto& tl = api.profiles()[0]->timeline();
  int64_t span = tl.end() - tl.begin();
  for (auto [a, b] : std::vector<std::pair<int64_t, int64_t>>{
           {tl.begin(), tl.end()}, {tl.begin() + span / 3, tl.begin() + span / 2}, {tl.begin() + span / 7, tl.end()}}) {
    for (int points : {3, 50, 500}) {
      json d = memory(api, {{"t0", std::to_string(a)}, {"t1", std::to_string(b)}, {"points", std::to_string(points)}})
          ["devices"][0];
      auto bytes = ints(d["bytes"]);
      auto ts = ints(d["t"]);
      ASSERT_LE(bytes.size(), size_t(points));
      ASSERT_EQ(bytes.size(), ts.size());
      EXPECT_TRUE(d["downsampled"].get<bool>()) << d["events"];
      EXPECT_EQ(*std::max_element(bytes.begin(), bytes.end()), most(a, b)) << a << ".." << b << " in " << points;
      EXPECT_EQ(d["window_max"]["bytes"], most(a, b));
      EXPECT_TRUE(std::is_sorted(ts.begin(), ts.end()));
      EXPECT_EQ(ts.front(), a);
      EXPECT_EQ(ts.back(), b);
    }
  }
  // The default budget caps the answer at 2000 points.
  json d = memory(api, {})["devices"][0];
  EXPECT_GT(d["events"].get<int64_t>(), 2000);
  EXPECT_EQ(d["t"].size(), 2000u);
  EXPECT_EQ(d["window_max"]["bytes"], d["peak"]["bytes"]);
}

TEST(ExplorerMemory, BadParametersAndProfilesAreNamed) {
  ExplorerApi api = api_of(small_trace());
  auto error = [&](const Params& p, int status, const std::string& id = "0") {
    return memory(api, p, status, id)["error"].get<std::string>();
  };
  std::string e = error({{"t0", "500"}, {"t1", "500"}}, 400);
  EXPECT_NE(e.find("'t1'"), std::string::npos) << e;
  e = error({{"t0", "soon"}}, 400);
  EXPECT_NE(e.find("'t0'"), std::string::npos) << e;
  e = error({{"points", "2"}}, 400);
  EXPECT_NE(e.find("'points'"), std::string::npos) << e;
  e = error({{"points", "5000"}}, 400);
  EXPECT_NE(e.find("'points'"), std::string::npos) << e;
  e = error({}, 404, "7");
  EXPECT_EQ(e, "no profile 7");
  e = error({}, 400, "x");
  EXPECT_NE(e.find("profile must be"), std::string::npos) << e;
}

TEST(ExplorerMemory, NoAllocatorEventsNoDevices) {
  Trace t = small_trace();
  std::erase_if(t.events, [](const TraceEvent& e) { return e.kind == EventKind::alloc || e.kind == EventKind::free; });
  json m = memory(api_of(std::move(t)), {});
  EXPECT_TRUE(m["devices"].empty());
  ApiResponse ops = api_of(small_trace()).get("/api/profiles/0/ops", {});
  ASSERT_EQ(ops.status, 200);
  EXPECT_EQ(ops.body["has_memory"], true);
  for (const json& r : ops.body["rows"])
    if (r["name"] == "A") {
      EXPECT_EQ(r["self_device_memory"], 500);  // 5000 + 500 − 5000
      EXPECT_EQ(r["device_memory"], 500);
      EXPECT_EQ(r["self_device_allocs"], 2);
    }
}

TEST(ExplorerMemory, WindowFunctionWithATinyBudget) {
  MemoryTrack m;
  m.summary.start_bytes = 10;
  m.t = {1, 2, 3, 4, 5, 6};
  m.bytes = {20, 90, 30, 40, 15, 12};
  MemoryWindow w = memory_window(m, 0, 8, 3);
  // Two buckets [0, 4) and [4, 8]: their maxima, then the value at the end.
  EXPECT_TRUE(w.downsampled);
  EXPECT_EQ(w.t, (std::vector<int64_t>{0, 4, 8}));
  EXPECT_EQ(w.bytes, (std::vector<int64_t>{90, 40, 12}));
  EXPECT_EQ(w.max_bytes, 90);
  EXPECT_EQ(w.max_t, 2);
  w = memory_window(m, 0, 8, 8);
  EXPECT_FALSE(w.downsampled);
  EXPECT_EQ(w.bytes, (std::vector<int64_t>{10, 20, 90, 30, 40, 15, 12, 12}));
}

// The summary view names each device's peak and the op it happened in; none without
// allocator events.
TEST(ExplorerMemory, SummaryHasEachDevicesPeak) {
  ApiResponse r = api_of(small_trace()).get("/api/profiles/0/summary", {});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  const json& m = r.body["memory"];
  ASSERT_EQ(m.size(), 2u) << m.dump();
  EXPECT_EQ(m[0]["name"], "cpu:0");
  EXPECT_EQ(m[0]["peak_bytes"], 6700);
  EXPECT_EQ(m[0]["peak_t"], 300);
  EXPECT_EQ(m[0]["peak_op"], "step > A");
  EXPECT_EQ(m[0]["allocs"], 3);  // @50, @160, @300 (the @650 one is device 1)
  EXPECT_EQ(m[1]["peak_bytes"], 64);
  Trace t = small_trace();
  std::erase_if(t.events, [](const TraceEvent& e) { return e.kind == EventKind::alloc || e.kind == EventKind::free; });
  ApiResponse none = api_of(std::move(t)).get("/api/profiles/0/summary", {});
  ASSERT_EQ(none.status, 200);
  EXPECT_TRUE(none.body["memory"].empty());
}
