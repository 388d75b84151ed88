// Device memory in the profiler: key_averages' Self Device Mem / Device Mem (torch's
// profile_memory semantics over the caching allocator's alloc/free events), the sort keys
// and table columns, the per-device peak summary, and a real profile of the naive RMSNorm.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "opscope/analysis/diff.h"
#include "opscope/analysis/key_averages.h"
#include "opscope/analysis/memory.h"
#include "opscope/cases/rmsnorm.h"
#include "opscope/profiler/record_function.h"
#include "opscope/profiler/session.h"
#include "opscope/profiler/store.h"
#include "opscope/runtime/device.h"
#include "opscope/runtime/tensor.h"
#include "test_util.h"
#include "trace_util.h"

using namespace opscope;
using namespace opscope::prof;
using namespace opscope::analysis;
using opscope::test::mem;
using opscope::test::row;
using opscope::test::scope;

namespace {

// range "step" (1) [0, 1000]
//   op A (2) [100, 400]     alloc 500 @300; frees B's 5000-byte block @350
//     op B (3) [150, 250]   alloc 5000 @160
//   op C (4) [500, 700]     frees A's 500 @600; on device 1: alloc 64 @650
//   step itself:            alloc 200 @50, alloc 3000 @800
// outside any op:           alloc 100 @1100
// Device 0 allocated: 200, 5200, 5700 (peak, in step > A), 700, 200, 3200, 3300.
Trace memory_trace() {
  Trace t;
  t.devices = {{0, "cpu:0", "", 2}, {1, "cpu:1", "", 2}};
  t.tracks.resize(1);
  t.tracks[0].name = "main thread";
  using K = EventKind;
  t.events = {
      scope(K::range, "step", 1, 0, 0, 1000),
      mem(K::alloc, 50, 1, 200, 200),
      scope(K::op, "A", 2, 1, 100, 400),
      scope(K::op, "B", 3, 2, 150, 250),
      mem(K::alloc, 160, 3, 5000, 5200),
      mem(K::alloc, 300, 2, 500, 5700),
      mem(K::free, 350, 2, 5000, 700),
      scope(K::op, "C", 4, 1, 500, 700),
      mem(K::free, 600, 4, 500, 200),
      mem(K::alloc, 650, 4, 64, 64, 1),
      mem(K::alloc, 800, 1, 3000, 3200),
      mem(K::alloc, 1100, 0, 100, 3300),
  };
  t.dropped_per_track = {0};
  return t;
}

std::vector<std::string> names(const KeyAverages& ka, const std::string& key) {
  std::vector<std::string> out;
  for (const auto& r : ka.sorted(key)) out.push_back(r.name);
  return out;
}

// The table line of row `name`.
std::string line_of(const std::string& table, const std::string& name) {
  size_t at = table.find("\n" + name + " ");
  if (at == std::string::npos) return "";
  return table.substr(at + 1, table.find('\n', at + 1) - at - 1);
}

}  // namespace

TEST(Memory, SelfAndTotalPerRow) {
  KeyAverages ka = key_averages(memory_trace());
  ASSERT_TRUE(ka.has_memory());
  struct Want {
    const char* name;
    int64_t self, total, self_allocs, allocs;
  };
  for (Want w : {Want{"B", 5000, 5000, 1, 1},
                 // A allocated 500 and freed B's block: its own figure goes negative.
                 Want{"A", 500 - 5000, 500, 1, 2},
                 // C only frees (and allocates 64 bytes on the other device).
                 Want{"C", -500 + 64, -500 + 64, 1, 1},
                 Want{"step", 200 + 3000, 3200 + 500 + (-436), 2, 5}}) {
    const KeyAverage& r = row(ka, w.name);
    EXPECT_EQ(r.self_device_memory, w.self) << w.name;
    EXPECT_EQ(r.device_memory, w.total) << w.name;
    EXPECT_EQ(r.self_device_allocs, w.self_allocs) << w.name;
    EXPECT_EQ(r.device_allocs, w.allocs) << w.name;
  }
  // The alloc outside any op belongs to no row.
  EXPECT_EQ(ka.rows().size(), 4u);
}

TEST(Memory, SameOpCalledTwiceAddsUp) {
  Trace t;
  t.events = {scope(EventKind::op, "mul", 1, 0, 0, 10), mem(EventKind::alloc, 5, 1, 4096, 4096),
              scope(EventKind::op, "mul", 2, 0, 20, 30), mem(EventKind::alloc, 25, 2, 1024, 5120)};
  KeyAverages ka = key_averages(t);
  EXPECT_EQ(row(ka, "mul").self_device_memory, 5120);
  EXPECT_EQ(row(ka, "mul").device_memory, 5120);
  EXPECT_EQ(row(ka, "mul").self_device_allocs, 2);
}

TEST(Memory, SortKeysAndTheirTorchAliases) {
  KeyAverages ka = key_averages(memory_trace());
  std::vector<std::string> total = {"B", "step", "A", "C"}, self = {"B", "step", "C", "A"};
  EXPECT_EQ(names(ka, "device_memory_usage"), total);
  EXPECT_EQ(names(ka, "cuda_memory_usage"), total);
  EXPECT_EQ(names(ka, "cpu_memory_usage"), total);
  EXPECT_EQ(names(ka, "self_device_memory_usage"), self);
  EXPECT_EQ(names(ka, "self_cuda_memory_usage"), self);
  EXPECT_EQ(names(ka, "self_cpu_memory_usage"), self);
  // The error lists the new keys.
  std::string msg = test_util::error_of([&] { ka.sorted("memory"); });
  EXPECT_NE(msg.find("self_device_memory_usage, device_memory_usage"), std::string::npos) << msg;
}

TEST(Memory, TableShowsMemoryColumnsOnlyWithMemoryEvents) {
  std::string table = key_averages(memory_trace()).table("device_memory_usage");
  EXPECT_NE(table.find("Device Mem"), std::string::npos) << table;
  EXPECT_NE(table.find("Self Device Mem"), std::string::npos) << table;
  // Columns in torch's order: Device Mem, then Self Device Mem, then # of Calls.
  EXPECT_LT(table.find("Device Mem "), table.find("Self Device Mem"));
  EXPECT_LT(table.find("Self Device Mem"), table.find("# of Calls"));
  std::string a = line_of(table, "A");
  EXPECT_NE(a.find("500 B  "), std::string::npos) << a;     // Device Mem
  EXPECT_NE(a.find("-4.39 KB  "), std::string::npos) << a;  // Self Device Mem: -4500 B
  EXPECT_NE(line_of(table, "B").find("4.88 KB"), std::string::npos) << table;

  Trace plain = memory_trace();
  std::erase_if(plain.events, [](const TraceEvent& e) { return e.kind == EventKind::alloc || e.kind == EventKind::free; });
  std::string without = key_averages(plain).table();
  EXPECT_EQ(without.find("Device Mem"), std::string::npos) << without;
  EXPECT_FALSE(key_averages(plain).has_memory());
}

TEST(Memory, JsonAndCsvAlwaysCarryMemory) {
  auto j = nlohmann::json::parse(key_averages(memory_trace()).to_json("self_device_memory_usage"));
  EXPECT_EQ(j["has_memory"], true);
  EXPECT_EQ(j["rows"][0]["name"], "B");
  EXPECT_EQ(j["rows"][3]["name"], "A");
  EXPECT_EQ(j["rows"][3]["self_device_memory"], -4500);
  EXPECT_EQ(j["rows"][3]["device_memory"], 500);
  EXPECT_EQ(j["rows"][3]["self_device_allocs"], 1);
  EXPECT_EQ(j["rows"][3]["device_allocs"], 2);

  Trace empty;
  empty.events = {scope(EventKind::op, "x", 1, 0, 0, 1)};
  auto e = nlohmann::json::parse(key_averages(empty).to_json());
  EXPECT_EQ(e["has_memory"], false);
  EXPECT_EQ(e["rows"][0]["device_memory"], 0);

  std::string csv = key_averages(memory_trace()).to_csv("device_memory_usage");
  EXPECT_NE(csv.find(",device_avg_ns,self_device_memory,device_memory,self_device_allocs,device_allocs,bytes,"),
            std::string::npos)
      << csv;
  // B's row: ..., self 5000, total 5000, 1, 1, bytes 0, ...
  EXPECT_NE(csv.find("\nB,op,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",5000,5000,1,1,0,0,"), std::string::npos) << csv;
}

TEST(Memory, FormatInHumanUnits) {
  EXPECT_EQ(format_memory(0), "0 B");
  EXPECT_EQ(format_memory(512), "512 B");
  EXPECT_EQ(format_memory(-512), "-512 B");
  EXPECT_EQ(format_memory(1536), "1.50 KB");
  EXPECT_EQ(format_memory(-4 * 1024 * 1024), "-4.00 MB");
  EXPECT_EQ(format_memory(int64_t(3) << 30), "3.00 GB");
  EXPECT_EQ(format_memory(192 << 20, 1), "192.0 MB");
}

TEST(Memory, SummaryPeakTimeAndOpPerDevice) {
  Trace t = memory_trace();
  auto s = memory_summary(t);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].device, 0);
  EXPECT_EQ(s[0].name, "cpu:0");
  EXPECT_EQ(s[0].peak_bytes, 5700);
  EXPECT_EQ(s[0].peak_time_ns, 300);
  EXPECT_EQ(s[0].peak_op, 2u);
  EXPECT_EQ(s[0].peak_op_path, "step > A");
  EXPECT_EQ(s[0].start_bytes, 0);
  EXPECT_EQ(s[0].end_bytes, 3300);
  EXPECT_EQ(s[0].allocs, 5);
  EXPECT_EQ(s[0].frees, 2);
  EXPECT_EQ(s[0].allocated_bytes, 200 + 5000 + 500 + 3000 + 100);
  EXPECT_EQ(s[0].freed_bytes, 5500);
  EXPECT_EQ(s[1].name, "cpu:1");
  EXPECT_EQ(s[1].peak_bytes, 64);
  EXPECT_EQ(s[1].peak_op_path, "step > C");

  // A peak outside any op names none; a device without DeviceInfo is "device N".
  t.events.push_back(mem(EventKind::alloc, 1200, 0, 10000, 13300));
  t.events.push_back(mem(EventKind::alloc, 1300, 0, 8, 8, 5));
  s = memory_summary(t);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].peak_bytes, 13300);
  EXPECT_EQ(s[0].peak_op_path, "");
  EXPECT_EQ(s[2].name, "device 5");
  std::string text = memory_summary_text(t);
  EXPECT_EQ(text.substr(0, text.find('\n')), "cpu:0 memory: peak 13.0 KB at 1.2 us");
}

TEST(Memory, SummaryTextAndNoEvents) {
  Trace t = memory_trace();
  for (auto& e : t.events) e.t0 = e.t1 = e.t0 * 10'000;  // 300 ns → 3 ms
  EXPECT_EQ(memory_summary_text(t),
            "cpu:0 memory: peak 5.6 KB at 3.0 ms in step > A\n"
            "cpu:1 memory: peak 64 B at 6.5 ms in step > C\n");
  Trace none;
  none.events = {scope(EventKind::op, "x", 1, 0, 0, 1)};
  EXPECT_TRUE(memory_summary(none).empty());
  EXPECT_EQ(memory_summary_text(none), "");
  EXPECT_FALSE(has_memory_events(none));
  EXPECT_TRUE(has_memory_events(t));
}

// The naive RMSNorm materializes every intermediate: its ops allocate their outputs, and
// the peak is at the last mul, while x*x, x*r and the output are all alive.
TEST(Memory, RealProfileOfTheNaiveRmsNorm) {
  const int64_t R = 64, H = 512;
  Tensor x = randn({R, H}, 0), w = rand({H}, 1);
  cases::naive_rms_norm(x, w);
  cpu().synchronize();
  Profiler p;
  p.start();
  {
    RecordFunction r("rmsnorm naive");
    Tensor y = cases::naive_rms_norm(x, w);
    cpu().synchronize();
  }
  cpu().synchronize();
  p.stop();
  KeyAverages ka = key_averages(p.trace());
  ASSERT_TRUE(ka.has_memory()) << ka.table();
  const int64_t plane = R * H * 4;
  // x*x, x*r, *w: three planes, allocated inside the op that produced them.
  EXPECT_GE(row(ka, "mul").self_device_memory, 3 * plane) << ka.table();
  EXPECT_GE(row(ka, "mul").self_device_allocs, 3) << ka.table();
  for (const char* op : {"mean", "add", "rsqrt"}) {
    EXPECT_GE(row(ka, op).self_device_memory, R * 4) << op << "\n" << ka.table();
    EXPECT_GE(row(ka, op).self_device_allocs, 1) << op;
  }
  // Everything the call allocated was freed before it ended.
  EXPECT_EQ(row(ka, "rmsnorm naive").device_memory, 0) << ka.table();
  EXPECT_NE(ka.table().find("Self Device Mem"), std::string::npos);

  auto s = memory_summary(p.trace());
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].peak_op_path, "rmsnorm naive > mul");
  EXPECT_GE(s[0].peak_bytes - s[0].start_bytes, 3 * plane);
  EXPECT_EQ(memory_summary_text(p.trace()).rfind(s[0].name + " memory: peak ", 0), 0u);
}

// The CLI prints the memory columns and each device's peak line with a saved profile's
// table (the store keeps the allocator's events), and lists the memory sort keys.
TEST(Memory, CliTableOfASavedProfile) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("opscope_memory_cli_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  Trace t = memory_trace();
  for (auto& e : t.events) e.t0 = e.t1 = e.t0 * 10'000;  // 300 ns → 3 ms
  for (auto& e : t.events)
    if (e.kind == EventKind::range || e.kind == EventKind::op) e.t1 = e.t0 + 1;
  export_profile(t, dir.string());
  auto r = testutil::run_opscope({"table", dir.string(), "--sort-by", "self_device_memory_usage"});
  fs::remove_all(dir);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("Self Dev Mem"), std::string::npos) << r.out;  // the CLI's header, fitted to 160
  EXPECT_LT(r.out.find("\nB "), r.out.find("\nA ")) << r.out;  // sorted by the new key
  EXPECT_NE(r.out.find("cpu:0 memory: peak 5.6 KB at 3.0 ms in step > A\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cpu:1 memory: peak 64 B at 6.5 ms in step > C\n"), std::string::npos) << r.out;

  r = testutil::run_opscope({"table", "--help"});
  EXPECT_NE(r.out.find("self_device_memory_usage"), std::string::npos) << r.out;
  r = testutil::run_opscope({"diff", "--help"});
  EXPECT_NE(r.out.find("device_memory_usage"), std::string::npos) << r.out;
}

// diff: the memory figures of both sides, their change, and the memory sort keys.
TEST(Memory, DiffComparesDeviceMemory) {
  Trace a = memory_trace(), b = memory_trace();
  for (auto& e : b.events)
    if (e.kind == EventKind::alloc && e.parent == 3) e.bytes = 9000;  // B allocates more
  ProfileDiff d = diff_profiles(a, b);
  DiffView v;
  v.sort_by = "self_device_memory_usage";  // only B's own figure changed
  auto rows = d.select(v);
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0].name, "B");
  EXPECT_EQ(rows[0].a.self_device_memory, 5000);
  EXPECT_EQ(rows[0].b.self_device_memory, 9000);
  EXPECT_EQ(rows[0].delta().device_memory, 4000);
  EXPECT_EQ(rows[0].status, DiffStatus::changed);
  // Its enclosing op and range change in total only.
  for (const DiffRow& r : rows)
    if (r.name == "A" || r.name == "step") {
      EXPECT_EQ(r.delta().self_device_memory, 0) << r.name;
      EXPECT_EQ(r.delta().device_memory, 4000) << r.name;
    }
  v.sort_by = "self_cuda_memory_usage";
  EXPECT_EQ(d.select(v)[0].name, "B");
  auto j = nlohmann::json::parse(d.to_json(v));
  EXPECT_NE(j.dump().find("\"device_memory\":9000"), std::string::npos) << j.dump();
}

// diff's totals: each side's peak of allocated bytes and its change; "-" for a side that
// recorded no allocator events.
TEST(Memory, DiffTotalsComparePeakMemory) {
  Trace a = memory_trace(), b = memory_trace();
  for (auto& e : b.events)
    if (e.kind == EventKind::alloc && e.t0 == 300) e.value = 9700;  // B's peak is higher
  ProfileDiff d = diff_profiles(a, b);
  EXPECT_TRUE(d.a().has_memory);
  EXPECT_EQ(d.a().peak_memory, 5700);
  EXPECT_EQ(d.b().peak_memory, 9700);
  std::string table = d.table();
  std::string peak = line_of(table, "Peak device memory");
  EXPECT_NE(peak.find("+3.91 KiB"), std::string::npos) << table;
  EXPECT_NE(peak.find("+70.2%"), std::string::npos) << table;
  auto j = nlohmann::json::parse(d.to_json());
  EXPECT_EQ(j["a"]["peak_memory"], 5700);
  EXPECT_EQ(j["delta"]["peak_memory"], 4000);

  Trace none = memory_trace();
  std::erase_if(none.events, [](const TraceEvent& e) { return e.kind == EventKind::alloc || e.kind == EventKind::free; });
  ProfileDiff d2 = diff_profiles(none, b);
  EXPECT_FALSE(d2.a().has_memory);
  peak = line_of(d2.table(), "Peak device memory");
  EXPECT_NE(peak.find(" - "), std::string::npos) << d2.table();
  EXPECT_EQ(line_of(diff_profiles(none, none).table(), "Peak device memory"), "");
}

// `opscope profile rmsnorm` sorts by the memory keys and prints the peak under each
// table; a bad key is named before anything runs.
TEST(Memory, CliProfilePrintsThePeakAndChecksTheSortKeyFirst) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("opscope_memory_profile_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto r = testutil::run_opscope({"profile", "rmsnorm", "--impl", "naive", "--shape", "16x256", "--iters", "1",
                                  "--warmup", "1", "--sort-by", "bogus", "--out", dir.string()});
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("[--sort-by] unknown key 'bogus'"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("== naive"), std::string::npos) << r.out;  // nothing was profiled
  r = testutil::run_opscope({"profile", "rmsnorm", "--impl", "naive", "--shape", "16x256", "--iters", "1",
                             "--warmup", "1", "--sort-by", "self_cuda_memory_usage", "--out", dir.string()});
  fs::remove_all(dir);
  ASSERT_EQ(r.status, 0) << r.out;
  // The first row: mul, whose three outputs are the call's largest allocations.
  size_t head = r.out.find("Self Dev Mem");
  ASSERT_NE(head, std::string::npos) << r.out;
  size_t first = r.out.find('\n', r.out.find('\n', head) + 1) + 1;
  EXPECT_EQ(r.out.substr(first, 4), "mul ") << r.out;
  EXPECT_NE(r.out.find("cpu:0 memory: peak "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" in rmsnorm naive > mul\n"), std::string::npos) << r.out;
}
