// The compiler from the command line, run as a user would (the built tools/opscope):
// `opscope compile rmsnorm --explain`, `opscope cache ls|show|clear`, and the compiled
// case study's saved profile carrying its artifact.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "cli_util.h"
#include "opscope/profiler/store.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using opscope::testutil::CliResult;
using opscope::testutil::opscope_binary;

CliResult run(const std::vector<std::string>& args) { return opscope::testutil::run_opscope(args); }

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

std::string hash_in(const std::string& out) {
  std::smatch m;
  return std::regex_search(out, m, std::regex("hash ([0-9a-f]{16})")) ? m[1].str() : "";
}

const char* kKernel = "fused_mul_mean_add_rsqrt_mul_mul_f32";

// Two empty folders: the cache OPSCOPE_CACHE_DIR names for the commands, and another.
class CompilerCli : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(opscope_binary())) << opscope_binary();
    std::string base = fs::temp_directory_path().string() + "/opscope-ccli-" + std::to_string(::getpid()) + "-" +
                       ::testing::UnitTest::GetInstance()->current_test_info()->name();
    env_cache_ = base + "/env-cache";
    other_ = base + "/other";
    base_ = base;
    fs::remove_all(base);
    fs::create_directories(env_cache_);
    fs::create_directories(other_);
    ::setenv("OPSCOPE_CACHE_DIR", env_cache_.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("OPSCOPE_CACHE_DIR");
    std::error_code ec;
    fs::remove_all(base_, ec);
  }
  std::string base_, env_cache_, other_;
};

}  // namespace

TEST_F(CompilerCli, CacheListsShowsAndClearsWhatCompileBuilt) {
  CliResult cold = run({"compile", "rmsnorm", "--shape", "4x32"});
  ASSERT_EQ(cold.status, 0) << cold.out;
  EXPECT_TRUE(has(cold.out, "(built)")) << cold.out;
  EXPECT_TRUE(has(cold.out, kKernel)) << cold.out;
  std::string hash = hash_in(cold.out);
  ASSERT_EQ(hash.size(), 16u) << cold.out;
  EXPECT_TRUE(has(cold.out, env_cache_ + "/" + hash)) << cold.out;
  EXPECT_TRUE(has(cold.out, "warm (a fresh compile() of the same function in this process")) << cold.out;

  CliResult warm = run({"compile", "rmsnorm", "--shape", "4x32"});
  ASSERT_EQ(warm.status, 0) << warm.out;
  EXPECT_TRUE(has(warm.out, "(cache hit)")) << warm.out;
  EXPECT_EQ(hash_in(warm.out), hash);

  CliResult ls = run({"cache", "ls"});
  ASSERT_EQ(ls.status, 0) << ls.out;
  EXPECT_TRUE(has(ls.out, "1 artifact\n")) << ls.out;
  EXPECT_TRUE(has(ls.out, hash + "  rms_norm_compiled")) << ls.out;
  EXPECT_TRUE(has(ls.out, "  ok\n")) << ls.out;

  CliResult show = run({"cache", "show", hash.substr(0, 5)});
  ASSERT_EQ(show.status, 0) << show.out;
  EXPECT_TRUE(has(show.out, "artifact " + hash + "\n")) << show.out;
  EXPECT_TRUE(has(show.out, std::string("kernel   ") + kKernel)) << show.out;
  EXPECT_TRUE(has(show.out, "kernels.cpp")) << show.out;
  EXPECT_TRUE(has(show.out, "\"hash\": \"" + hash + "\"")) << show.out;

  CliResult clear = run({"cache", "clear"});
  ASSERT_EQ(clear.status, 0) << clear.out;
  EXPECT_TRUE(has(clear.out, "removed 1 artifact from " + env_cache_)) << clear.out;
  EXPECT_FALSE(fs::exists(env_cache_ + "/" + hash));
  CliResult empty = run({"cache", "ls"});
  EXPECT_TRUE(has(empty.out, "0 artifacts")) << empty.out;
}

TEST_F(CompilerCli, DirFlagChoosesTheCacheAndBadHashesOrFoldersAreNamed) {
  CliResult built = run({"compile", "rmsnorm", "--shape", "2x16", "--dir", other_});
  ASSERT_EQ(built.status, 0) << built.out;
  std::string hash = hash_in(built.out);
  ASSERT_EQ(hash.size(), 16u) << built.out;
  EXPECT_TRUE(fs::exists(other_ + "/" + hash + "/manifest.json"));
  EXPECT_FALSE(fs::exists(env_cache_ + "/" + hash));

  EXPECT_TRUE(has(run({"cache", "ls"}).out, "0 artifacts"));
  CliResult ls = run({"cache", "ls", "--dir", other_});
  EXPECT_TRUE(has(ls.out, hash)) << ls.out;
  EXPECT_EQ(run({"cache", "show", hash, "--dir", other_}).status, 0);

  CliResult missing = run({"cache", "show", hash});  // not in the env's cache
  EXPECT_EQ(missing.status, 1) << missing.out;
  EXPECT_TRUE(has(missing.out, "[cache] no artifact starts with '" + hash + "'")) << missing.out;
  CliResult not_hex = run({"cache", "show", "xyz", "--dir", other_});
  EXPECT_EQ(not_hex.status, 1) << not_hex.out;
  EXPECT_TRUE(has(not_hex.out, "'xyz' is not an artifact hash")) << not_hex.out;
  for (const char* sub : {"ls", "clear"}) {
    CliResult bad = run({"cache", sub, "--dir", base_ + "/nope"});
    EXPECT_EQ(bad.status, 1) << bad.out;
    EXPECT_TRUE(has(bad.out, "[--dir] no such folder '" + base_ + "/nope'")) << bad.out;
  }
  EXPECT_NE(run({"cache"}).status, 0);  // a subcommand is required
  EXPECT_TRUE(fs::exists(other_ + "/" + hash));  // nothing above cleared it
  EXPECT_TRUE(has(run({"cache", "clear", "--dir", other_}).out, "removed 1 artifact"));
  EXPECT_FALSE(fs::exists(other_ + "/" + hash));
}

TEST_F(CompilerCli, CompileExplainShowsEachPassAndPassesSwitchOff) {
  CliResult ex = run({"compile", "rmsnorm", "--explain", "--shape", "4x32"});
  ASSERT_EQ(ex.status, 0) << ex.out;
  for (const char* s : {"-- traced --", "mean(", "-- after cse --", "-- after fuse --", "fused kernels: 1",
                        "cold (first call", "max |compiled - eager|"})
    EXPECT_TRUE(has(ex.out, s)) << s << "\n" << ex.out;
  CliResult plain = run({"compile", "rmsnorm", "--shape", "4x32"});
  EXPECT_FALSE(has(plain.out, "-- after cse --")) << plain.out;  // the per-pass log needs --explain

  CliResult off = run({"compile", "rmsnorm", "--explain", "--shape", "4x32", "--disable-pass", "fuse",
                       "--disable-pass", "cse"});
  ASSERT_EQ(off.status, 0) << off.out;
  EXPECT_TRUE(has(off.out, "-- fuse: off --")) << off.out;
  EXPECT_TRUE(has(off.out, "-- cse: off --")) << off.out;
  EXPECT_TRUE(has(off.out, "fused kernels: 0   eager nodes: 6")) << off.out;

  CliResult bad = run({"compile", "rmsnorm", "--disable-pass", "fusion"});
  EXPECT_EQ(bad.status, 1) << bad.out;
  EXPECT_TRUE(has(bad.out, "[--disable-pass] unknown pass 'fusion' (passes: dce, cse, fold, fuse, attention, rotary, pack, residual, all)")) << bad.out;
  CliResult shape = run({"compile", "rmsnorm", "--shape", "4by32"});
  EXPECT_EQ(shape.status, 1) << shape.out;
  EXPECT_TRUE(has(shape.out, "[--shape]")) << shape.out;
}

TEST_F(CompilerCli, CompiledCaseStudyProfileRecordsItsArtifactAndCompilation) {
  std::string out = base_ + "/profile";
  CliResult r = run({"profile", "rmsnorm", "--impl", "compiled", "--shape", "4x32", "--iters", "2", "--warmup", "0",
                     "--out", out});
  ASSERT_EQ(r.status, 0) << r.out;
  opscope::prof::Trace t = opscope::prof::load_profile(out + "/compiled");
  json config = json::parse(t.config_json);
  ASSERT_TRUE(config.contains("artifacts")) << t.config_json.substr(0, 400);
  const json& a = config["artifacts"].at(kKernel);
  std::string hash = a.at("hash");
  EXPECT_EQ(a.at("dir"), env_cache_ + "/" + hash);
  EXPECT_EQ(a.at("manifest").at("kernels")[0].at("name"), kKernel);
  EXPECT_TRUE(has(a.at("source").get<std::string>(), a.at("symbol").get<std::string>()));
  int compiles = 0, calls = 0;
  for (const auto& e : t.events) {
    compiles += e.kind == opscope::prof::EventKind::op && e.name == "compile:rms_norm_compiled";
    calls += e.kind == opscope::prof::EventKind::op && e.name == "rms_norm_compiled";
  }
  EXPECT_EQ(compiles, 1);  // --warmup 0: the first profiled call compiles
  EXPECT_EQ(calls, 1);
}
