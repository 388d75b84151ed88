// `opscope import` and the commands that take a trace file directly (table, diff,
// advise), run as a user would.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "cli_util.h"
#include "import_util.h"
#include "opscope/profiler/store.h"

namespace opscope::test {
namespace {

using testutil::CliResult;
using testutil::run_opscope;

// Six steps of mul → add on one stream; `add_us` is the add kernel's time.
json steps_trace(double add_us) {
  json ev = json::array();
  double t = 0;
  int64_t corr = 100;
  for (int step = 0; step < 6; ++step) {
    ev.push_back(x_event("user_annotation", "ProfilerStep#" + std::to_string(step), 1, 1, t, 30));
    for (auto [op, kernel, us] : {std::tuple{"aten::mul", "mul_kernel", 2.0}, std::tuple{"aten::add", "add_kernel", add_us}}) {
      ev.push_back(x_event("cpu_op", op, 1, 1, t + 1, 10, {{"External id", corr}}));
      ev.push_back(x_event("cuda_runtime", "cudaLaunchKernel", 1, 1, t + 2, 4, {{"correlation", corr}, {"External id", corr}}));
      ev.push_back(x_event("kernel", kernel, 0, 7, t + 6, us, {{"correlation", corr}}));
      t += 12;
      ++corr;
    }
    t += 10;
  }
  return {{"traceEvents", ev}, {"baseTimeNanoseconds", 5}, {"deviceProperties", {h100()}}};
}

class CliImport : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(std::filesystem::exists(testutil::opscope_binary())); }
  TempDir dir{"cli_import"};
};

TEST_F(CliImport, ImportWritesAProfileThatTableReadsLikeTheTrace) {
  std::string trace = dir.write("run.pt.trace.json", steps_trace(3.0));
  std::string out = dir.file("profile");
  CliResult r = run_opscope({"import", trace, "--out", out});
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "imported 1 file (kineto-2022): 42 events, 12 ops, 12 launches, 12 GPU kernels/copies, 1 devices -> " +
                       out + "\n");
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(out) / "profile.db"));
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(out) / "trace.json"));
  prof::Trace saved = prof::load_profile(out);
  EXPECT_EQ(config(saved)["imported_from"]["files"][0], trace);
  EXPECT_EQ(config(saved)["imported_from"]["format"], "kineto-2022");
  CliResult from_folder = run_opscope({"table", out});
  CliResult from_trace = run_opscope({"table", trace});
  ASSERT_EQ(from_folder.status, 0) << from_folder.out;
  EXPECT_EQ(from_folder.out, from_trace.out);
  EXPECT_TRUE(std::regex_search(from_trace.out, std::regex(R"(\naten::add +.* 18\.000us +\d)"))) << from_trace.out;
  EXPECT_NE(from_trace.out.find("Self Device time total: 30.000us"), std::string::npos) << from_trace.out;
}

TEST_F(CliImport, DefaultOutFolderAndWarningsOnStderr) {
  json t = steps_trace(3.0);
  json bad = x_event("cpu_op", "aten::neg", 1, 1, 5, -1);
  t["traceEvents"].push_back(bad);
  std::string trace = dir.write("step.pt.trace.json", t);
  std::string cmd = "cd " + testutil::shell_quote(dir.path().string()) + " && " + testutil::shell_quote(testutil::opscope_binary()) +
                    " import step.pt.trace.json 2>&1";
  CliResult r = testutil::run_shell(cmd);
  const std::string& out = r.out;
  EXPECT_EQ(r.status, 0) << out;
  EXPECT_NE(out.find("opscope: warning: step.pt.trace.json: 1 events with dur < 0"), std::string::npos) << out;
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "opscope-profile" / "step" / "profile.db")) << out;
}

TEST_F(CliImport, DiffOfTwoImportedTraces) {
  std::string a = dir.write("a.json", steps_trace(3.0));
  std::string b = dir.write("b.json", steps_trace(5.0));
  CliResult r = run_opscope({"diff", a, b, "--json"});
  ASSERT_EQ(r.status, 0) << r.out;
  json j = json::parse(r.out);
  bool op = false, kernel = false, mul_same = false;
  for (const json& row : j["rows"]) {
    if (row["name"] == "aten::add" && row["kind"] == "op") {
      op = true;
      EXPECT_EQ(row["delta"]["self_device_ns"], 12000) << row.dump();
    }
    if (row["name"] == "add_kernel") {
      kernel = true;
      EXPECT_EQ(row["delta"]["device_total_ns"], 12000) << row.dump();
    }
    if (row["name"] == "aten::mul" && row["kind"] == "op") mul_same = row["delta"]["self_device_ns"] == 0;
  }
  EXPECT_TRUE(op && kernel && mul_same) << r.out;
  EXPECT_EQ(j["delta"]["self_device_total_ns"], 12000);
}

TEST_F(CliImport, PeakFlagsGiveTheRooflineOfAGpuTheTableDoesNotKnow) {
  json ev = json::array();
  ev.push_back(x_event("cpu_op", "aten::copy_", 1, 1, 0, 20, {{"External id", 1}}));
  ev.push_back(x_event("cuda_runtime", "cudaMemcpyAsync", 1, 1, 2, 4, {{"correlation", 3}, {"External id", 1}}));
  ev.push_back(x_event("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 0, 7, 8, 10, {{"correlation", 3}, {"bytes", 1000000}}));
  json gpu = {{"id", 0}, {"name", "Prototype GPU X"}};
  std::string trace = dir.write("x.json", json{{"traceEvents", ev}, {"deviceProperties", {gpu}}});
  CliResult plain = run_opscope({"table", trace});
  ASSERT_EQ(plain.status, 0) << plain.out;
  EXPECT_EQ(plain.out.find("% Roof"), std::string::npos) << plain.out;
  EXPECT_NE(plain.out.find("100.00"), std::string::npos) << plain.out;  // 1 MB in 10 µs: 100 GB/s
  CliResult given = run_opscope({"table", trace, "--peak-gbps", "1000", "--peak-gflops", "5000"});
  ASSERT_EQ(given.status, 0) << given.out;
  EXPECT_NE(given.out.find("% Roof"), std::string::npos) << given.out;
  EXPECT_NE(given.out.find("10.0%"), std::string::npos) << given.out;
  // The same flags on import are kept in the profile.
  ASSERT_EQ(run_opscope({"import", trace, "--out", dir.file("p"), "--peak-gbps", "1000", "--peak-gflops", "5000"}).status, 0);
  CliResult saved = run_opscope({"table", dir.file("p")});
  EXPECT_NE(saved.out.find("10.0%"), std::string::npos) << saved.out;
  CliResult bad = run_opscope({"table", trace, "--peak-gbps", "-3"});
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.out.find("[--peak-gbps] -3 is not a bandwidth"), std::string::npos) << bad.out;
}

TEST_F(CliImport, AdviseFindsBackToBackKernelsAndHostIdleTimeInAnImportedTrace) {
  // Six steps of aten::mul then aten::add, each a small kernel the host launches one by
  // one: one suggestion counted over the steps, and the device's wait for the host.
  std::string a = dir.write("a.json", steps_trace(3.0));
  CliResult r = run_opscope({"advise", a});
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("0.030 ms device time in 12 kernels; 1 fusable sequences"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("aten::mul → aten::add"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 ops × 6 calls"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Host-bound: the device waits for launches"), std::string::npos) << r.out;
  // An imported trace has no workload to re-run.
  CliResult v = run_opscope({"advise", a, "--verify"});
  EXPECT_NE(v.status, 0) << v.out;
}

}  // namespace
}  // namespace opscope::test
