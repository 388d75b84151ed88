// `opscope advise` through the binary: the ranking of a real eager decoder profile, its
// JSON, --verify re-running the case study with the suggested regions compiled, and
// the errors for profiles it cannot advise on or verify.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_util.h"

namespace fs = std::filesystem;
using nlohmann::json;
using opscope::testutil::CliResult;
using opscope::testutil::run_opscope;

namespace {

class CliAdvise : public ::testing::Test {
 protected:
  static inline fs::path dir = fs::temp_directory_path() / ("opscope_cli_advise_" + std::to_string(::getpid()));
  static void SetUpTestSuite() {
    ::setenv("OPSCOPE_CACHE_DIR", (dir / "cache").c_str(), 1);
    CliResult r = run_opscope({"profile", "llama", "--preset", "tiny", "--tokens", "16", "--decode", "2", "--mode",
                               "eager", "--iters", "1", "--warmup", "1", "--out", (dir / "llama").string()});
    ASSERT_EQ(r.status, 0) << r.out;
    r = run_opscope({"profile", "rmsnorm", "--impl", "naive", "--shape", "8x64", "--iters", "2", "--out",
                     (dir / "rms").string()});
    ASSERT_EQ(r.status, 0) << r.out;
  }
  static void TearDownTestSuite() {
    ::unsetenv("OPSCOPE_CACHE_DIR");
    fs::remove_all(dir);
  }
};

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_F(CliAdvise, RanksTheDecodersFusableSequences) {
  CliResult r = run_opscope({"advise", (dir / "llama" / "eager").string(), "--limit", "0"});
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(has(r.out, "Fusion advisor:")) << r.out;
  EXPECT_TRUE(has(r.out, "mul → mean → add → rsqrt → mul → mul")) << r.out;  // the op-by-op RMSNorm
  EXPECT_TRUE(has(r.out, "silu → mul")) << r.out;                            // SwiGLU
  EXPECT_TRUE(has(r.out, "launch cost")) << r.out;

  CliResult j = run_opscope({"advise", (dir / "llama" / "eager").string(), "--json", "--limit", "3"});
  ASSERT_EQ(j.status, 0) << j.out;
  json doc = json::parse(j.out);
  ASSERT_EQ(doc["suggestions"].size(), 3u);
  double prev = 1e300;
  for (auto& s : doc["suggestions"]) {  // ranked by the predicted saving
    EXPECT_LE(s["predicted_saved_ns"].get<double>(), prev);
    prev = s["predicted_saved_ns"].get<double>();
    EXPECT_LE(s["predicted_saved_ns"].get<double>(), s["device_ns"].get<double>());
    EXPECT_GE(s["ops"].size(), 2u);
  }
}

TEST_F(CliAdvise, VerifyCompilesTheRegionsAndReportsPredictedAndRealized) {
  CliResult r = run_opscope({"advise", (dir / "llama" / "eager").string(), "--verify", "--top", "3", "--reps", "1",
                             "--json"});
  ASSERT_EQ(r.status, 0) << r.out;
  json v = json::parse(r.out);
  ASSERT_FALSE(v["checks"].empty()) << r.out;
  for (auto& c : v["checks"]) {
    EXPECT_TRUE(c["region"] == "rms_norm" || c["region"] == "rope" || c["region"] == "swiglu" ||
                c["region"] == "attention")
        << c;
    EXPECT_GT(c["predicted_saved_ns"].get<double>(), 0) << c;
    EXPECT_GT(c["eager_ns"].get<double>(), 0) << c;
    EXPECT_GT(c["compiled_ns"].get<double>(), 0) << c;
    EXPECT_EQ(c["realized_runs_ns"].size(), 1u);
  }
  EXPECT_TRUE(has(v["workload"].get<std::string>(), "llama tiny")) << v["workload"];
}

TEST_F(CliAdvise, BadInputIsNamed) {
  CliResult r = run_opscope({"advise", (dir / "rms" / "naive").string(), "--verify"});
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(has(r.out, "[advise --verify] the profile was not written by `opscope profile llama`")) << r.out;
  r = run_opscope({"advise", (dir / "missing").string()});
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(has(r.out, "missing")) << r.out;
  r = run_opscope({"advise", (dir / "rms" / "naive").string(), "--min-ops", "1"});
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_TRUE(has(r.out, "--min-ops")) << r.out;
  // The op-by-op RMSNorm profile itself advises fine: one six-op chain per call.
  r = run_opscope({"advise", (dir / "rms" / "naive").string()});
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(has(r.out, "norm")) << r.out;
}
