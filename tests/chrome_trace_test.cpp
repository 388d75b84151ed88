// trace.json: parse the written document back with nlohmann::json and check what a
// viewer relies on: counts per kind, paired flows bound to the right slices, exact
// names and timestamps, the metadata; and that the file is written atomically.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "opscope/core/error.h"
#include "opscope/profiler/chrome_trace.h"
#include "opscope/profiler/trace.h"

namespace opscope::prof {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kNastyName = "quote\" back\\slash\nnew line\ttab \x01\x1f\x7f ünïcødé ✓ 😀 /";

TraceEvent ev(EventKind kind, int64_t t0, int64_t t1, uint64_t id, uint64_t parent,
              std::string name, int32_t track) {
  TraceEvent e;
  e.kind = kind;
  e.t0 = t0;
  e.t1 = t1;
  e.id = id;
  e.parent = parent;
  e.name = std::move(name);
  e.track = track;
  return e;
}

// Two host threads, one device with 2 cores. Thread 0 runs op 1 ("add") -> launch 10 ->
// kernel slices on both cores, nested in a user range; thread 1 runs op 3 with a nasty
// name -> launch 11 -> one kernel slice. Plus an alloc, a free and a sync.
Trace sample_trace() {
  Trace t;
  t.base_time_ns = 1'700'000'000'123'456'789;  // needs all 64 bits' precision
  t.wall_time_ns = 1'733'000'000'000'000'001;
  t.config_json = R"({"activities":["framework","runtime","device"],"record_shapes":true})";
  t.devices.push_back({0, "cpu:0", "2-core CPU device", 2});
  t.tracks.push_back({Track::Kind::host_thread, "main thread", 4242, -1, -1});
  t.tracks.push_back({Track::Kind::host_thread, "thread 2", 4243, -1, -1});
  t.tracks.push_back({Track::Kind::device_core, "cpu:0 core 0", 0, 0, 0});
  t.tracks.push_back({Track::Kind::device_core, "cpu:0 core 1", 0, 0, 1});
  t.dropped_per_track = {0, 3, 0, 7};
  t.dropped = 10;

  auto& E = t.events;
  E.push_back(ev(EventKind::range, 1'000, 20'000, 2, 0, "step 1", 0));
  TraceEvent add = ev(EventKind::op, 1'001, 9'999, 1, 2, "add", 0);
  add.value = 17;
  add.shapes = "[(4, 4096) f32, (4096) f32]";
  add.source = "examples/rmsnorm.cpp:42 (naive_rms_norm)";
  E.push_back(add);
  TraceEvent alloc = ev(EventKind::alloc, 1'500, 1'500, 0x7f00deadbeef, 0, "", 0);
  alloc.bytes = 65536;
  alloc.value = 65536;
  alloc.device = 0;
  alloc.parent = 1;  // inside op "add"
  E.push_back(alloc);
  TraceEvent launch = ev(EventKind::launch, 2'000, 3'001, 10, 1, "add_f32", 0);
  launch.device = 0;
  launch.stream = 0;
  launch.bytes = 196608;
  launch.flops = 16384;
  E.push_back(launch);
  TraceEvent k0 = ev(EventKind::kernel, 3'500, 7'123, 10, 1, "add_f32", 2);
  k0.device = 0;
  k0.bytes = 98304;
  E.push_back(k0);
  TraceEvent k1 = ev(EventKind::kernel, 3'600, 7'001, 10, 1, "add_f32", 3);
  k1.device = 0;
  k1.bytes = 98304;
  E.push_back(k1);
  TraceEvent op3 = ev(EventKind::op, 4'000, 12'000, 3, 0, kNastyName, 1);
  E.push_back(op3);
  TraceEvent launch11 = ev(EventKind::launch, 4'100, 4'900, 11, 3, kNastyName + "_kernel", 1);
  launch11.device = 0;
  launch11.stream = 1;
  E.push_back(launch11);
  TraceEvent k2 = ev(EventKind::kernel, 8'000, 9'000, 11, 3, kNastyName + "_kernel", 2);
  k2.device = 0;
  E.push_back(k2);
  TraceEvent sync = ev(EventKind::sync, 10'000, 11'500, 0, 0, "stream", 0);
  sync.device = 0;
  sync.stream = 0;
  E.push_back(sync);
  TraceEvent fr = ev(EventKind::free, 19'000, 19'000, 0x7f00deadbeef, 0, "", 0);
  fr.bytes = 65536;
  fr.value = 0;
  fr.device = 0;
  E.push_back(fr);
  return t;
}

// ts/dur are decimal microseconds with three decimals; *1000 rounds back to the ns.
int64_t ns(const json& v) { return std::llround(v.get<double>() * 1000.0); }

struct Parsed {
  json doc;
  std::vector<json> slices, instants, counters, meta, flow_s, flow_f;
};

Parsed parse(const std::string& text) {
  Parsed p;
  p.doc = json::parse(text);  // throws on invalid JSON (including invalid UTF-8)
  for (const json& e : p.doc.at("traceEvents")) {
    std::string ph = e.at("ph");
    if (ph == "X") p.slices.push_back(e);
    else if (ph == "i") p.instants.push_back(e);
    else if (ph == "C") p.counters.push_back(e);
    else if (ph == "M") p.meta.push_back(e);
    else if (ph == "s") p.flow_s.push_back(e);
    else if (ph == "f") p.flow_f.push_back(e);
    else ADD_FAILURE() << "unexpected phase " << ph;
  }
  return p;
}

std::map<std::string, int> count_by_cat(const std::vector<json>& v) {
  std::map<std::string, int> n;
  for (const json& e : v) n[e.at("cat")]++;
  return n;
}

TEST(ChromeTrace, EventCountsPerKind) {
  Trace t = sample_trace();
  Parsed p = parse(chrome_trace_json(t));
  auto n = count_by_cat(p.slices);
  EXPECT_EQ(n["op"], 2);
  EXPECT_EQ(n["range"], 1);
  EXPECT_EQ(n["launch"], 2);
  EXPECT_EQ(n["kernel"], 3);
  EXPECT_EQ(n["sync"], 1);
  EXPECT_EQ(p.slices.size(), 9u);
  auto i = count_by_cat(p.instants);
  EXPECT_EQ(i["alloc"], 1);
  EXPECT_EQ(i["free"], 1);
  for (const json& e : p.instants) {
    EXPECT_EQ(e.at("s"), "t");
    if (e.at("cat") == "alloc") {
      EXPECT_EQ(e.at("args").at("address"), "0x7f00deadbeef");
      EXPECT_EQ(e.at("args").at("correlation_id"), 1);
    } else {
      EXPECT_FALSE(e.at("args").contains("correlation_id"));
    }
  }
  ASSERT_EQ(p.counters.size(), 2u);  // "allocated bytes" after the alloc and after the free
  EXPECT_EQ(p.counters[0].at("name"), "allocated bytes");
  EXPECT_EQ(p.counters[0].at("args").at("bytes"), 65536);
  EXPECT_EQ(p.counters[1].at("args").at("bytes"), 0);
}

TEST(ChromeTrace, EveryFlowIsPairedAndBoundToItsSlices) {
  Trace t = sample_trace();
  Parsed p = parse(chrome_trace_json(t));
  // 3 kernel slices with a known launch + 2 launches with a known op.
  ASSERT_EQ(p.flow_s.size(), 5u);
  ASSERT_EQ(p.flow_f.size(), 5u);
  std::map<uint64_t, json> starts, finishes;
  for (const json& s : p.flow_s) EXPECT_TRUE(starts.emplace(s.at("id"), s).second) << "duplicate id";
  for (const json& f : p.flow_f) {
    EXPECT_TRUE(finishes.emplace(f.at("id"), f).second) << "duplicate id";
    EXPECT_EQ(f.at("bp"), "e");
  }
  auto inside = [](const json& flow, const json& slice) {
    return flow.at("pid") == slice.at("pid") && flow.at("tid") == slice.at("tid") &&
           ns(flow.at("ts")) >= ns(slice.at("ts")) &&
           ns(flow.at("ts")) <= ns(slice.at("ts")) + ns(slice.at("dur"));
  };
  int launch_to_kernel = 0, op_to_launch = 0;
  for (auto& [id, s] : starts) {
    ASSERT_TRUE(finishes.count(id)) << "flow " << id << " has no finish";
    const json& f = finishes[id];
    EXPECT_EQ(s.at("cat"), f.at("cat"));
    EXPECT_EQ(s.at("name"), f.at("name"));
    // Find the slices the two ends bind to; they must be the linked events.
    const json* from = nullptr;
    const json* to = nullptr;
    for (const json& x : p.slices) {
      // The innermost slice wins: later (nested) ops replace their enclosing range.
      if (inside(s, x) && x.at("cat") != "range") from = &x;
      if (inside(f, x)) to = &x;
    }
    ASSERT_TRUE(from && to) << s << f;
    if (s.at("name") == "launch-kernel") {
      ++launch_to_kernel;
      EXPECT_EQ(from->at("cat"), "launch");
      EXPECT_EQ(to->at("cat"), "kernel");
      EXPECT_EQ(from->at("args").at("launch_id"), to->at("args").at("launch_id"));
    } else {
      ++op_to_launch;
      EXPECT_EQ(from->at("cat"), "op");
      EXPECT_EQ(to->at("cat"), "launch");
      EXPECT_EQ(from->at("args").at("correlation_id"), to->at("args").at("correlation_id"));
    }
  }
  EXPECT_EQ(launch_to_kernel, 3);
  EXPECT_EQ(op_to_launch, 2);
}

TEST(ChromeTrace, FlowsSkipEventsWhoseLaunchWasDropped) {
  Trace t = sample_trace();
  t.events.erase(t.events.begin() + 3);  // launch 10 lost: its two kernels keep no arrow
  Parsed p = parse(chrome_trace_json(t));
  EXPECT_EQ(p.flow_s.size(), 2u);  // launch 11 -> kernel, op 3 -> launch 11
  EXPECT_EQ(p.flow_f.size(), 2u);
}

TEST(ChromeTrace, NamesSurviveExactly) {
  Trace t = sample_trace();
  Parsed p = parse(chrome_trace_json(t));
  std::multiset<std::string> names;
  for (const json& e : p.slices) names.insert(e.at("name").get<std::string>());
  EXPECT_EQ(names.count(kNastyName), 1u);
  EXPECT_EQ(names.count(kNastyName + "_kernel"), 2u);  // launch and kernel
  EXPECT_EQ(names.count("add_f32"), 3u);
  for (const json& e : p.slices)
    if (e.at("name") == "add") {
      EXPECT_EQ(e.at("args").at("input_shapes"), "[(4, 4096) f32, (4096) f32]");
      EXPECT_EQ(e.at("args").at("source"), "examples/rmsnorm.cpp:42 (naive_rms_norm)");
      EXPECT_EQ(e.at("args").at("sequence_nr"), 17);
      EXPECT_EQ(e.at("args").at("parent_id"), 2);
    }
}

TEST(ChromeTrace, EscapingIsExactAndCompact) {
  std::string out;
  append_json_string(out, "a\"b\\c\nd\te\r\b\f\x01\x1f\x7f/");
  EXPECT_EQ(out, R"("a\"b\\c\nd\te\r\b\f\u0001\u001f)" "\x7f" R"(/")");
  out.clear();
  append_json_string(out, "ünïcødé ✓ 😀");
  EXPECT_EQ(out, "\"ünïcødé ✓ 😀\"");
  out.clear();
  append_json_string(out, std::string("nul\0byte", 8));
  EXPECT_EQ(out, R"("nul\u0000byte")");
}

TEST(ChromeTrace, InvalidUtf8BecomesReplacementCharacters) {
  auto esc = [](std::string s) {
    std::string out;
    append_json_string(out, s);
    return out;
  };
  const std::string R = "\xEF\xBF\xBD";  // U+FFFD
  EXPECT_EQ(esc("a\xff" "b"), "\"a" + R + "b\"");
  EXPECT_EQ(esc("\xe2\x82"), "\"" + R + "\"");                      // truncated: one maximal subpart
  EXPECT_EQ(esc("\xe2\x82z"), "\"" + R + "z\"");
  EXPECT_EQ(esc("\xc0\xaf"), "\"" + R + R + "\"");                  // overlong
  EXPECT_EQ(esc("\xed\xa0\x80"), "\"" + R + R + R + "\"");          // UTF-16 surrogate
  EXPECT_EQ(esc("\xf4\x90\x80\x80"), "\"" + R + R + R + R + "\"");  // above U+10FFFF
  EXPECT_EQ(esc("\x80"), "\"" + R + "\"");                          // stray continuation
  EXPECT_EQ(esc("\xf0\x9f\x98\x80"), "\"\xf0\x9f\x98\x80\"");       // valid 4-byte
  // In a whole document: still valid JSON, the name carries U+FFFD.
  Trace t = sample_trace();
  t.events[1].name = "bad\xfe name";
  Parsed p = parse(chrome_trace_json(t));
  bool found = false;
  for (const json& e : p.slices) found |= e.at("name") == "bad\xEF\xBF\xBD name";
  EXPECT_TRUE(found);
}

TEST(ChromeTrace, MicrosecondsWithExactNanoseconds) {
  auto us = [](int64_t v) {
    std::string s;
    append_us(s, v);
    return s;
  };
  EXPECT_EQ(us(0), "0.000");
  EXPECT_EQ(us(7), "0.007");
  EXPECT_EQ(us(999), "0.999");
  EXPECT_EQ(us(1000), "1.000");
  EXPECT_EQ(us(1234567), "1234.567");
  EXPECT_EQ(us(-1), "-0.001");
  EXPECT_EQ(us(-1234567), "-1234.567");
  EXPECT_EQ(us(INT64_MAX), "9223372036854775.807");
  EXPECT_EQ(us(INT64_MIN), "-9223372036854775.808");

  Trace t = sample_trace();
  t.events[0].t0 = 3'600'000'000'001;  // one hour and a nanosecond
  t.events[0].t1 = 3'600'000'123'457;
  std::string text = chrome_trace_json(t);
  EXPECT_NE(text.find("\"ts\":3600000000.001,\"dur\":123.456"), std::string::npos);
  Parsed p = parse(text);
  for (const json& e : p.slices) {
    bool matched = false;
    for (const TraceEvent& te : t.events)
      if (e.at("name") == te.name && ns(e.at("ts")) == te.t0 && ns(e.at("dur")) == te.t1 - te.t0)
        matched = true;
    EXPECT_TRUE(matched) << e;
  }
}

TEST(ChromeTrace, ProcessesThreadsAndMetadata) {
  Trace t = sample_trace();
  Parsed p = parse(chrome_trace_json(t));
  std::map<std::pair<int, int>, std::string> threads;
  std::map<int, std::string> processes;
  for (const json& m : p.meta) {
    if (m.at("name") == "thread_name") threads[{m.at("pid"), m.at("tid")}] = m.at("args").at("name");
    if (m.at("name") == "process_name") processes[m.at("pid")] = m.at("args").at("name");
  }
  ASSERT_EQ(processes.size(), 2u);  // host + cpu:0
  std::set<std::string> process_names;
  for (auto& [pid, name] : processes) process_names.insert(name);
  EXPECT_TRUE(process_names.count("host"));
  EXPECT_TRUE(process_names.count("cpu:0 (2-core CPU device)"));
  std::set<std::string> thread_names;
  for (auto& [key, name] : threads) thread_names.insert(name);
  EXPECT_EQ(thread_names, (std::set<std::string>{
                              "main thread", "thread 2 (3 events dropped)",
                              "runtime (main thread)", "runtime (thread 2)", "cpu:0 core 0",
                              "cpu:0 core 1 (7 events dropped)"}));
  // Every slice lives on a named thread; kernels in the device's process.
  for (const json& e : p.slices) {
    auto it = threads.find({e.at("pid"), e.at("tid")});
    ASSERT_NE(it, threads.end()) << e;
    if (e.at("cat") == "kernel") {
      EXPECT_EQ(processes[e.at("pid")], "cpu:0 (2-core CPU device)");
    }
    if (e.at("cat") == "launch") {
      EXPECT_EQ(it->second.rfind("runtime (", 0), 0u);
    }
    if (e.at("cat") == "op") {
      EXPECT_EQ(processes[e.at("pid")], "host");
    }
  }

  const json& other = p.doc.at("otherData");
  EXPECT_EQ(other.at("schema_version"), kSchemaVersion);
  EXPECT_EQ(other.at("base_time_ns").get<int64_t>(), t.base_time_ns);
  EXPECT_EQ(other.at("wall_time_ns").get<int64_t>(), t.wall_time_ns);
  EXPECT_EQ(other.at("config"), json::parse(t.config_json));
  EXPECT_EQ(other.at("dropped"), 10);
  ASSERT_EQ(other.at("dropped_per_track").size(), 2u);
  EXPECT_EQ(other.at("dropped_per_track")[1].at("name"), "cpu:0 core 1");
  EXPECT_EQ(other.at("dropped_per_track")[1].at("dropped"), 7);
  ASSERT_EQ(other.at("devices").size(), 1u);
  EXPECT_EQ(other.at("devices")[0].at("num_cores"), 2);
  EXPECT_EQ(other.at("event_count"), t.events.size());
  // Perfetto's importer reads ts first and stops at unknown top-level keys before
  // traceEvents: the document must start with traceEvents.
  EXPECT_EQ(chrome_trace_json(t).rfind("{\"traceEvents\":[", 0), 0u);
}

TEST(ChromeTrace, ConfigThatIsNotJsonIsKeptAsAString) {
  Trace t = sample_trace();
  t.config_json = "layers=framework,runtime \"x\"";
  Parsed p = parse(chrome_trace_json(t));
  EXPECT_EQ(p.doc.at("otherData").at("config"), t.config_json);
  t.config_json.clear();
  EXPECT_TRUE(parse(chrome_trace_json(t)).doc.at("otherData").at("config").is_null());
}

TEST(ChromeTrace, EmptyTraceIsValid) {
  Trace t;
  Parsed p = parse(chrome_trace_json(t));
  EXPECT_TRUE(p.slices.empty());
  EXPECT_EQ(p.doc.at("otherData").at("event_count"), 0);
}

TEST(ChromeTrace, MalformedTrackIsAnErrorNotACrash) {
  Trace t = sample_trace();
  t.events[4].track = 99;
  try {
    chrome_trace_json(t);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[trace.json] event 4", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("track 99"), std::string::npos) << e.what();
  }
}

class ChromeTraceFile : public ::testing::Test {
 protected:
  fs::path dir = fs::temp_directory_path() /
                 ("opscope_chrome_" + std::to_string(::getpid()) + "_" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
  void SetUp() override { fs::create_directories(dir); }
  void TearDown() override { fs::remove_all(dir); }
  std::vector<std::string> entries() {
    std::vector<std::string> v;
    for (auto& e : fs::directory_iterator(dir)) v.push_back(e.path().filename().string());
    std::sort(v.begin(), v.end());
    return v;
  }
};

TEST_F(ChromeTraceFile, SavedFileMatchesTheStringAndLeavesNoTempFile) {
  Trace t = sample_trace();
  std::string path = (dir / "trace.json").string();
  save_chrome_trace(t, path);
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, chrome_trace_json(t));
  EXPECT_EQ(entries(), std::vector<std::string>{"trace.json"});
}

TEST_F(ChromeTraceFile, FailedWriteKeepsTheOldFileAndNoTempFile) {
  std::string path = (dir / "trace.json").string();
  { std::ofstream(path) << "old"; }
  Trace bad = sample_trace();
  bad.events.back().track = -1;
  EXPECT_THROW(save_chrome_trace(bad, path), Error);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, "old");
  EXPECT_EQ(entries(), std::vector<std::string>{"trace.json"});
}

TEST_F(ChromeTraceFile, MissingFolderIsAnErrorNamingIt) {
  std::string path = (dir / "no" / "such" / "trace.json").string();
  try {
    save_chrome_trace(sample_trace(), path);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find((dir / "no" / "such").string()), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace opscope::prof
