// Real-world oddities of torch.profiler traces (the fuzz targets' seeds, fuzz/corpus/kineto,
// start from the same list): each imports as a user would want, or fails with an error
// that names the file and the event.
#include <gtest/gtest.h>

#include <string>

#include "import_util.h"
#include "opscope/core/error.h"

namespace opscope::test {
namespace {

using prof::EventKind;

bool has_warning(const importer::ImportResult& r, const std::string& part) {
  for (const std::string& w : r.warnings)
    if (w.find(part) != std::string::npos) return true;
  return false;
}

// Kineto writes a zero-length copy's bandwidth as a bare `inf` (and `nan` for 0 / 0),
// which is no JSON: the copy imports, with no bandwidth.
TEST(ImportQuirks, BareInfOrNanBandwidthIsNoBandwidth) {
  TempDir dir("quirk_inf");
  std::string p = dir.write("inf.json", std::string(R"J({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::copy_", "pid": 1, "tid": 1, "ts": 10, "dur": 20, "args": {"External id": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": 12, "dur": 3, "args": {"correlation": 5, "External id": 1}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, "ts": 20, "dur": 0, "args": {"correlation": 5, "bytes": 4096, "memory bandwidth (GB/s)": inf}},
    {"ph": "X", "cat": "gpu_memset", "name": "Memset", "pid": 0, "tid": 7, "ts": 21, "dur": 0, "args": {"correlation": 6, "bytes": 0, "memory bandwidth (GB/s)": nan}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH", "pid": 0, "tid": 7, "ts": 22, "dur": 1, "args": {"correlation": 7, "bytes": 64, "memory bandwidth (GB/s)": -inf}}]})J"));
  importer::ImportResult r = importer::import_traces({p});
  const prof::TraceEvent& copy = only(r.trace, EventKind::kernel, "Memcpy HtoD");
  EXPECT_EQ(copy.bytes, 4096);
  EXPECT_EQ(copy.value, 0);  // no bandwidth from the trace
  EXPECT_EQ(only(r.trace, EventKind::kernel, "Memset").value, 0);
  EXPECT_EQ(only(r.trace, EventKind::kernel, "Memcpy DtoH").value, 0);
  EXPECT_EQ(copy.parent, only(r.trace, EventKind::launch, "cudaMemcpyAsync").id);
}

// Times written as strings keep every digit: the whole µs exactly, the fraction to the ns.
TEST(ImportQuirks, StringTimesReadAsNumbersToTheNanosecond) {
  TempDir dir("quirk_string_ts");
  std::string p = dir.write("s.json", std::string(R"J({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": "1700000000123456.789", "dur": "20.0005"},
    {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": "1700000000123500", "dur": "1.5e1"},
    {"ph": "X", "cat": "cpu_op", "name": "c", "pid": 1, "tid": 1, "ts": "17e", "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "d", "pid": 1, "tid": 1, "ts": "", "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "e", "pid": 1, "tid": 1, "ts": "1700000000123600", "dur": "x"}]})J"));
  importer::ImportResult r = importer::import_traces({p});
  const prof::TraceEvent& a = only(r.trace, EventKind::op, "a");
  const prof::TraceEvent& b = only(r.trace, EventKind::op, "b");
  EXPECT_EQ(a.t1 - a.t0, 20001);  // 20.0005 µs: half a ns rounds up
  EXPECT_EQ(b.t0 - a.t0, 43211);  // 123500 - 123456.789 µs, exactly
  EXPECT_EQ(b.t1 - b.t0, 15000);
  EXPECT_EQ(r.trace.base_time_ns + a.t0, 1700000000123456789);
  // What is no number stays a skipped event, counted.
  EXPECT_TRUE(has_warning(r, "2 events with no usable ts")) << ::testing::PrintToString(r.warnings);
  EXPECT_TRUE(has_warning(r, "1 events with dur < 0 (or no number")) << ::testing::PrintToString(r.warnings);
}

// A number, string, null or list among the events is skipped and counted; the events
// after it import.
TEST(ImportQuirks, ValuesThatAreNoEventObjectAreSkippedAndCounted) {
  TempDir dir("quirk_non_object");
  std::string p = dir.write("n.json", std::string(R"J({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "first", "pid": 1, "tid": 1, "ts": 1, "dur": 2},
    17, "a string", null, true, [1, 2, {"ph": "X", "name": "inner", "ts": 3, "dur": 1}],
    {"ph": "X", "cat": "cpu_op", "name": "last", "pid": 1, "tid": 1, "ts": 5, "dur": 2, "args": [1, 2]}]})J"));
  importer::ImportResult r = importer::import_traces({p});
  EXPECT_EQ(r.trace.events.size(), 2u);
  only(r.trace, EventKind::op, "first");
  only(r.trace, EventKind::op, "last");
  EXPECT_TRUE(has_warning(r, "5 values that are no event object skipped (first: event 1)"))
      << ::testing::PrintToString(r.warnings);
  // The legacy form whose first element is no event is no trace at all.
  std::string legacy = dir.write("l.json", std::string("[1, {\"ph\": \"X\"}]"));
  EXPECT_EQ(import_error(legacy),
            "[import] " + legacy + ": not a torch.profiler trace: the array's first element is not an event object");
}

// Ids past 2^53 (pid, tid, correlation, flow ids as full 64-bit values) link exactly.
TEST(ImportQuirks, IdsPastTwoToThe53LinkExactly) {
  TempDir dir("quirk_big_ids");
  std::string p = dir.write("b.json", std::string(R"J({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 9007199254740993, "tid": 18446744073709551615, "ts": 10, "dur": 40, "args": {"External id": 9007199254740993}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9007199254740993, "tid": 18446744073709551615, "ts": 15, "dur": 5, "args": {"correlation": 9007199254740993, "External id": 9007199254740993}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9007199254740993, "tid": 18446744073709551615, "ts": 22, "dur": 5, "args": {"correlation": 9007199254740992, "External id": 9007199254740993}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 30, "dur": 20, "args": {"correlation": 9007199254740993, "device": 0, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "other", "pid": 0, "tid": 7, "ts": 60, "dur": 2, "args": {"correlation": 9007199254740992, "device": 0, "stream": 7}}]})J"));
  importer::ImportResult r = importer::import_traces({p});
  // Two correlation ids one apart (equal as doubles): each kernel on its own launch.
  const prof::TraceEvent& gemm = only(r.trace, EventKind::kernel, "gemm");
  const prof::TraceEvent& other = only(r.trace, EventKind::kernel, "other");
  EXPECT_NE(gemm.id, other.id);
  std::vector<int64_t> launch_t0;
  for (const prof::TraceEvent& e : r.trace.events)
    if (e.kind == EventKind::launch && (e.id == gemm.id || e.id == other.id)) launch_t0.push_back(e.t0);
  ASSERT_EQ(launch_t0.size(), 2u);
  EXPECT_NE(launch_t0[0], launch_t0[1]);
  EXPECT_EQ(track_of(r.trace, only(r.trace, EventKind::op, "aten::mm")).name.find("9007199254740992"), std::string::npos);
}

// An event with no ph is skipped and counted; one with no name imports unnamed.
TEST(ImportQuirks, MissingPhaseIsSkippedMissingNameIsEmpty) {
  TempDir dir("quirk_missing");
  std::string p = dir.write("m.json", std::string(R"J({"traceEvents": [
    {"cat": "cpu_op", "name": "no phase", "pid": 1, "tid": 1, "ts": 1, "dur": 2},
    {"ph": "X", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 3, "dur": 2},
    {}]})J"));
  importer::ImportResult r = importer::import_traces({p});
  EXPECT_EQ(r.trace.events.size(), 1u);
  EXPECT_EQ(r.trace.events[0].name, "");
  EXPECT_TRUE(has_warning(r, "2 events with no phase (ph) skipped (first: event 0)")) << ::testing::PrintToString(r.warnings);
}

// Nesting deeper than the parser goes is an error naming the file and the event, not a
// stack overflow.
TEST(ImportQuirks, DeepNestingIsAnErrorNamingTheEvent) {
  TempDir dir("quirk_deep");
  std::string deep = R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2},
    {"ph": "X", "cat": "cpu_op", "name": "cat", "pid": 1, "tid": 1, "ts": 1, "dur": 2, "args": {"Input Dims": )" +
                     std::string(100000, '[') + std::string(100000, ']') + "}}]}";
  std::string p = dir.write("d.json", deep);
  EXPECT_EQ(import_error(p), "[import] " + p + ": event 1: its args hold lists nested deeper than 32 levels");
  std::string root = dir.write("r.json", std::string(100000, '[') + std::string(100000, ']'));
  EXPECT_EQ(import_error(root).rfind("[import] " + root + ": ", 0), 0u) << import_error(root);
}

// A 100 kB name (a generated kernel's, a module's repr) survives whole.
TEST(ImportQuirks, A100kBNameSurvivesWhole) {
  TempDir dir("quirk_long_name");
  std::string name(100 * 1024, 'n');
  name[0] = '<', name[name.size() - 1] = '>';
  std::string p = dir.write("n.json", std::string(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": ")") + name +
                                          R"(", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]})");
  importer::ImportResult r = importer::import_traces({p});
  ASSERT_EQ(r.trace.events.size(), 1u);
  EXPECT_EQ(r.trace.events[0].name, name);
}

// Found by fuzz_kineto_json: a baseTimeNanoseconds near INT64_MAX overflowed base + ts
// (UBSan). A base outside 1970..2096 is an error naming the file and the field; the
// largest that fits still loads, its times exact.
TEST(ImportQuirks, BaseTimeOutOfRangeIsAnErrorNamingTheField) {
  TempDir dir("quirk_base_time");
  auto trace = [](const std::string& base) {
    return R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 10, "dur": 2}],
               "baseTimeNanoseconds": )" + base + "}";
  };
  for (const char* base : {"9223372036854775807", "4000000000000000001", "-1"}) {
    std::string p = dir.write("b.json", trace(base));
    EXPECT_EQ(import_error(p), "[import] " + p + ": baseTimeNanoseconds " + base +
                                   " is not a time from 1970 to 2096 (ns since the epoch)");
  }
  importer::ImportResult r = importer::import_traces({dir.write("ok.json", trace("4000000000000000000"))});
  EXPECT_EQ(r.trace.wall_time_ns, 4000000000000010000);
  const prof::TraceEvent& a = only(r.trace, EventKind::op, "a");
  EXPECT_EQ(a.t1 - a.t0, 2000);
}

}  // namespace
}  // namespace opscope::test
