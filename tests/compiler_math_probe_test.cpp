// The math probe: what each math op costs inside a generated kernel, measured on the CPU
// device, for every op the advisor treats as math (and only those), carried in the
// device peaks the advisor reads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "opscope/analysis/advisor/op_kinds.h"
#include "opscope/analysis/advisor/pricing.h"
#include "opscope/compiler/math_probe.h"
#include "opscope/core/error.h"
#include "opscope/runtime/device.h"

using namespace opscope;
namespace fs = std::filesystem;

namespace {

// A cache folder of its own, so the probe's kernels are built here, not found.
struct TempCache {
  std::string dir = fs::temp_directory_path().string() + "/opscope-math-probe-" + std::to_string(::getpid());
  TempCache() { ::setenv("OPSCOPE_CACHE_DIR", dir.c_str(), 1); }
  ~TempCache() {
    ::unsetenv("OPSCOPE_CACHE_DIR");
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

}  // namespace

// The probe covers the advisor's math ops: one it did not measure would be priced at
// the eager kernel's time again; one the advisor does not count as math, never used.
TEST(MathProbe, ProbesExactlyTheAdvisorsMathOps) {
  for (std::string_view op : compiler::probed_math_ops()) EXPECT_TRUE(advisor::math_op(op)) << op;
  for (const char* op : {"exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "silu", "gelu", "pow", "div"}) {
    const auto& ops = compiler::probed_math_ops();
    EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op;
  }
  for (const char* op : {"add", "mul", "neg", "relu", "to", "sum"}) EXPECT_FALSE(advisor::math_op(op)) << op;
}

TEST(MathProbe, MeasuresEveryOpInAGeneratedKernelAndTheAdvisorReadsIt) {
  TempCache cache;
  compiler::MathCosts m = compiler::measure_math_costs(cpu(), 2);
  ASSERT_EQ(m.ns_per_element.size(), compiler::probed_math_ops().size()) << m.to_json();
  for (auto& [op, ns] : m.ns_per_element) {
    EXPECT_GT(ns, 0) << op;
    EXPECT_LT(ns, 1e4) << op;  // 32K elements per core in well under a second
  }
  EXPECT_NE(m.method.find("op(x) * y"), std::string::npos) << m.method;
  // Carried in device peaks under its key, read back by the advisor's pricing.
  nlohmann::json peaks = {{"stream_gbps", 10.0}};
  peaks[std::string(compiler::kMathCostsKey)] = nlohmann::json::parse(m.to_json());
  std::map<std::string, double> read = advisor::generated_math_ns(peaks.dump());
  EXPECT_EQ(read, m.ns_per_element);
  EXPECT_TRUE(advisor::generated_math_ns(R"({"stream_gbps": 10})").empty());
  EXPECT_TRUE(advisor::generated_math_ns("").empty());
  EXPECT_TRUE(advisor::generated_math_ns("not json").empty());
}

TEST(MathProbe, RefusesNoRepeats) {
  try {
    compiler::measure_math_costs(cpu(), 0);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[math probe] repeats must be at least 1", 0), 0u) << e.what();
  }
}
