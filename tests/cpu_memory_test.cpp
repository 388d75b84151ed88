// The CPU device's memory capacity: the allocator counts what it reserves against it and
// raises its out-of-memory error (op, bytes, allocated / reserved / capacity) before the
// machine's OOM killer would end the process; OPSCOPE_CPU_MEMORY sets it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "cli_util.h"
#include "opscope/core/error.h"
#include "opscope/ops/ops.h"
#include "opscope/runtime/cpu_device.h"
#include "opscope/runtime/host_memory.h"
#include "test_util.h"

using namespace opscope;
using test_util::error_of;

namespace {

constexpr int64_t kMiB = int64_t(1) << 20;

}  // namespace

TEST(CpuMemory, ParsesBytesAndSuffixesAndNamesTheVariableOnBadValues) {
  EXPECT_EQ(parse_memory_size("1073741824", "X"), int64_t(1) << 30);
  EXPECT_EQ(parse_memory_size("512K", "X"), 512 * 1024);
  EXPECT_EQ(parse_memory_size("64M", "X"), 64 * kMiB);
  EXPECT_EQ(parse_memory_size("16g", "X"), int64_t(16) << 30);
  EXPECT_EQ(parse_memory_size("16GB", "X"), int64_t(16) << 30);
  EXPECT_EQ(parse_memory_size("2GiB", "X"), int64_t(2) << 30);
  EXPECT_EQ(parse_memory_size("1T", "X"), int64_t(1) << 40);
  for (const char* bad : {"", "lots", "-1G", "0", "1.5G", "12Q", "1GG", "G", "99999999999T"}) {
    std::string msg = error_of([&] { parse_memory_size(bad, "OPSCOPE_CPU_MEMORY"); });
    EXPECT_EQ(msg.rfind(std::string("[OPSCOPE_CPU_MEMORY] '") + bad + "' is not a size", 0), 0u) << bad << ": " << msg;
  }
}

TEST(CpuMemory, DefaultCapacityIsTheMachinesAvailableMemory) {
  int64_t avail = mem_available_bytes();
  ASSERT_GT(avail, 0) << "no MemAvailable in /proc/meminfo";
  test_util::ScopedEnv unset("OPSCOPE_CPU_MEMORY");  // the default, whatever this shell sets
  CpuDevice dev(1, false);
  int64_t cap = memory_stats(dev).capacity;
  // MemAvailable moves with the machine's other work: within a quarter of now.
  EXPECT_GT(cap, avail * 3 / 4);
  EXPECT_LT(cap, avail * 5 / 4);
}

TEST(CpuMemory, AllocationPastTheCapacityRaisesTheAllocatorsError) {
  CpuDevice dev(1, false, 64 * kMiB);
  EXPECT_EQ(memory_stats(dev).capacity, 64 * kMiB);
  Tensor a = empty({12 * kMiB}, DType::f32, &dev);  // 48 MiB
  std::string msg = error_of([&] { empty({12 * kMiB}, DType::f32, &dev); });
  EXPECT_EQ(msg,
            "[empty] " + dev.name() +
                ": out of memory allocating 48.00 MB (50331648 bytes): allocated 48.00 MB, reserved 48.00 MB, "
                "capacity 64.00 MB (MemAvailable at start, or OPSCOPE_CPU_MEMORY); the cache was emptied and the "
                "allocation retried: free tensors or use smaller shapes");
  AllocatorStats st = memory_stats(dev);
  EXPECT_EQ(st.allocated, 48 * kMiB);
  EXPECT_EQ(st.reserved, 48 * kMiB) << "the refused request is not counted";
  EXPECT_EQ(add(empty({4}, DType::f32, &dev), 1.0).shape().numel(), 4);  // still usable
}

TEST(CpuMemory, EmptiesTheCacheBeforeRefusing) {
  CpuDevice dev(1, false, 64 * kMiB);
  { Tensor a = empty({12 * kMiB}, DType::f32, &dev); }  // 48 MiB, now cached
  dev.synchronize();
  EXPECT_EQ(memory_stats(dev).reserved, 48 * kMiB);
  // 20 MiB: too small for the cached block, too big beside it; fits once the cache is given back.
  Tensor b = empty({5 * kMiB}, DType::f32, &dev);
  AllocatorStats st = memory_stats(dev);
  EXPECT_EQ(st.allocated, 20 * kMiB);
  EXPECT_EQ(st.reserved, 20 * kMiB);
}

// The issue's `opscope profile rmsnorm --impl naive --shape 20000x100000`, scaled down:
// the op that passes the capacity fails with the allocator's error and status 1.
TEST(CpuMemory, CliProfileTooBigForTheCapacityFailsNamingTheOp) {
  namespace fs = std::filesystem;
  fs::path out = fs::temp_directory_path() / ("opscope_cpu_memory_" + std::to_string(::getpid()));
  std::string cmd = "OPSCOPE_CPU_MEMORY=256M " + testutil::shell_quote(testutil::opscope_binary()) +
                    " profile rmsnorm --impl naive --shape 8192x4096 --iters 1 --warmup 1 --out " +
                    testutil::shell_quote(out.string()) + " 2>&1";
  testutil::CliResult r = testutil::run_shell(cmd);
  EXPECT_EQ(r.status, 1) << r.out;
  // x (128 MiB) fits beside the cached probe arrays once they are given back; x * x does not.
  EXPECT_NE(r.out.find("opscope: [mul] cpu:0: out of memory allocating 128.00 MB (134217728 bytes): allocated "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("capacity 256.00 MB"), std::string::npos) << r.out;

  fs::remove_all(out);
  // A bad variable fails before the output folder is made.
  for (const char* cmd : {"profile rmsnorm --shape 16x64", "profile llama --preset tiny --tokens 4 --decode 1"}) {
    r = testutil::run_shell("OPSCOPE_CPU_MEMORY=lots " + testutil::shell_quote(testutil::opscope_binary()) + " " +
                            cmd + " --out " + testutil::shell_quote(out.string()) + " 2>&1");
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_NE(r.out.find("[OPSCOPE_CPU_MEMORY] 'lots' is not a size"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(out)) << cmd << ": made " << out;
    r = testutil::run_shell("OPSCOPE_CPU_SCHEDULE=bogus " + testutil::shell_quote(testutil::opscope_binary()) + " " +
                            cmd + " --out " + testutil::shell_quote(out.string()) + " 2>&1");
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_NE(r.out.find("[OPSCOPE_CPU_SCHEDULE] 'bogus' is not a schedule (steal or static)"), std::string::npos)
        << r.out;
    EXPECT_FALSE(fs::exists(out)) << cmd << ": made " << out;
    fs::remove_all(out);
  }
}
