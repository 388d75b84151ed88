// Bad input to the importer: what cannot be read is an error naming the file (and the
// event), what can be skipped is a counted warning, and `opscope import` leaves no
// profile folder behind when it fails.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_util.h"
#include "import_util.h"
#include "opscope/core/error.h"
#include "trace_util.h"

namespace opscope::test {
namespace {

using prof::EventKind;

json small_trace() {
  json ev = json::array();
  ev.push_back(x_event("cpu_op", "aten::add", 1, 1, 10, 20, {{"External id", 1}}));
  ev.push_back(x_event("cuda_runtime", "cudaLaunchKernel", 1, 1, 12, 3, {{"correlation", 5}, {"External id", 1}}));
  ev.push_back(x_event("kernel", "add_kernel", 0, 7, 16, 2, {{"correlation", 5}}));
  return {{"traceEvents", ev}, {"baseTimeNanoseconds", 1000}};
}

void write_gzip(const std::string& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, text.data(), unsigned(text.size())), int(text.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

TEST(ImportBadInput, NotJson) {
  TempDir dir("import_bad_json");
  std::string p = dir.write("bad.json", std::string("this is not json at all"));
  EXPECT_EQ(import_error(p).rfind("[import] " + p + ": not JSON", 0), 0u) << import_error(p);
}

TEST(ImportBadInput, JsonThatIsNotATrace) {
  TempDir dir("import_not_trace");
  for (const char* text : {R"({"name": "a config", "layers": 3})", "42", R"("just a string")", "[1, 2, 3]"}) {
    std::string p = dir.write("x.json", std::string(text));
    std::string e = import_error(p);
    EXPECT_NE(e.find("[import] " + p + ": not a torch.profiler trace"), std::string::npos) << text << ": " << e;
  }
  std::string p = dir.write("y.json", std::string(R"({"traceEvents": {"not": "an array"}})"));
  EXPECT_NE(import_error(p).find("traceEvents is not an array"), std::string::npos) << import_error(p);
}

// JSON with no events opens as nothing a user could tell from a working empty profile: an
// error naming the file (an empty traceEvents, an empty array, events all skipped).
TEST(ImportBadInput, JsonWithNoEventsIsAnErrorNamingTheFile) {
  TempDir dir("import_no_events");
  for (const char* text : {R"({"traceEvents": []})", "[]", R"({"traceEvents": [], "deviceProperties": []})",
                           R"([{"a": 1}])", R"({"traceEvents": [{"ph": "M", "name": "process_name", "pid": 1,
                             "args": {"name": "python"}}]})"}) {
    std::string p = dir.write("x.json", std::string(text));
    std::string e = import_error(p);
    EXPECT_EQ(e.rfind("[import] " + p + ": no events", 0), 0u) << text << ": " << e;
    EXPECT_NE(e.find("not a torch.profiler trace, or one that recorded nothing"), std::string::npos) << e;
  }
  // In a folder of ranks, the empty one is named.
  std::filesystem::create_directories(dir.path() / "ranks");
  std::ofstream(dir.path() / "ranks" / "r0.json") << small_trace().dump();
  std::ofstream(dir.path() / "ranks" / "r1.json") << "[]";
  std::string e = import_error((dir.path() / "ranks").string());
  EXPECT_EQ(e.rfind("[import] " + (dir.path() / "ranks" / "r1.json").string() + ": no events", 0), 0u) << e;
}

// Everywhere a trace is opened (table, diff, advise, explore, import), JSON that is not a
// trace is the same error, naming the file, and nothing is written.
TEST(ImportBadInput, EveryCommandRefusesJsonThatIsNotATrace) {
  using testutil::run_opscope;
  TempDir dir("import_not_trace_cli");
  std::string good = dir.write("good.json", small_trace());
  // (Which JSON gives no events is JsonWithNoEventsIsAnErrorNamingTheFile's; here, one such
  // file through each command.)
  for (const char* text : {R"({"a": 1})"}) {
    std::string bad = dir.write("bad.json", std::string(text));
    const std::vector<std::vector<std::string>> commands = {{"table", bad},
                                                            {"diff", good, bad},
                                                            {"advise", bad},
                                                            {"import", bad, "--out", dir.file("out")},
                                                            {"explore", bad, "--port", "0"}};
    for (const auto& args : commands) {
      testutil::CliResult r = run_opscope(args);
      EXPECT_NE(r.status, 0) << args[0] << " " << text << ":\n" << r.out;
      EXPECT_NE(r.out.find("[import] " + bad + ": "), std::string::npos) << args[0] << " " << text << ":\n" << r.out;
      EXPECT_EQ(r.out.find("http://"), std::string::npos) << args[0] << ": served a profile of nothing\n" << r.out;
    }
    EXPECT_FALSE(std::filesystem::exists(dir.file("out"))) << "import left a profile behind";
  }
}

TEST(ImportBadInput, MissingAndEmptyFiles) {
  TempDir dir("import_missing");
  std::string missing = dir.file("nope.json");
  EXPECT_EQ(import_error(missing), "[import] " + missing + ": cannot open the file");
  std::string empty = dir.write("empty.json", std::string());
  EXPECT_EQ(import_error(empty), "[import] " + empty + ": the file is empty");
  std::filesystem::create_directories(dir.path() / "none");
  std::string none = (dir.path() / "none").string();
  EXPECT_EQ(import_error(none), "[import] " + none + ": no trace files (*.json, *.json.gz) in the folder");
}

TEST(ImportBadInput, TruncatedGzipAndTruncatedJson) {
  TempDir dir("import_truncated");
  // A whole .gz imports like the .json it holds.
  std::string text = small_trace().dump();
  std::string gz = dir.file("whole.pt.trace.json.gz");
  write_gzip(gz, text);
  EXPECT_EQ(analysis::key_averages(importer::import_traces({gz}).trace).self_device_time_total_ns(), 2000);
  // Cut in half: the gzip stream ends early.
  std::ifstream in(gz, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string cut = dir.write("cut.json.gz", bytes.substr(0, bytes.size() / 2));
  std::string e = import_error(cut);
  EXPECT_NE(e.find("[import] " + cut + ": the gzip stream ends early"), std::string::npos) << e;
  // Corrupt data in the middle.
  std::string bad = bytes;
  for (size_t i = 20; i < 40 && i < bad.size(); ++i) bad[i] = char(~bad[i]);
  e = import_error(dir.write("corrupt.json.gz", bad));
  EXPECT_NE(e.find("corrupt gzip data"), std::string::npos) << e;
  // Plain JSON cut after a value of the third event: named by its index.
  size_t third = text.find("add_kernel");
  std::string json_cut = text.substr(0, text.find(',', third));
  std::string p = dir.write("cut.json", json_cut);
  e = import_error(p);
  EXPECT_EQ(e.rfind("[import] " + p + ": event 2 cannot be read", 0), 0u) << e;
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
  // Cut inside a string: the same event.
  p = dir.write("cut2.json", text.substr(0, third + 4));
  e = import_error(p);
  EXPECT_EQ(e, "[import] " + p + ": event 2 cannot be read: the file ends inside it (a truncated file?)");
  // Cut outside the events (in a later key): not JSON.
  json t = small_trace();
  t["zzz"] = {{"a", 1}};
  std::string later = t.dump();
  p = dir.write("cut3.json", later.substr(0, later.size() - 3));
  e = import_error(p);
  EXPECT_EQ(e, "[import] " + p + ": not JSON: the file ends inside the top-level object (a truncated file?)");
}

TEST(ImportBadInput, SkippableEventsAreCountedWarningsWithTheFirstIndex) {
  json t = small_trace();
  auto& ev = t["traceEvents"];
  json no_ts = x_event("cpu_op", "aten::nots", 1, 1, 0, 1);
  no_ts.erase("ts");
  ev.push_back(no_ts);                                              // event 3
  ev.push_back(x_event("cpu_op", "aten::neg", 1, 1, 40, -5));       // event 4
  ev.push_back(no_ts);                                              // event 5
  json odd = x_event("cpu_op", "aten::odd", 1, 1, 50, 1);
  odd["ph"] = "Q";
  ev.push_back(odd);                                                // event 6
  ev.push_back(x_event("cuda_runtime", "cudaLaunchKernel", 1, 1, 25, 2, {{"correlation", 5}}));  // event 7: dup
  ev.push_back(flow("s", 77, 1, 1, 12));                            // event 8: no finish
  ev.push_back(flow("f", 78, 0, 7, 16));                            // event 9: no start
  ev.push_back(x_event("cpu_op", "aten::far", 1, 1, 1e20, 1));      // event 10: ts out of range
  TempDir dir("import_skips");
  std::string p = dir.write("t.json", t);
  importer::ImportResult r = importer::import_traces({p});
  std::vector<std::string> want = {
      p + ": 3 events with no usable ts (missing, no number, or past ±4e15 µs) skipped (first: event 3)",
      p + ": 1 events with dur < 0 (or no number, or past 4e15 µs) skipped (first: event 4)",
      p + ": 1 events with phase \"Q\" skipped (opscope reads X, i, s, f, t, M, C) (first: event 6)",
      p + ": 1 runtime calls with a correlation id an earlier call has (linked by the first only) (first: event 7)",
      p + ": 1 flow end (ph f) whose start lies before the window and 1 flow start (ph s) whose end lies after "
          "it: Kineto's normal edge of the recording window (ignored)"};
  for (const std::string& w : want)
    EXPECT_NE(std::find(r.warnings.begin(), r.warnings.end(), w), r.warnings.end()) << "missing: " << w;
  EXPECT_EQ(r.warnings.size(), want.size());
  EXPECT_EQ(config(r.trace)["imported_from"]["warnings"].size(), want.size());
  // The rest imports: the kernel on its op, the second call with that correlation unlinked.
  analysis::KeyAverages ka = analysis::key_averages(r.trace);
  EXPECT_EQ(row(ka, "aten::add").self_device_ns, 2000);
  int launches = 0;
  for (const prof::TraceEvent& e : r.trace.events) launches += e.kind == EventKind::launch;
  EXPECT_EQ(launches, 1);
}

TEST(ImportBadInput, TwoFilesOfOneRankAreRefused) {
  json t = small_trace();
  t["distributedInfo"] = {{"rank", 0}, {"world_size", 2}};
  TempDir dir("import_dup_rank");
  std::string a = dir.write("a.json", t), b = dir.write("b.json", t);
  try {
    importer::import_traces({a, b});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "[import] " + b + ": rank 0 again (" + a + " is rank 0 too): give the ranks of one run");
  }
}

TEST(ImportBadInput, CliFailsWithoutWritingAProfileFolder) {
  TempDir dir("import_cli_bad");
  std::string out = dir.file("out");
  std::string bad = dir.write("bad.json", std::string("{\"traceEvents\": [ {\"ph\": \"X\", "));
  testutil::CliResult r = testutil::run_opscope({"import", bad, "--out", out});
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_EQ(r.out.rfind("opscope: [import] " + bad + ": ", 0), 0u) << r.out;
  EXPECT_FALSE(std::filesystem::exists(out));
  // The same for table on the trace itself.
  r = testutil::run_opscope({"table", bad});
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("[import] " + bad), std::string::npos) << r.out;
}

}  // namespace
}  // namespace opscope::test
