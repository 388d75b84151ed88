// `opscope kernel --static`: loops read from compiled code (a kernel built here, scalar and
// vectorized), the per-element figures, the verdicts' rules on known facts, a profile's
// recorded bytes, and the errors for what is not an artifact.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_util.h"
#include "compiler_test_util.h"
#include "test_util.h"
#include "opscope/analysis/kernel_static.h"
#include "opscope/analysis/advisor/kernel_code.h"
#include "opscope/analysis/kernel_static_verdicts.h"
#include "opscope/compiler/build.h"
#include "opscope/compiler/pipeline.h"
#include "opscope/core/error.h"
#include "opscope/debuginfo/listing.h"

using namespace opscope;
using opscope::test_util::error_of;
using analysis::StaticKernel;
using analysis::StaticLoop;
namespace fs = std::filesystem;

namespace {

constexpr const char* kAddSource = R"(// c = a + b, row by row
extern "C" int add_rows(const float* a, const float* b, float* c, long n) {
  for (long i = 0; i < n; ++i)
    c[i] = a[i] + b[i];
  return 0;
}
)";

// An artifact folder as the compiler's cache lays it out: kernels.cpp, kernels.so and a
// manifest naming one kernel "add_f32" over a 64 x 1000 domain.
std::string make_artifact(const std::string& name, const std::vector<std::string>& flags) {
  fs::path dir = fs::temp_directory_path() / ("opscope_static_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "kernels.cpp") << kAddSource;
  nlohmann::json kernel = {{"name", "add_f32"}, {"symbol", "add_rows"}, {"domain", {64, 1000}}, {"rows", 64},
                           {"cols", 1000},      {"flat", false},         {"inputs", 2},          {"outputs", 1},
                           {"passes", 1},       {"ops", {"add"}}};
  std::ofstream(dir / "manifest.json") << nlohmann::json{{"format", "opscope-artifact"}, {"kernels", {kernel}}}.dump();
  compiler::CxxCompiler cc = compiler::find_compiler("", dir.string());
  std::vector<std::string> all = flags;
  for (const char* f : {"-g1", "-shared", "-fPIC"}) all.push_back(f);
  compiler::BuildResult br = compiler::run_compiler(cc, all, (dir / "kernels.cpp").string(),
                                                    (dir / "kernels.so").string(), (dir / "log.txt").string(), nullptr);
  return br.exit_code == 0 ? dir.string() : "";
}

const StaticLoop* main_loop(const StaticKernel& k) {
  for (const StaticLoop& l : k.loops)
    if (!l.remainder) return &l;
  return nullptr;
}

bool has_rule(const StaticKernel& k, const std::string& rule) {
  for (const analysis::Verdict& v : k.verdicts)
    if (v.rule == rule) return true;
  return false;
}

}  // namespace

// Built without vectorization, the loop does one element an iteration: two loads and a
// store of 4 bytes each, and the verdict says it is scalar.
TEST(KernelStatic, AScalarLoopIsFoundMeasuredPerElementAndCalledScalar) {
  std::string dir = make_artifact("scalar", {"-O1", "-fno-tree-vectorize"});
  ASSERT_FALSE(dir.empty()) << "the test kernel did not build";
  std::vector<StaticKernel> ks = analysis::static_artifact(dir, "", nullptr);
  ASSERT_EQ(ks.size(), 1u);
  const StaticKernel& k = ks[0];
  EXPECT_EQ(k.kernel, "add_f32");
  EXPECT_EQ(k.elements, 64000);
  const StaticLoop* l = main_loop(k);
  ASSERT_NE(l, nullptr) << analysis::static_text(ks);
  EXPECT_TRUE(l->facts.scalar());
  EXPECT_DOUBLE_EQ(l->elements, 1.0);
  EXPECT_DOUBLE_EQ(l->loads_per_element, 2.0);
  EXPECT_DOUBLE_EQ(l->stores_per_element, 1.0);
  EXPECT_DOUBLE_EQ(l->bytes_per_element, 12.0);
  EXPECT_EQ(l->facts.first_line, 3) << "the loop's lines of kernels.cpp: its for and its body";
  EXPECT_EQ(l->facts.last_line, 4);
  EXPECT_TRUE(has_rule(k, "scalar_loop")) << analysis::static_text(ks);
  EXPECT_EQ(k.verdicts[0].severity, "warn");
  fs::remove_all(dir);
}

// Vectorized, the same loop moves the same 12 bytes per element with many elements an
// iteration; its scalar tail and alias fallback are not its main loop.
TEST(KernelStatic, AVectorizedLoopMovesTheSameBytesPerElementOnVectors) {
  std::string dir = make_artifact("vector", {"-O3", "-march=native"});
  ASSERT_FALSE(dir.empty()) << "the test kernel did not build";
  std::vector<StaticKernel> ks = analysis::static_artifact(dir, "add_f32", nullptr);
  ASSERT_EQ(ks.size(), 1u);
  const StaticKernel& k = ks[0];
  const StaticLoop* l = main_loop(k);
  ASSERT_NE(l, nullptr) << analysis::static_text(ks);
  EXPECT_NE(l->facts.widest, debuginfo::VectorWidth::scalar) << analysis::static_text(ks);
  EXPECT_GE(l->elements, 4.0);
  EXPECT_DOUBLE_EQ(l->bytes_per_element, 12.0) << analysis::static_text(ks);
  EXPECT_DOUBLE_EQ(k.bytes_per_element, 12.0);
  EXPECT_FALSE(has_rule(k, "scalar_loop")) << analysis::static_text(ks);
  EXPECT_TRUE(has_rule(k, "vectorized")) << analysis::static_text(ks);
  nlohmann::json j = analysis::static_json(ks);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["kernel"], "add_f32");
  EXPECT_FALSE(j[0]["loops"].empty());
  EXPECT_EQ(j[0]["loops"][0].count("bytes_per_element"), 1u);
  EXPECT_EQ(j[0]["verdicts"][0].count("rule"), 1u);
  fs::remove_all(dir);
}

// The compiler's own kernels, built with its default flags: e^x, tanh, sigmoid and gelu
// (vec_math.inc's polynomials, each with its clamps) vectorize. On an AVX2 CPU GCC 12 kept
// them scalar until -fno-trapping-math (compile.h): 6.5 ns an e^x, against 0.3.
TEST(KernelStatic, TheCompilersMathKernelsVectorize) {
  using namespace compiler::testing;
  fs::path cache = fs::temp_directory_path() / ("opscope_static_math_" + std::to_string(::getpid()));
  CompileOptions opts;
  opts.cache_dir = cache.string();
  // f(x) * 2 over a 64x1000 input, as one fused kernel whose main loop must be a vector loop
  auto expect_vector_loop = [&](const std::string& what, const std::function<int(compiler::Graph&, int)>& f) {
    compiler::Graph g;
    g.name = "math";
    int x = input(g, {64, 1000});
    g.outputs = {scalar_op(g, compiler::OpKind::mul, f(g, x), 2.0)};
    CompileReport rep;
    compiler::compile_graph(g, opts, rep);
    ASSERT_FALSE(rep.artifact_dir.empty()) << what << ": no fused kernel";
    std::vector<StaticKernel> ks = analysis::static_artifact(rep.artifact_dir, "", nullptr);
    ASSERT_EQ(ks.size(), 1u) << what;
    const StaticLoop* l = main_loop(ks[0]);
    ASSERT_NE(l, nullptr) << what << "\n" << analysis::static_text(ks);
    EXPECT_NE(l->facts.widest, debuginfo::VectorWidth::scalar) << what << "\n" << analysis::static_text(ks);
    EXPECT_FALSE(has_rule(ks[0], "scalar_loop")) << what << "\n" << analysis::static_text(ks);
  };
  for (compiler::OpKind op : {compiler::OpKind::exp, compiler::OpKind::tanh, compiler::OpKind::sigmoid,
                              compiler::OpKind::gelu})
    expect_vector_loop(compiler::op_name(op), [op](compiler::Graph& g, int x) { return unary(g, op, x); });
  // pow by the exponents the eager kernel computes without pow (x * x * x for 3, ...)
  for (double e : {2.0, 3.0, -2.0, -1.0, 0.5, -0.5})
    expect_vector_loop("pow " + std::to_string(e),
                       [e](compiler::Graph& g, int x) { return scalar_op(g, compiler::OpKind::pow, x, e); });
  fs::remove_all(cache);
}

// A profile that ran the kernel: its launches' bytes per element are read beside the
// loops' (8 bytes recorded against 12 moved is a third more: extra_bytes).
TEST(KernelStatic, AProfilesLaunchesGiveTheRecordedBytesPerElement) {
  std::string dir = make_artifact("profile", {"-O3", "-march=native"});
  ASSERT_FALSE(dir.empty()) << "the test kernel did not build";
  prof::Trace t;
  t.config_json = nlohmann::json{{"artifacts", {{"add_f32", {{"dir", dir}, {"symbol", "add_rows"}}}}}}.dump();
  for (int i = 0; i < 2; ++i) {
    prof::TraceEvent e;
    e.kind = prof::EventKind::launch;
    e.name = "add_f32";
    e.bytes = 64000 * 8;  // as if one input were read from cache
    t.events.push_back(e);
  }
  // Three samples in the kernel's launch: two inside its main loop, one at its entry.
  std::vector<StaticKernel> before = analysis::static_artifact(dir, "add_f32", nullptr);
  ASSERT_NE(main_loop(before[0]), nullptr);
  uint64_t head = main_loop(before[0])->facts.head;
  prof::TraceEvent slice;
  slice.kind = prof::EventKind::kernel;
  slice.name = "add_f32";
  slice.id = 7;
  slice.t1 = 1000;
  t.events.push_back(slice);
  t.code_modules.push_back({dir + "/kernels.so", ""});
  for (uint64_t a : {head, head, head - 1}) t.code_sites.push_back({0, a, "add_rows", "", 0});
  for (int32_t site : {0, 1, 2}) t.samples.push_back({0, 0, site, 7});

  std::vector<StaticKernel> ks = analysis::static_profile(t, "", "test.db");
  ASSERT_EQ(ks.size(), 1u);
  ASSERT_NE(main_loop(ks[0]), nullptr);
  EXPECT_EQ(main_loop(ks[0])->samples, 2);
  EXPECT_EQ(ks[0].launches, 2);
  EXPECT_DOUBLE_EQ(ks[0].recorded_bytes_per_element, 8.0);
  EXPECT_TRUE(has_rule(ks[0], "extra_bytes")) << analysis::static_text(ks);
  EXPECT_NE(analysis::static_text(ks).find("8.0 recorded by 2 launches"), std::string::npos) << analysis::static_text(ks);

  EXPECT_NE(error_of([&] { analysis::static_profile(t, "mul_f32", "test.db"); })
                .find("[--static] test.db: kernel 'mul_f32' is not a compiled kernel of this profile and has no samples "
                      "(its compiled kernels: add_f32)"),
            std::string::npos);
  prof::Trace eager;
  eager.config_json = "{}";
  EXPECT_NE(error_of([&] { analysis::static_profile(eager, "", "eager.db"); }).find("[--static] eager.db: ran no compiled kernels"),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(KernelStatic, WhatIsNoArtifactIsRefusedWithTheReason) {
  fs::path empty = fs::temp_directory_path() / ("opscope_static_empty_" + std::to_string(::getpid()));
  fs::create_directories(empty);
  EXPECT_NE(error_of([&] { analysis::static_artifact(empty.string(), "", nullptr); }).find("no manifest.json"),
            std::string::npos);
  std::ofstream(empty / "manifest.json") << "{\"kernels\": [{\"name\": \"add_f32\", \"symbol\": \"add_rows\"}]}";
  EXPECT_NE(error_of([&] { analysis::static_artifact(empty.string(), "", nullptr); }).find("the artifact's library is gone"),
            std::string::npos);
  EXPECT_NE(error_of([&] { analysis::static_artifact(empty.string(), "exp_f32", nullptr); })
                .find("no kernel 'exp_f32' in this artifact (its kernels: add_f32)"),
            std::string::npos);
  std::ofstream(empty / "manifest.json") << "{\"kernels\": [{\"name\": 7}]}";
  EXPECT_NE(error_of([&] { analysis::static_artifact(empty.string(), "", nullptr); })
                .find("kernels[0] is not an object with a name and a symbol"),
            std::string::npos);
  std::ofstream(empty / "manifest.json") << "not json";
  EXPECT_NE(error_of([&] { analysis::static_artifact(empty.string(), "", nullptr); }).find("not an opscope manifest"),
            std::string::npos);
  fs::remove_all(empty);

  testutil::CliResult r = testutil::run_opscope({"kernel", "--static", "0123456789abcdef"});
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("[--static] 0123456789abcdef: no artifact of that hash"), std::string::npos) << r.out;
  r = testutil::run_opscope({"kernel", "--static", "x.db", "--op", "aten::add"});
  EXPECT_NE(r.out.find("[--static] takes no --op or --module"), std::string::npos) << r.out;
}

namespace {

StaticKernel kernel_with(std::vector<debuginfo::LoopFacts> facts) {
  StaticKernel k;
  k.kernel = "k_f32";
  k.cols = 1000;
  k.elements = 64000;
  for (debuginfo::LoopFacts& f : facts) {
    StaticLoop l;
    l.facts = f;
    k.loops.push_back(l);
  }
  return k;
}

debuginfo::LoopFacts vector_loop(int line) {
  debuginfo::LoopFacts f;
  f.file = "/tmp/x/kernels.cpp";
  f.first_line = f.last_line = line;
  f.compute_by_width[3] = 4;
  f.widest = debuginfo::VectorWidth::v512;
  return f;
}

}  // namespace

// Each rule on facts made to hold, and not otherwise.
TEST(KernelStatic, VerdictRulesFireOnTheFactsTheyName) {
  StaticKernel k = kernel_with({vector_loop(10)});
  k.loops[0].elements = 16;
  k.loops[0].bytes_per_element = 12;
  k.bytes_per_element = 12;
  k.recorded_bytes_per_element = 12;
  std::vector<analysis::Verdict> v = analysis::static_verdicts(k, 512);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].rule, "vectorized");
  EXPECT_EQ(v[1].rule, "scalar_remainder");  // 1000 = 62 * 16 + 8
  EXPECT_NE(v[1].message.find("leaves 8 (0.8%)"), std::string::npos) << v[1].message;

  v = analysis::static_verdicts(k, 1024);  // a CPU with wider registers than the loop uses
  EXPECT_NE(std::find_if(v.begin(), v.end(), [](auto& x) { return x.rule == "narrow_vectors"; }), v.end());

  k.loops[0].facts.stack_accesses = 3;
  k.loops[0].facts.gathers = 1;
  v = analysis::static_verdicts(k, 512);
  EXPECT_EQ(v[0].rule, "spills");
  EXPECT_EQ(v[0].severity, "warn");
  EXPECT_NE(std::find_if(v.begin(), v.end(), [](auto& x) { return x.rule == "gathers"; }), v.end());
  EXPECT_EQ(std::find_if(v.begin(), v.end(), [](auto& x) { return x.rule == "vectorized"; }), v.end());

  // Two loops over a row reading 16 bytes per element where 8 were recorded: a second pass,
  // from cache for a 4 KB row, from memory for a row of many times L2.
  StaticKernel two = kernel_with({vector_loop(10), vector_loop(20)});
  for (StaticLoop& l : two.loops) l.bytes_per_element = 8, l.elements = 16;
  two.bytes_per_element = 16;
  two.recorded_bytes_per_element = 8;
  two.cols = 1024;
  v = analysis::static_verdicts(two, 512);
  auto passes = std::find_if(v.begin(), v.end(), [](auto& x) { return x.rule == "passes"; });
  ASSERT_NE(passes, v.end());
  if (analysis::l2_bytes() >= 8192) {
    EXPECT_EQ(passes->severity, "info") << passes->message;
    EXPECT_NE(passes->message.find("read it from cache"), std::string::npos) << passes->message;
  }
  two.cols = 1 << 28;
  v = analysis::static_verdicts(two, 512);
  passes = std::find_if(v.begin(), v.end(), [](auto& x) { return x.rule == "passes"; });
  ASSERT_NE(passes, v.end());
  EXPECT_EQ(passes->severity, "warn");
  EXPECT_NE(passes->message.find("read memory again"), std::string::npos) << passes->message;

  // A scalar main loop with scalar converts and a call: said, with both reasons.
  debuginfo::LoopFacts s;
  s.compute_by_width[0] = 5;
  s.scalar_converts = s.converts = 2;
  s.calls = 1;
  StaticKernel scalar = kernel_with({s});
  scalar.dtype = "bf16";
  v = analysis::static_verdicts(scalar, 512);
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v[0].rule, "scalar_loop");
  EXPECT_NE(v[0].message.find("the bf16 convert was not vectorized"), std::string::npos) << v[0].message;
  EXPECT_NE(v[0].message.find("1 call(s) per iteration"), std::string::npos) << v[0].message;
}

// A backward jump from a cold path into a loop's latch overlaps the loop without nesting
// in it: no loop of its own, and the loop it jumps into stays the innermost.
TEST(KernelStatic, AJumpBackIntoALoopsLatchIsNoLoop) {
  auto insn = [](uint64_t a, uint64_t target = 0) {
    debuginfo::ListedInstruction li;
    li.insn.address = a;
    li.insn.size = 4;
    li.insn.text = target ? "jnz" : "nop";
    li.insn.jump = target != 0;
    li.insn.target = target;
    return li;
  };
  // 0x10..0x30 a loop (latch 0x30 -> 0x10); 0x40 jumps back to 0x2c, inside it.
  std::vector<debuginfo::ListedInstruction> l = {insn(0x10), insn(0x20), insn(0x2c), insn(0x30, 0x10),
                                                 insn(0x34), insn(0x40, 0x2c)};
  std::vector<debuginfo::Loop> loops = debuginfo::find_loops(l);
  ASSERT_EQ(loops.size(), 1u);
  EXPECT_EQ(loops[0].head, 0x10u);
  EXPECT_TRUE(loops[0].innermost);
}

// The advisor reads the code of a compiled profile's hot fused kernels: a scalar main loop
// is a finding naming its lines; a kernel under a tenth of the device time, or one whose
// artifact is gone, is not read.
TEST(KernelStatic, TheAdvisorReportsAHotFusedKernelsScalarLoop) {
  std::string dir = make_artifact("advisor", {"-O1", "-fno-tree-vectorize"});
  ASSERT_FALSE(dir.empty()) << "the test kernel did not build";
  prof::Trace t;
  t.config_json = nlohmann::json{{"artifacts", {{"add_f32", {{"dir", dir}, {"symbol", "add_rows"}}}}}}.dump();
  advisor::CompiledView v;
  v.fused.push_back({"add_f32", "aten::add in m", 4, 900});
  v.kernel_ns = 1000;
  std::vector<advisor::Finding> f = advisor::kernel_code_findings(t, v);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, "kernel_code");
  EXPECT_NE(f[0].title.find("Fused kernel add_f32: the loop at kernels.cpp:3-4 is scalar"), std::string::npos)
      << f[0].title;
  EXPECT_DOUBLE_EQ(f[0].impact_ns, 900.0);

  v.kernel_ns = 100000;  // 0.9% of the device time: not read
  EXPECT_TRUE(advisor::kernel_code_findings(t, v).empty());
  v.kernel_ns = 1000;
  fs::remove_all(dir);
  EXPECT_TRUE(advisor::kernel_code_findings(t, v).empty());
}
