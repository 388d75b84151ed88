// A trace written by the PyTorch on this machine (Debian's torch 1.13, built without
// Kineto: the legacy bare array): profiled, exported with export_chrome_trace, imported;
// every op's calls and CPU total match torch's own key_averages of the same profile.
// Skips (and says so) where /usr/bin/python3 has no torch.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli_util.h"
#include "import_util.h"

namespace opscope::test {
namespace {

const char* kScript = R"PY(
import json, sys, torch
x = torch.randn(64, 64)
with torch.autograd.profiler.profile(record_shapes=True) as p:
    for _ in range(3):
        with torch.autograd.profiler.record_function("block"):
            y = torch.nn.functional.relu(x @ x + 1).sum()
p.export_chrome_trace(sys.argv[1])
rows = [{"name": e.key, "count": e.count, "cpu_total_us": e.cpu_time_total, "self_cpu_us": e.self_cpu_time_total}
        for e in p.key_averages()]
json.dump(rows, open(sys.argv[2], "w"))
)PY";

TEST(ImportTorch, LegacyTraceOfThisMachinesTorchMatchesItsKeyAverages) {
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  TempDir dir("import_torch");
  std::string script = dir.write("profile.py", std::string(kScript));
  std::string trace = dir.file("torch.json"), rows = dir.file("rows.json");
  std::string cmd = "/usr/bin/python3 " + testutil::shell_quote(script) + " " + testutil::shell_quote(trace) + " " +
                    testutil::shell_quote(rows) + " 2>&1";
  testutil::CliResult ran = testutil::run_shell(cmd);
  const std::string& out = ran.out;
  int status = ran.status;
  if (out.find("No module named 'torch'") != std::string::npos) GTEST_SKIP() << "/usr/bin/python3 has no torch";
  ASSERT_EQ(status, 0) << out;

  importer::ImportResult r = importer::import_traces({trace});
  EXPECT_TRUE(r.format == "legacy-array" || r.format.rfind("kineto-", 0) == 0) << r.format;
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  analysis::KeyAverages ka = analysis::key_averages(r.trace);
  json want = json::parse(std::ifstream(rows));
  ASSERT_FALSE(want.empty());
  int matched = 0;
  for (const json& w : want) {
    const std::string name = w["name"];
    const analysis::KeyAverage* mine = nullptr;
    for (const analysis::KeyAverage& k : ka.rows())
      if (k.name == name && k.kind != prof::EventKind::kernel) mine = &k;
    ASSERT_NE(mine, nullptr) << name << " is missing";
    ++matched;
    EXPECT_EQ(mine->count, w["count"].get<int64_t>()) << name;
    // The trace holds whole µs: each call's duration is off by < 1 µs from torch's.
    double tol = 1.0 * double(mine->count) + 0.5;
    EXPECT_NEAR(double(mine->cpu_total_ns) / 1e3, w["cpu_total_us"].get<double>(), tol) << name;
  }
  EXPECT_GE(matched, 8);  // block, matmul, mm, add, relu, sum, ...
}

}  // namespace
}  // namespace opscope::test
