// The README's "The CPU device uses all hardware threads; OPSCOPE_CPU_CORES=N sets its
// core count": the process's CPU device (cpu(), made once per process, so each case runs
// in a child of its own), and the same through the CLI.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "cli_util.h"
#include "opscope/core/error.h"
#include "opscope/runtime/device.h"

namespace {

// Prints the process CPU device's core count, or the error making it raised.
OPSCOPE_CHILD_ENTRY(cpu_device_cores) {
  try {
    std::printf("cores: %d\n", opscope::cpu().num_cores());
  } catch (const opscope::Error& e) {
    std::printf("error: %s\n", e.what());
  }
  return 0;
}

std::string cores_with(const std::vector<std::string>& env) {
  opscope::testutil::ChildResult r = opscope::testutil::run_child("cpu_device_cores", env);
  if (r.status != 0) return "exit " + std::to_string(r.status) + ": " + r.log;
  size_t at = r.log.find("cores: ");
  if (at == std::string::npos) at = r.log.find("error: ");
  return at == std::string::npos ? r.log : r.log.substr(at, r.log.find('\n', at) - at);
}

}  // namespace

TEST(CpuCores, TheDeviceUsesAllHardwareThreads) {
  EXPECT_EQ(cores_with({"OPSCOPE_CPU_CORES"}), "cores: " + std::to_string(std::thread::hardware_concurrency()));
}

TEST(CpuCores, OpscopeCpuCoresSetsTheCount) {
  EXPECT_EQ(cores_with({"OPSCOPE_CPU_CORES=3"}), "cores: 3");  // more than this machine's CPUs is allowed
  EXPECT_EQ(cores_with({"OPSCOPE_CPU_CORES=1"}), "cores: 1");
  EXPECT_EQ(cores_with({"OPSCOPE_CPU_CORES="}), "cores: " + std::to_string(std::thread::hardware_concurrency()));
}

TEST(CpuCores, ABadCountIsAnErrorNamingTheVariable) {
  for (const char* bad : {"0", "3x", "5000"})  // (each a process: cpu() is made once)
    EXPECT_EQ(cores_with({std::string("OPSCOPE_CPU_CORES=") + bad}),
              std::string("error: [OPSCOPE_CPU_CORES] '") + bad + "' is not a core count (1..4096)")
        << bad;
}

TEST(CpuCores, TheCliReportsTheCoreCountItRunsWith) {
  using opscope::testutil::run_shell;
  using opscope::testutil::shell_quote;
  std::string dir = ::testing::TempDir() + "opscope_cpu_cores_" + std::to_string(::getpid());
  std::string cmd = "OPSCOPE_CPU_CORES=3 " + shell_quote(opscope::testutil::opscope_binary()) +
                    " profile rmsnorm --impl builtin --shape 8x64 --iters 1 --out " +
                    shell_quote(dir) + " 2>&1";
  opscope::testutil::CliResult r = run_shell(cmd);
  EXPECT_NE(r.out.find("CPU device cpu:0 with 3 cores"), std::string::npos) << r.out;
  r = run_shell("OPSCOPE_CPU_CORES=0 " + shell_quote(opscope::testutil::opscope_binary()) +
                " profile rmsnorm --shape 8x64 --out " + shell_quote(dir) + " 2>&1");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("[OPSCOPE_CPU_CORES] '0' is not a core count"), std::string::npos) << r.out;
  std::filesystem::remove_all(dir);
}
