// key_averages on hand-built traces: exact self/total arithmetic for nested ops and
// ranges, device time through correlation, sorting, the table, JSON and CSV.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "opscope/analysis/key_averages.h"
#include "opscope/core/error.h"
#include "trace_util.h"

using namespace opscope;
using namespace opscope::prof;
using namespace opscope::analysis;
using opscope::test::row;
using opscope::test::scope;

namespace {

TraceEvent kernel(const std::string& name, uint64_t launch, uint64_t op, int64_t t0, int64_t t1, int32_t track) {
  TraceEvent e;
  e.kind = EventKind::kernel;
  e.name = name;
  e.id = launch;
  e.parent = op;
  e.t0 = t0;
  e.t1 = t1;
  e.track = track;
  return e;
}

// range "step" [0, 1000]
//   op A (id 2) [100, 400]          launches kA (id 10): core 0 [1000, 1500], core 1 [1100, 1600]
//     op B (id 3) [150, 250]        launches kB (id 11): [1600, 1700]
//   op A (id 4) [500, 700]          launches kA (id 12): [1800, 2000]
// op C (id 5) [1200, 1300]
// kernel kX (id 13), no op: [2100, 2150]; kernel kC (id 14), its op not in the trace: [2200, 2300]
Trace nested_trace(bool correlate = true) {
  Trace t;
  t.config_json = correlate ? R"({"correlate_device_time": true})" : R"({"correlate_device_time": false})";
  t.tracks.resize(3);
  t.tracks[0].name = "main thread";
  t.tracks[1].kind = t.tracks[2].kind = Track::Kind::device_core;
  t.tracks[1].name = "cpu:0 core 0";
  t.tracks[2].name = "cpu:0 core 1";
  t.events = {
      scope(EventKind::range, "step", 1, 0, 0, 1000),
      scope(EventKind::op, "A", 2, 1, 100, 400, "[(4, 8) f32]"),
      scope(EventKind::op, "B", 3, 2, 150, 250),
      scope(EventKind::op, "A", 4, 1, 500, 700, "[(2, 2) f32]"),
      kernel("kA", 10, 2, 1000, 1500, 1),
      kernel("kA", 10, 2, 1100, 1600, 2),
      scope(EventKind::op, "C", 5, 0, 1200, 1300),
      kernel("kB", 11, 3, 1600, 1700, 1),
      kernel("kA", 12, 4, 1800, 2000, 1),
      kernel("kX", 13, 0, 2100, 2150, 1),
      kernel("kC", 14, 99, 2200, 2300, 2),
  };
  t.dropped_per_track = {0, 0, 0};
  return t;
}

struct Expect {
  const char* name;
  int64_t count, self_cpu, cpu_total, self_device, device_total;
};

void expect_rows(const KeyAverages& ka, std::initializer_list<Expect> want) {
  EXPECT_EQ(ka.rows().size(), want.size());
  for (const Expect& w : want) {
    const KeyAverage& r = row(ka, w.name);
    EXPECT_EQ(r.count, w.count) << w.name;
    EXPECT_EQ(r.self_cpu_ns, w.self_cpu) << w.name;
    EXPECT_EQ(r.cpu_total_ns, w.cpu_total) << w.name;
    EXPECT_EQ(r.self_device_ns, w.self_device) << w.name;
    EXPECT_EQ(r.device_total_ns, w.device_total) << w.name;
  }
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

}  // namespace

TEST(KeyAverages, SelfAndTotalOfNestedOpsAndRanges) {
  KeyAverages ka = key_averages(nested_trace());
  expect_rows(ka, {
                      // name   calls self_cpu cpu_total self_dev dev_total
                      {"step", 1, 500, 1000, 0, 900},
                      {"A", 2, 400, 500, 800, 900},
                      {"B", 1, 100, 100, 100, 100},
                      {"C", 1, 100, 100, 0, 0},
                      // Kernel rows: their launches' device time; "self" only when no op owns it.
                      {"kA", 2, 0, 0, 0, 800},
                      {"kB", 1, 0, 0, 0, 100},
                      {"kX", 1, 0, 0, 50, 50},
                      {"kC", 1, 0, 0, 100, 100},
                  });
  EXPECT_EQ(ka.self_cpu_time_total_ns(), 1100);    // = the top-level durations 1000 + 100
  EXPECT_EQ(ka.self_device_time_total_ns(), 1050);  // = every launch's span once: 600+100+200+50+100
  // First-appearance order.
  std::vector<std::string> order;
  for (const auto& r : ka.rows()) order.push_back(r.name);
  EXPECT_EQ(order, (std::vector<std::string>{"step", "A", "B", "kA", "C", "kB", "kX", "kC"}));
}

TEST(KeyAverages, WithoutCorrelationKernelsOwnTheDeviceTime) {
  KeyAverages ka = key_averages(nested_trace(false));
  expect_rows(ka, {
                      {"step", 1, 500, 1000, 0, 0},
                      {"A", 2, 400, 500, 0, 0},
                      {"B", 1, 100, 100, 0, 0},
                      {"C", 1, 100, 100, 0, 0},
                      {"kA", 2, 0, 0, 800, 800},
                      {"kB", 1, 0, 0, 100, 100},
                      {"kX", 1, 0, 0, 50, 50},
                      {"kC", 1, 0, 0, 100, 100},
                  });
  EXPECT_EQ(ka.self_device_time_total_ns(), 1050);
}

TEST(KeyAverages, SelfPercentColumnsSumTo100) {
  for (bool correlate : {true, false}) {
    auto j = nlohmann::json::parse(key_averages(nested_trace(correlate)).to_json());
    double cpu = 0, dev = 0;
    for (const auto& r : j["rows"]) {
      cpu += r["self_cpu_pct"].get<double>();
      dev += r["self_device_pct"].get<double>();
    }
    EXPECT_NEAR(cpu, 100.0, 1e-9);
    EXPECT_NEAR(dev, 100.0, 1e-9);
    EXPECT_EQ(j["self_cpu_time_total_ns"], 1100);
    EXPECT_EQ(j["rows"].size(), 8u);
  }
}

TEST(KeyAverages, ParallelSlicesCountOnceAndUntracedOpsAreTolerated) {
  Trace t;
  t.tracks.resize(3);
  t.events = {scope(EventKind::op, "op", 7, 0, 0, 10), kernel("k", 1, 7, 100, 200, 1), kernel("k", 1, 7, 100, 200, 2),
              kernel("k", 1, 7, 150, 250, 1)};
  KeyAverages ka = key_averages(t);
  EXPECT_EQ(row(ka, "op").self_device_ns, 150);  // span [100, 250], not the slices' sum 300
  EXPECT_EQ(row(ka, "k").count, 1);
}

TEST(KeyAverages, SortKeys) {
  KeyAverages ka = key_averages(nested_trace());
  auto names = [&](const char* key) {
    std::vector<std::string> out;
    for (const auto& r : ka.sorted(key)) out.push_back(r.name);
    return out;
  };
  EXPECT_EQ(names("self_cpu_time_total")[0], "step");
  EXPECT_EQ(names("self_cpu_time_total")[1], "A");
  EXPECT_EQ(names("cpu_time_total")[0], "step");
  EXPECT_EQ(names("cpu_time")[0], "step");
  EXPECT_EQ(names("self_device_time_total")[0], "A");
  EXPECT_EQ(names("self_cuda_time_total")[0], "A");
  EXPECT_EQ(names("device_time_total")[0], "step");  // 900 ties with A; stable: first appearance
  EXPECT_EQ(names("device_time")[0], "step");        // 900 per call
  EXPECT_EQ(names("count")[0], "A");                 // 2 calls; kA (2) appears later
  std::string msg;
  try {
    ka.table("bogus");
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_EQ(msg.rfind("[sort_by] unknown key 'bogus' (expected one of self_cpu_time_total, ", 0), 0u) << msg;
  EXPECT_THROW(ka.to_json("bogus"), Error);
  try {
    ka.table("", 10, "minutes");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[time_unit] unknown unit 'minutes'", 0), 0u) << e.what();
  }
}

TEST(KeyAverages, TableColumnsFootersAndRowLimit) {
  Trace t = nested_trace();
  std::string table = key_averages(t).table("self_cpu_time_total", 3);
  for (const char* col : {"Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "Self Device",
                          "Self Device %", "Device total", "Device time avg", "# of Calls"})
    EXPECT_NE(table.find(col), std::string::npos) << col;
  EXPECT_EQ(table.find("Input Shapes"), std::string::npos);
  auto ls = lines(table);
  // dashes, header, dashes, 3 rows, dashes, 2 footers
  ASSERT_EQ(ls.size(), 9u) << table;
  EXPECT_EQ(ls[3].rfind("step ", 0), 0u) << ls[3];
  EXPECT_NE(ls[3].find("45.45%"), std::string::npos) << ls[3];  // 500 / 1100
  EXPECT_NE(ls[3].find("1.000us"), std::string::npos) << ls[3];
  EXPECT_EQ(ls[7], "Self CPU time total: 1.100us");
  EXPECT_EQ(ls[8], "Self Device time total: 1.050us");
  EXPECT_EQ(table.find("Dropped"), std::string::npos);

  // Fixed units, and the dropped footer.
  t.dropped = 5;
  t.dropped_per_track = {5, 0, 0};
  std::string ms = key_averages(t).table("", 0, "ns");
  EXPECT_NE(ms.find("Self CPU time total: 1100ns"), std::string::npos) << ms;
  EXPECT_NE(ms.find("Dropped events: 5 (main thread: 5)"), std::string::npos) << ms;
  EXPECT_EQ(lines(ms).size(), 3u + 8u + 1u + 3u);
}

TEST(KeyAverages, GroupByInputShape) {
  KeyAverages ka = key_averages(nested_trace(), /*group_by_input_shape=*/true);
  int a_rows = 0;
  for (const auto& r : ka.rows())
    if (r.name == "A") {
      ++a_rows;
      EXPECT_EQ(r.count, 1);
      EXPECT_TRUE(r.input_shapes == "[(4, 8) f32]" || r.input_shapes == "[(2, 2) f32]") << r.input_shapes;
    }
  EXPECT_EQ(a_rows, 2);
  std::string table = ka.table();
  EXPECT_NE(table.find("Input Shapes"), std::string::npos);
  EXPECT_NE(table.find("[(4, 8) f32]"), std::string::npos);
}

TEST(KeyAverages, GroupByStack) {
  Trace t;
  t.events = {scope(EventKind::op, "A", 1, 0, 0, 10), scope(EventKind::op, "A", 2, 0, 20, 30)};
  t.events[0].source = "main.cpp:10 (f)";
  t.events[1].source = "main.cpp:20 (g)";
  EXPECT_EQ(key_averages(t).rows().size(), 1u);
  KeyAverages ka = key_averages(t, false, 1);
  ASSERT_EQ(ka.rows().size(), 2u);
  EXPECT_EQ(ka.rows()[1].source, "main.cpp:20 (g)");
  EXPECT_NE(ka.table().find("Source Location"), std::string::npos);
}

TEST(KeyAverages, CsvQuotesNames) {
  Trace t;
  t.events = {scope(EventKind::range, "a,\"b\"\nc", 1, 0, 0, 10)};
  std::string csv = key_averages(t).to_csv();
  auto ls = lines(csv);
  EXPECT_EQ(ls[0].rfind("name,kind,input_shapes,source,count,self_cpu_ns,", 0), 0u);
  EXPECT_EQ(csv.find("\"a,\"\"b\"\"\nc\",range,,,1,10,100.0000,10,"), ls[0].size() + 1) << csv;
  auto j = nlohmann::json::parse(key_averages(t).to_json());
  EXPECT_EQ(j["rows"][0]["name"], "a,\"b\"\nc");
}

TEST(KeyAverages, EmptyTrace) {
  KeyAverages ka = key_averages(Trace{});
  EXPECT_TRUE(ka.rows().empty());
  EXPECT_NE(ka.table().find("Self CPU time total: 0.000us"), std::string::npos);
}

// kA (launch 10) has a launch event with the whole launch's bytes and flops and two
// slices that each carry half: the launch's figures win. kB (launch 11) has no launch
// event: its slice's bytes count. Ops and ranges sum the launches beneath them.
TEST(KeyAverages, BytesFlopsRatesAndRoofline) {
  Trace t = nested_trace();
  TraceEvent l;
  l.kind = EventKind::launch;
  l.name = "kA";
  l.id = 10;
  l.parent = 2;
  l.bytes = 4000;
  l.flops = 1000;
  t.events.push_back(l);
  for (TraceEvent& e : t.events)
    if (e.kind == EventKind::kernel) {
      if (e.id == 10) e.bytes = 1500, e.flops = 100;  // slices undercount: ignored
      if (e.id == 11) e.bytes = 200, e.flops = 0;
    }
  KeyAverages ka = key_averages(t);
  EXPECT_EQ(row(ka, "kA").bytes, 4000);  // launch 10 only; launch 12 has no bytes
  EXPECT_EQ(row(ka, "kA").flops, 1000);
  EXPECT_EQ(row(ka, "kB").bytes, 200);
  EXPECT_EQ(row(ka, "B").bytes, 200);
  EXPECT_EQ(row(ka, "A").bytes, 4200);  // its own launch and B's beneath it
  EXPECT_EQ(row(ka, "step").bytes, 4200);
  EXPECT_EQ(row(ka, "C").bytes, 0);
  EXPECT_DOUBLE_EQ(row(ka, "B").gbps(), 2.0);  // 200 bytes in 100 ns
  EXPECT_DOUBLE_EQ(row(ka, "A").gflops(), 1000.0 / 900.0);
  EXPECT_FALSE(ka.roofline().known());
  std::string table = ka.table();
  EXPECT_NE(table.find("GB/s"), std::string::npos);
  EXPECT_NE(table.find("GFLOP/s"), std::string::npos);
  EXPECT_EQ(table.find("% Roofline"), std::string::npos) << "no peaks in the config";

  // With the device's peaks in the config: B moved 2 GB/s of a 4 GB/s roof → 50%.
  t.config_json = R"({"correlate_device_time": true, "device_peaks": {"copy_gbps": 4.0, "matmul_gflops": 10.0}})";
  KeyAverages kb = key_averages(t);
  ASSERT_TRUE(kb.roofline().known());
  EXPECT_DOUBLE_EQ(kb.roofline().ridge(), 2.5);
  EXPECT_STREQ(kb.roofline().bound(0.25), "memory");
  EXPECT_STREQ(kb.roofline().bound(4.0), "compute");
  EXPECT_DOUBLE_EQ(kb.roofline().attainable_gflops(1.0), 4.0);
  EXPECT_DOUBLE_EQ(kb.roofline().attainable_gflops(10.0), 10.0);
  std::string rt = kb.table("", 0);
  EXPECT_NE(rt.find("% Roofline"), std::string::npos);
  auto ls = lines(rt);
  bool found = false;
  for (auto& line : ls)
    if (line.rfind("B ", 0) == 0) {
      found = true;
      EXPECT_NE(line.find("50.0%"), std::string::npos) << line;
    }
  EXPECT_TRUE(found) << rt;
  auto j = nlohmann::json::parse(kb.to_json());
  EXPECT_DOUBLE_EQ(j["roofline"]["peak_gbps"].get<double>(), 4.0);
  for (auto& r : j["rows"])
    if (r["name"] == "B") {
      EXPECT_DOUBLE_EQ(r["roofline_pct"].get<double>(), 50.0);
    }
  EXPECT_NE(kb.to_csv().find(",bytes,flops,gbps,gflops,origins\n"), std::string::npos);

  // A bare peak_gbps (older profiles) gives the memory roof only; junk gives none.
  EXPECT_DOUBLE_EQ(roofline_from_config(R"({"peak_gbps": 7.5})").peak_gbps, 7.5);
  EXPECT_FALSE(roofline_from_config(R"({"peak_gbps": 7.5})").known());
  EXPECT_FALSE(roofline_from_config("not json").known());
  EXPECT_FALSE(roofline_from_config(R"({"device_peaks": {"copy_gbps": "fast"}})").known());
}
