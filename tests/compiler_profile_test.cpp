// A compiled function under the profiler: its compilation is an op of its own, a
// compiled call is one op whose launch and kernels link to it, and the saved profile
// carries each compiled kernel's artifact (hash, folder, manifest, source) in its config.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "opscope/cases/rmsnorm.h"
#include "opscope/compiler/artifacts.h"
#include "opscope/compiler/compile.h"
#include "opscope/profiler/annotate.h"
#include "opscope/profiler/session.h"
#include "opscope/profiler/store.h"
#include "opscope/runtime/device.h"

using namespace opscope;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string temp_dir(const std::string& tag) {
  std::string d = fs::temp_directory_path().string() + "/opscope-cprof-" + tag + "-" + std::to_string(::getpid());
  fs::remove_all(d);
  return d;
}

struct TempCache {
  std::string dir = temp_dir("cache");
  TempCache() { ::setenv("OPSCOPE_CACHE_DIR", dir.c_str(), 1); }
  ~TempCache() {
    ::unsetenv("OPSCOPE_CACHE_DIR");
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

const prof::TraceEvent* find_event(const prof::Trace& t, prof::EventKind k, const std::string& name) {
  for (const auto& e : t.events)
    if (e.kind == k && e.name == name) return &e;
  return nullptr;
}

int count_events(const prof::Trace& t, prof::EventKind k, const std::string& name) {
  int n = 0;
  for (const auto& e : t.events) n += e.kind == k && e.name == name;
  return n;
}

prof::TraceEvent event(prof::EventKind k, const std::string& name, uint64_t id) {
  prof::TraceEvent e;
  e.kind = k;
  e.name = name;
  e.id = id;
  return e;
}

}  // namespace

// Two graphs made kernels of one name; the first is loaded again, from another cache
// folder: a profile of that kernel name now records it, at its new folder (it recorded
// the second graph's, or the first at a folder that may be gone).
TEST(CompilerProfile, AnArtifactLoadedAgainIsTheLatest) {
  const std::string k = "fused_test_reload_f32";
  compiler::register_artifact({{k, k + "_a", "hash_a", "/tmp/first", "/tmp/first/manifest.json"}});
  compiler::register_artifact({{k, k + "_b", "hash_b", "/tmp/second", "/tmp/second/manifest.json"}});
  ASSERT_EQ(compiler::find_kernel_artifact(k)->hash, "hash_b");
  compiler::register_artifact({{k, k + "_a", "hash_a", "/tmp/third", "/tmp/third/manifest.json"}});
  auto a = compiler::find_kernel_artifact(k);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->hash, "hash_a");
  EXPECT_EQ(a->dir, "/tmp/third");
  int entries = 0;
  for (const auto& have : compiler::loaded_kernel_artifacts()) entries += have.kernel == k;
  EXPECT_EQ(entries, 2);  // each artifact once
}

TEST(CompilerProfile, SavedProfileCarriesTheCompiledKernelsArtifact) {
  TempCache cache;
  std::string out = temp_dir("profile");
  auto f = compile([](const Tensor& x, const Tensor& w) { return cases::naive_rms_norm(x, w, 1e-6); }, "rms_profiled");
  Tensor x = randn({8, 64}, 1), w = randn({64}, 2);
  prof::ProfilerConfig cfg;
  cfg.output_dir = out;
  prof::Profiler p(cfg);
  p.start();
  f(x, w);  // the first call compiles (its traced eager run computes the result)
  f(x, w);  // a compiled call: one fused kernel
  cpu().synchronize();
  p.stop();
  prof::export_profile(p.trace(), out);
  prof::Trace t = prof::load_profile(out);
  fs::remove_all(out);

  CompileReport rep = f.report({x, w});
  ASSERT_EQ(rep.kernels.size(), 1u) << rep.str();
  const std::string& kernel = rep.kernels[0];
  json config = json::parse(t.config_json);
  EXPECT_EQ(config.at("output_dir"), out);  // the profiler's own settings stay
  ASSERT_TRUE(config.contains("artifacts")) << t.config_json.substr(0, 400);
  ASSERT_TRUE(config["artifacts"].contains(kernel)) << config["artifacts"].dump().substr(0, 400);
  const json& a = config["artifacts"][kernel];
  EXPECT_EQ(a.at("hash"), rep.hash);
  EXPECT_EQ(a.at("dir"), rep.artifact_dir);
  EXPECT_EQ(a.at("symbol"), rep.symbols[0]);
  ASSERT_TRUE(a.at("manifest").is_object()) << a.dump().substr(0, 400);
  EXPECT_EQ(a["manifest"].at("hash"), rep.hash);
  bool named = false;
  for (const json& k : a["manifest"].at("kernels")) named = named || k.at("name") == kernel;
  EXPECT_TRUE(named) << a["manifest"].dump();
  EXPECT_NE(a.at("source").get<std::string>().find(rep.symbols[0]), std::string::npos);
  EXPECT_FALSE(a.contains("source_truncated"));

  // Compilation is an op of its own, with the traced eager run inside it.
  ASSERT_EQ(count_events(t, prof::EventKind::op, "compile:rms_profiled"), 1);
  const prof::TraceEvent* compile_op = find_event(t, prof::EventKind::op, "compile:rms_profiled");
  const prof::TraceEvent* traced_mean = find_event(t, prof::EventKind::op, "mean");
  ASSERT_NE(traced_mean, nullptr);
  EXPECT_EQ(traced_mean->parent, compile_op->id);
  // The compiled call is one op; the fused kernel's launch and slices link to it.
  ASSERT_EQ(count_events(t, prof::EventKind::op, "rms_profiled"), 1);
  const prof::TraceEvent* call = find_event(t, prof::EventKind::op, "rms_profiled");
  ASSERT_EQ(count_events(t, prof::EventKind::launch, kernel), 1);
  EXPECT_EQ(find_event(t, prof::EventKind::launch, kernel)->parent, call->id);
  ASSERT_GE(count_events(t, prof::EventKind::kernel, kernel), 1);
  for (const auto& e : t.events)
    if (e.kind == prof::EventKind::kernel && e.name == kernel) {
      EXPECT_EQ(e.parent, call->id);
    }
}

TEST(CompilerProfile, LongSourcesAreCutWithANoteAndMissingManifestsSaySo) {
  std::string dir = temp_dir("art") + "/00000000deadbeef";
  fs::create_directories(dir);
  std::string big(300 * 1024, 'x');
  std::ofstream(dir + "/kernels.cpp") << big;
  std::ofstream(dir + "/manifest.json")
      << R"({"hash": "00000000deadbeef", "source": "kernels.cpp", "kernels": [{"name": "test_cprof_big"}]})";
  compiler::register_artifact({{"test_cprof_big", "test_cprof_big_1", "00000000deadbeef", dir, dir + "/manifest.json"},
                               {"test_cprof_gone", "test_cprof_gone_1", "00000000feedface", "/nonexistent/feedface",
                                "/nonexistent/feedface/manifest.json"}});
  prof::Trace t;
  t.config_json = R"({"layers":"framework,runtime,device"})";
  t.events.push_back(event(prof::EventKind::launch, "test_cprof_big", 7));
  t.events.push_back(event(prof::EventKind::kernel, "test_cprof_big", 7));
  t.events.push_back(event(prof::EventKind::kernel, "test_cprof_gone", 8));  // device layer only
  prof::annotate_trace(t);  // the hook register_artifact installed
  fs::remove_all(fs::path(dir).parent_path());

  json config = json::parse(t.config_json);
  EXPECT_EQ(config.at("layers"), "framework,runtime,device");
  const json& big_entry = config.at("artifacts").at("test_cprof_big");
  std::string src = big_entry.at("source");
  EXPECT_EQ(src.rfind(std::string(compiler::kMaxProfileSource, 'x'), 0), 0u);
  EXPECT_LT(src.size(), compiler::kMaxProfileSource + 200);
  EXPECT_NE(src.find("source cut here"), std::string::npos) << src.substr(compiler::kMaxProfileSource);
  EXPECT_EQ(big_entry.at("source_truncated"), true);
  EXPECT_EQ(big_entry.at("source_bytes"), 300 * 1024);
  EXPECT_EQ(big_entry.at("manifest").at("kernels")[0].at("name"), "test_cprof_big");

  const json& gone = config.at("artifacts").at("test_cprof_gone");
  EXPECT_TRUE(gone.at("manifest").is_null());
  EXPECT_NE(gone.at("manifest_error").get<std::string>().find("/nonexistent/feedface"), std::string::npos);
  EXPECT_TRUE(gone.at("source").is_null());
}

TEST(CompilerProfile, TracesWithoutCompiledKernelsAreLeftAsTheyWere) {
  compiler::register_artifact({{"test_cprof_other", "test_cprof_other_1", "0000000000000001", "/nonexistent/1",
                                "/nonexistent/1/manifest.json"}});
  prof::Trace t;
  t.config_json = R"({"b":1,"a":2})";
  t.events.push_back(event(prof::EventKind::launch, "add_f32", 1));
  t.events.push_back(event(prof::EventKind::op, "test_cprof_other", 2));  // an op, not a kernel
  prof::annotate_trace(t);
  EXPECT_EQ(t.config_json, R"({"b":1,"a":2})");
}
