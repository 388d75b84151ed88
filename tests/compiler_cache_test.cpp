// The artifact cache: a cold build then hits, keys that change with flags and the
// compiler's version, damaged entries rebuilt, compile errors that keep their source
// and output, no compiler, two processes compiling the same graph at once, and the
// `opscope cache` functions. Each test uses its own cache folder (OPSCOPE_CACHE_DIR).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "child_process.h"
#include "compiler_test_util.h"
#include "opscope/compiler/cache.h"
#include "opscope/compiler/cache_cli.h"
#include "opscope/compiler/hash.h"
#include "opscope/compiler/pipeline.h"
#include "opscope/core/error.h"
#include "opscope/runtime/tensor.h"

using namespace opscope;
using namespace opscope::compiler;
using namespace opscope::compiler::testing;
namespace fs = std::filesystem;

namespace {

// A fresh cache folder for one test, set as OPSCOPE_CACHE_DIR while it lives.
struct TempCache {
  std::string dir;
  explicit TempCache(const std::string& tag) {
    dir = fs::temp_directory_path().string() + "/opscope-cache-" + tag + "-" + std::to_string(::getpid());
    fs::remove_all(dir);
    fs::create_directories(dir);
    ::setenv("OPSCOPE_CACHE_DIR", dir.c_str(), 1);
  }
  ~TempCache() {
    ::unsetenv("OPSCOPE_CACHE_DIR");
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

// y = exp(x) * 2 + 1 over 1000 values: one small fused kernel (a fast compile).
Graph small_graph() {
  Graph g;
  g.name = "small";
  int x = input(g, {1000});
  g.outputs = {scalar_op(g, OpKind::add, scalar_op(g, OpKind::mul, unary(g, OpKind::exp, x), 2.0), 1.0)};
  return g;
}

void expect_small_result(const Executable& exe) {
  std::vector<float> xs(1000);
  for (int i = 0; i < 1000; ++i) xs[size_t(i)] = float(i % 17) * 0.1f - 0.8f;
  Tensor y = exe.run({from_host(xs, {1000})}).at(0);
  auto v = y.to_float_vector();
  for (int i = 0; i < 1000; ++i) ASSERT_NEAR(v[size_t(i)], std::exp(double(xs[size_t(i)])) * 2 + 1, 1e-4) << i;
}

CompileReport compile_small(const CompileOptions& opts, Executable* out = nullptr) {
  CompileReport rep;
  Executable exe = compile_graph(small_graph(), opts, rep);
  if (out) *out = std::move(exe);
  return rep;
}

void write_script(const std::string& path, const std::string& body) {
  {
    std::ofstream f(path + ".tmp");
    f << "#!/bin/sh\n" << body;
  }
  fs::permissions(path + ".tmp", fs::perms::owner_all);
  fs::rename(path + ".tmp", path);
}

// Replaces a file by rename (a library this process has mapped is not changed in place).
void replace_file(const std::string& path, const std::string& content) {
  std::ofstream(path + ".new", std::ios::binary) << content;
  fs::rename(path + ".new", path);
}

std::string slurp(const std::string& path) {
  std::string s;
  read_file(path, s);
  return s;
}

ArtifactSpec child_spec(const std::string& root) {
  ArtifactSpec s;
  s.name = "child";
  s.source = "extern \"C\" int twice(void* const* a, long long b, long long e) {\n"
             "  float* x = (float*)a[0];\n  for (long long i = b; i < e; ++i) x[i] *= 2;\n  return 0;\n}\n";
  s.symbols = {"twice"};
  s.compiler = find_compiler("", root);
  s.flags = {"-O2", "-shared", "-fPIC"};
  s.hash = hex64(fnv1a64(s.source + s.compiler.version));
  s.manifest_json = R"({"kernels": [{"name": "twice", "symbol": "twice"}]})";
  return s;
}

}  // namespace

TEST(CompilerCache, ColdBuildThenHit) {
  TempCache c("hit");
  Executable exe;
  CompileReport cold = compile_small({}, &exe);
  EXPECT_FALSE(cold.cache_hit);
  EXPECT_GT(cold.build_ms, 0);
  ASSERT_EQ(cold.kernels.size(), 1u);
  EXPECT_EQ(cold.artifact_dir, c.dir + "/" + cold.hash);
  for (const char* f : {"kernels.so", "kernels.cpp", "manifest.json"}) EXPECT_TRUE(fs::exists(cold.artifact_dir + "/" + f)) << f;
  EXPECT_EQ(slurp(cold.artifact_dir + "/kernels.cpp"), cold.source);
  auto m = nlohmann::json::parse(slurp(cold.artifact_dir + "/manifest.json"));
  EXPECT_EQ(m["hash"], cold.hash);
  EXPECT_EQ(m["kernels"][0]["symbol"], cold.symbols[0]);
  EXPECT_EQ(m["kernels"][0]["name"], "fused_exp_mul_add_f32");
  EXPECT_FALSE(m["compiler"]["version"].get<std::string>().empty());
  EXPECT_NE(m["graph"].get<std::string>().find("fused_exp_mul_add_f32"), std::string::npos);
  EXPECT_EQ(m["inputs"][0]["shape"], nlohmann::json::array({1000}));
  expect_small_result(exe);

  CompileReport warm = compile_small({}, &exe);
  EXPECT_TRUE(warm.cache_hit);
  EXPECT_EQ(warm.hash, cold.hash);
  EXPECT_EQ(warm.build_ms, 0);
  std::printf("[ measure  ] cold build %.0f ms, warm load %.2f ms (manifest check + dlopen)\n", cold.build_ms, warm.load_ms);
  expect_small_result(exe);
  // Same graph, another function name: the same artifact.
  Graph g = small_graph();
  g.name = "renamed";
  CompileReport other;
  compile_graph(std::move(g), {}, other);
  EXPECT_EQ(other.hash, cold.hash);
  EXPECT_TRUE(other.cache_hit);
}

TEST(CompilerCache, FlagsAndCompilerVersionChangeTheKey) {
  TempCache c("key");
  CompileReport base = compile_small({});
  CompileOptions o2;
  o2.cxx_flags = {"-O2", "-march=native"};
  CompileReport flags = compile_small(o2);
  EXPECT_NE(flags.hash, base.hash);
  EXPECT_FALSE(flags.cache_hit);

  // A wrapper that reports another version: a new compiler, a new key.
  std::string cc = c.dir + "/fakecc";
  write_script(cc, "if [ \"$1\" = --version ]; then echo 'fakecc 1.0'; exit 0; fi\nexec c++ \"$@\"\n");
  CompileOptions fake;
  fake.cxx = cc;
  CompileReport v1 = compile_small(fake);
  EXPECT_NE(v1.hash, base.hash);
  EXPECT_FALSE(v1.cache_hit);
  EXPECT_TRUE(compile_small(fake).cache_hit);
  // The compiler is upgraded in place: its version is asked again and the key changes.
  write_script(cc, "if [ \"$1\" = --version ]; then echo 'fakecc 2.0 (upgraded)'; exit 0; fi\nexec c++ \"$@\"\n");
  CompileReport v2 = compile_small(fake);
  EXPECT_NE(v2.hash, v1.hash);
  EXPECT_FALSE(v2.cache_hit);
  auto m = nlohmann::json::parse(slurp(v2.artifact_dir + "/manifest.json"));
  EXPECT_NE(m["compiler"]["version"].get<std::string>().find("fakecc 2.0"), std::string::npos);
}

TEST(CompilerCache, DamagedEntriesAreRebuilt) {
  TempCache c("damage");
  Executable exe;
  CompileReport cold = compile_small({}, &exe);
  std::string dir = cold.artifact_dir;
  std::string lib = slurp(dir + "/kernels.so");

  replace_file(dir + "/manifest.json", "{ not json");
  CompileReport r1 = compile_small({}, &exe);
  EXPECT_FALSE(r1.cache_hit);
  EXPECT_NE(r1.rebuilt_because.find("not valid JSON"), std::string::npos) << r1.rebuilt_because;
  expect_small_result(exe);

  replace_file(dir + "/kernels.so", lib.substr(0, lib.size() / 2));  // a partly written library
  CompileReport r2 = compile_small({}, &exe);
  EXPECT_NE(r2.rebuilt_because.find("does not match"), std::string::npos) << r2.rebuilt_because;
  expect_small_result(exe);

  fs::remove(dir + "/kernels.so");
  CompileReport r3 = compile_small({}, &exe);
  EXPECT_NE(r3.rebuilt_because.find("missing"), std::string::npos) << r3.rebuilt_because;
  EXPECT_TRUE(compile_small({}).cache_hit);
  EXPECT_EQ(check_entry(dir), "");
  expect_small_result(exe);
}

TEST(CompilerCache, CompileErrorKeepsSourceAndCompilerOutput) {
  TempCache c("fail");
  std::string cc = c.dir + "/badcc";
  write_script(cc, "if [ \"$1\" = --version ]; then echo 'badcc 1'; exit 0; fi\necho 'kernels.cpp:1: error: boom' >&2\nexit 1\n");
  CompileOptions o;
  o.cxx = cc;
  try {
    compile_small(o);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("[compile] small: the C++ compiler failed", 0), 0u) << msg;
    size_t at = msg.find(c.dir + "/failed-");
    ASSERT_NE(at, std::string::npos) << msg;
    std::string failed = msg.substr(at, msg.find("/kernels.cpp", at) - at);
    EXPECT_TRUE(fs::exists(failed + "/kernels.cpp")) << failed;
    EXPECT_NE(slurp(failed + "/compiler.log").find("boom"), std::string::npos);
    EXPECT_NE(msg.find("boom"), std::string::npos) << msg;
  }
  // Nothing half-built is left as an entry.
  EXPECT_NE(cache_ls(c.dir).find("0 artifacts"), std::string::npos) << cache_ls(c.dir);
}

TEST(CompilerCache, NoCompilerIsAnError) {
  TempCache c("nocc");
  CompileOptions o;
  o.cxx = "/nonexistent/c++";
  EXPECT_THROW(
      {
        try {
          compile_small(o);
        } catch (const Error& e) {
          EXPECT_EQ(std::string(e.what()).rfind("[compile] no C++ compiler", 0), 0u) << e.what();
          throw;
        }
      },
      Error);
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  const char* cxx = std::getenv("CXX");
  std::string saved_cxx = cxx ? cxx : "";
  ::unsetenv("CXX");
  ::setenv("PATH", "/nonexistent", 1);
  try {
    compile_small({});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("none of c++, g++, clang++ is on PATH"), std::string::npos) << e.what();
  }
  ::setenv("PATH", path.c_str(), 1);
  if (cxx) ::setenv("CXX", saved_cxx.c_str(), 1);
}

// The child side of the two-process test: builds (or loads) one cache entry and runs it.
// Prints "hit MS" or "built MS".
OPSCOPE_CHILD_ENTRY(compiler_cache_build_shared_entry) {
  std::string root = std::getenv("OPSCOPE_CACHE_DIR");
  auto t0 = std::chrono::steady_clock::now();
  Artifact a = load_or_build(root, child_spec(root), nullptr);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  float x[4] = {1, 2, 3, 4};
  void* args[] = {x};
  if (reinterpret_cast<KernelEntry>(a.entries[0])(args, 0, 4) != 0 || x[3] != 8.f) {
    std::printf("the kernel did not double its input\n");
    return 1;
  }
  std::printf("result: %s %.1f\n", a.hit ? "hit" : "built", ms);
  return 0;
}

// A new process compiling a graph that is in the cache: how long until it can run.
OPSCOPE_CHILD_ENTRY(compiler_cache_warm_start) {
  auto t0 = std::chrono::steady_clock::now();
  CompileReport rep;
  compile_graph(rms_norm_graph({32, 4096}), {}, rep);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("result: %s %.0f (passes %.1f, codegen %.1f, manifest check + dlopen %.1f)\n",
              rep.cache_hit ? "hit" : "built", ms, rep.passes_ms, rep.codegen_ms, rep.load_ms);
  return 0;
}

// What a child printed after "result: " (its log holds anything else it printed too).
std::string child_result(const testutil::ChildResult& r) {
  size_t at = r.log.rfind("result: ");
  if (at == std::string::npos) return "";
  size_t end = r.log.find('\n', at);
  return r.log.substr(at + 8, end == std::string::npos ? std::string::npos : end - at - 8);
}

TEST(CompilerCache, TwoProcessesCompileTheSameGraph) {
  TempCache c("procs");
  testutil::ChildResult r1, r2;
  {
    testutil::Child p1("compiler_cache_build_shared_entry"), p2("compiler_cache_build_shared_entry");
    r1 = p1.wait();
    r2 = p2.wait();
  }
  ASSERT_EQ(r1.status, 0) << r1.log;
  ASSERT_EQ(r2.status, 0) << r2.log;
  std::string o1 = child_result(r1), o2 = child_result(r2);
  int built = (o1.rfind("built", 0) == 0) + (o2.rfind("built", 0) == 0);
  int hit = (o1.rfind("hit", 0) == 0) + (o2.rfind("hit", 0) == 0);
  EXPECT_EQ(built, 1) << r1.log << r2.log;
  EXPECT_EQ(hit, 1) << r1.log << r2.log;
  EXPECT_EQ(cache_ls(c.dir).find("damaged"), std::string::npos);

  // Warm start of a new process: the RMSNorm graph built here, loaded there.
  CompileReport cold;
  compile_graph(rms_norm_graph({32, 4096}), {}, cold);
  testutil::ChildResult r3 = testutil::run_child("compiler_cache_warm_start");
  ASSERT_EQ(r3.status, 0) << r3.log;
  std::string o3 = child_result(r3);
  EXPECT_EQ(o3.rfind("hit ", 0), 0u) << r3.log;
  std::printf("[ measure  ] new process, cached RMSNorm graph, compile_graph: %s ms; cold build %.0f ms\n",
              o3.substr(std::min<size_t>(4, o3.size())).c_str(), cold.build_ms);
}

TEST(CompilerCache, CacheCommands) {
  TempCache c("cli");
  CompileReport rep = compile_small({});
  std::string ls = cache_ls();
  EXPECT_NE(ls.find(rep.hash), std::string::npos) << ls;
  EXPECT_NE(ls.find("small"), std::string::npos) << ls;
  EXPECT_NE(ls.find(" ok"), std::string::npos) << ls;
  std::string show = cache_show(rep.hash.substr(0, 6));
  EXPECT_NE(show.find("fused_exp_mul_add_f32"), std::string::npos) << show;
  EXPECT_NE(show.find("kernels.so"), std::string::npos) << show;
  try {
    cache_show("zzzz");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[cache]", 0), 0u) << e.what();
  }
  EXPECT_NE(cache_clear().find("removed 1 artifact"), std::string::npos);
  EXPECT_NE(cache_ls().find("0 artifacts"), std::string::npos);
  EXPECT_FALSE(fs::exists(rep.artifact_dir));
}
