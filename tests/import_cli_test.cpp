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
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[4096];
  std::string out;
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, got);
  EXPECT_EQ(::pclose(p), 0) << out;
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

TEST_F(CliImport, AdviseRunsOnAnImportedTrace) {
  // Today's advisor knows opscope's op names (add, mul), not aten's: it runs and finds
  // no fusable sequence in a torch trace.
  std::string a = dir.write("a.json", steps_trace(3.0));
  CliResult r = run_opscope({"advise", a});
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("Fusion advisor: 0 fusable sequences; device time in the profile 0.030 ms"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("over 12 launches"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace opscope::test
