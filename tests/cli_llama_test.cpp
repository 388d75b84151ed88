// `opscope profile llama`, run as a user would: tables with the model's ranges, eager
// and compiled profiles that load back with the model facts, and bad flags named.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "opscope/models/llama.h"
#include "opscope/profiler/store.h"

namespace fs = std::filesystem;
using nlohmann::json;
using opscope::testutil::CliResult;
using opscope::testutil::run_opscope;

namespace {

class CliLlama : public ::testing::Test {
 protected:
  fs::path dir = fs::temp_directory_path() /
                 ("opscope_cli_llama_" + std::to_string(::getpid()) + "_" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::string cache = (dir / "cache").string();
  void SetUp() override {
    ASSERT_TRUE(fs::exists(opscope::testutil::opscope_binary())) << "build the opscope_cli target";
    ::setenv("OPSCOPE_CACHE_DIR", cache.c_str(), 1);  // the compiled mode's kernels, for this test only
  }
  void TearDown() override {
    ::unsetenv("OPSCOPE_CACHE_DIR");
    fs::remove_all(dir);
  }
};

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The line of `out` that starts with `name` followed by spaces (a table row).
bool has_row(const std::string& out, const std::string& name) { return has(out, "\n" + name + " "); }

}  // namespace

TEST_F(CliLlama, ProfilesEagerAndCompiledWithRangesAndModelFacts) {
  std::string out = (dir / "prof").string();
  CliResult r = run_opscope({"profile", "llama", "--preset", "tiny", "--tokens", "8", "--mode", "all", "--out", out});
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(has(r.out, "== eager (saved to " + out + "/eager)")) << r.out;
  EXPECT_TRUE(has(r.out, "== compiled (saved to " + out + "/compiled)")) << r.out;
  EXPECT_TRUE(has(r.out, "Self Device time total")) << r.out;
  for (const char* row : {"layers.0", "layers.1", "self_attn", "mlp", "prefill", "decode", "lm_head", "matmul",
                          "llama_rms_norm", "eager/compiled"})
    EXPECT_TRUE(has_row(r.out, row)) << row << "\n" << r.out;

  for (const char* mode : {"eager", "compiled"}) {
    opscope::prof::Trace t = opscope::prof::load_profile(out + "/" + mode);
    std::map<std::string, int> ranges, ops;
    for (const auto& e : t.events) {
      if (e.kind == opscope::prof::EventKind::range) ++ranges[e.name];
      if (e.kind == opscope::prof::EventKind::op) ++ops[e.name];
    }
    // 3 generations of a prefill and 4 decode steps through 2 layers.
    EXPECT_EQ(ranges["prefill"], 3) << mode;
    EXPECT_EQ(ranges["decode"], 12) << mode;
    EXPECT_EQ(ranges["layers.0"], 15) << mode;
    EXPECT_EQ(ranges["self_attn"], 30) << mode;
    EXPECT_EQ(ranges["mlp"], 30) << mode;
    EXPECT_EQ(ops["llama_swiglu"], std::string(mode) == "compiled" ? 30 : 0) << mode;
    EXPECT_EQ(ops["compile:llama_swiglu"], 0) << mode;  // compiled in the warmup, not profiled

    json model = json::parse(t.config_json).at("model");
    EXPECT_EQ(model.at("case"), "llama");
    EXPECT_EQ(model.at("preset"), "tiny");
    EXPECT_EQ(model.at("mode"), mode);
    EXPECT_EQ(model.at("tokens"), 8);
    EXPECT_EQ(model.at("decode"), 4);
    EXPECT_EQ(model.at("compiled_regions").size(), std::string(mode) == "compiled" ? 4u : 0u);
    // Enough to build the same model again.
    EXPECT_EQ(opscope::models::LlamaConfig::from_json(model.at("config").dump()).to_json(),
              opscope::models::LlamaConfig::preset("tiny").to_json());
  }
}

TEST_F(CliLlama, OverridesShrinkThePreset) {
  std::string out = (dir / "small").string();
  CliResult r = run_opscope({"profile", "llama", "--preset", "tinyllama", "--layers", "1", "--vocab", "512", "--tokens",
                             "4", "--decode", "1", "--mode", "eager", "--iters", "1", "--warmup", "0", "--out", out});
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(has(r.out, "Llama tinyllama: 1 layers, dim 2048, 32 heads (4 kv), ffn 5632, vocab 512")) << r.out;
  EXPECT_FALSE(fs::exists(out + "/compiled"));
  json model = json::parse(opscope::prof::load_profile(out + "/eager").config_json).at("model");
  EXPECT_EQ(model.at("config").at("n_layers"), 1);
  EXPECT_EQ(model.at("config").at("vocab"), 512);
}

TEST_F(CliLlama, BadFlagsAreNamed) {
  auto fails_with = [](std::vector<std::string> args, const std::string& message) {
    args.insert(args.begin(), {"profile", "llama"});
    CliResult r = run_opscope(args);
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_EQ(r.out.rfind("opscope: " + message, 0), 0u) << r.out;
  };
  fails_with({"--preset", "gpt2"}, "[--preset] unknown preset 'gpt2' (expected tiny, tinyllama, llama3-8b-layer)");
  fails_with({"--tokens", "0"}, "[--tokens] '0' is not a whole number >= 1");
  fails_with({"--tokens", "many"}, "[--tokens] 'many' is not a whole number >= 1");
  fails_with({"--tokens", "255"}, "[--tokens] 255 prompt tokens and 4 decode steps exceed the model's max_seq 256");
  fails_with({"--mode", "fast"}, "[--mode] unknown mode 'fast' (expected eager, compiled or all)");
  fails_with({"--layers", "-1"}, "[--layers] '-1' is not a whole number >= 1");
  fails_with({"--dtype", "i64"}, "[--dtype] 'i64' is not a floating type (f32, bf16, f16)");
  std::string out = (dir / "out").string();
  fails_with({"--weights", (dir / "none.safetensors").string(), "--out", out},
             "[safetensors] " + (dir / "none.safetensors").string() + ": no such file");
  EXPECT_FALSE(fs::exists(out));  // flags are checked before anything is written
  CliResult r = run_opscope({"profile", "gpt"});
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_EQ(r.out, "opscope: [profile] unknown case study 'gpt' (expected rmsnorm or llama)\n");
  r = run_opscope({"profile", "--tokens", "4", "llama"});  // options belong after the case
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(has(r.out, "[profile] '--tokens' is not an option of 'profile'")) << r.out;
}

TEST_F(CliLlama, LoadsWeightsFromASafetensorsFile) {
  std::string weights = (dir / "tiny.safetensors").string();
  fs::create_directories(dir);
  opscope::models::LlamaModel(opscope::models::LlamaConfig::preset("tiny"), 3).save(weights);
  std::string out = (dir / "w").string();
  CliResult r = run_opscope({"profile", "llama", "--weights", weights, "--tokens", "4", "--decode", "1", "--mode",
                             "eager", "--iters", "1", "--out", out});
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(has(r.out, "weights: " + weights)) << r.out;
  EXPECT_EQ(json::parse(opscope::prof::load_profile(out + "/eager").config_json)["model"]["weights"], weights);
  // A file for another config: the tensor and the file are named.
  r = run_opscope({"profile", "llama", "--weights", weights, "--vocab", "100", "--out", out});
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(has(r.out, "[llama] " + weights + ": tensor 'model.embed_tokens.weight' has shape (256, 64)")) << r.out;
}
