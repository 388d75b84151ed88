// compile() on plain functions of the eager ops (which record themselves while traced):
// seeded random op graphs compiled against their eager run, the known patterns as one
// kernel each next to the built-in fused ops, and the tensor methods and custom ops the
// tracer sees.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "compiler_test_util.h"
#include "opscope/compiler/compile.h"
#include "opscope/compiler/executor.h"
#include "opscope/core/error.h"
#include "opscope/ops/custom.h"
#include "opscope/ops/ops.h"
#include "opscope/runtime/device.h"

using namespace opscope;
namespace fs = std::filesystem;

namespace {

struct TempCache {
  std::string dir;
  explicit TempCache(const std::string& tag) {
    dir = fs::temp_directory_path().string() + "/opscope-compile-" + tag + "-" + std::to_string(::getpid());
    fs::remove_all(dir);
    ::setenv("OPSCOPE_CACHE_DIR", dir.c_str(), 1);
  }
  ~TempCache() {
    ::unsetenv("OPSCOPE_CACHE_DIR");
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

// Runs a graph with the eager ops (what a user's function does, op by op).
std::vector<Tensor> run_eager(const compiler::Graph& g, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> vals(g.values.size());
  for (size_t i = 0; i < g.inputs.size(); ++i) vals[size_t(g.inputs[i])] = inputs[i];
  for (const compiler::Node& n : g.nodes)
    if (n.kind != compiler::OpKind::input && n.kind != compiler::OpKind::constant)
      compiler::eval_eager(g, n, vals, inputs[0].device());
  std::vector<Tensor> outs;
  for (int o : g.outputs) outs.push_back(vals[size_t(o)]);
  return outs;
}

// A call after the first of its signature: the first returns its trace's eager values, later ones the kernels'.
template <class... Ts>
Tensor steady_call(const CompiledFunction& f, const Ts&... xs) {
  f(xs...);
  return f(xs...);
}

std::vector<Tensor> random_inputs(const compiler::Graph& g, uint64_t seed) {
  std::vector<Tensor> xs;
  for (int v : g.inputs) xs.push_back(randn(g.values[size_t(v)].shape, seed++, g.values[size_t(v)].dtype));
  return xs;
}

}  // namespace

TEST(CompilerCompile, EagerOpsRecordThemselves) {
  CompileOptions o;
  o.passes.fuse = false;  // nothing to build: just the traced graph
  auto f = opscope::compile([](const Tensor& x, const Tensor& w) {
    Tensor y = exp(x) * 2.0 + (1.0 - x);
    return concat({matmul(y, w), softmax(y), rms_norm(y, {}, 1e-6), layer_norm(y, {}, {}, 1e-5)}, 0);
  }, "probe", o);
  Tensor x = randn({4, 4}, 1), w = randn({4, 4}, 2);
  f(x, w);
  CompileReport rep = f.report({x, w});
  EXPECT_FALSE(rep.eager_fallback) << rep.fallback_reason;
  for (const char* op : {"exp(", "mul(", "add(", "sub(", "matmul(", "softmax(", "rms_norm(", "layer_norm(", "concat("})
    EXPECT_NE(rep.traced_graph.find(op), std::string::npos) << op << "\n" << rep.traced_graph;
  EXPECT_NE(rep.traced_graph.find("missing=1"), std::string::npos) << rep.traced_graph;  // rms_norm without weight
  Tensor x2 = randn({4, 4}, 3);
  auto got = f(x2, w).to_float_vector();
  auto want = concat({matmul(exp(x2) * 2.0 + (1.0 - x2), w), softmax(exp(x2) * 2.0 + (1.0 - x2)),
                      rms_norm(exp(x2) * 2.0 + (1.0 - x2), {}, 1e-6), layer_norm(exp(x2) * 2.0 + (1.0 - x2), {}, {}, 1e-5)}, 0)
                  .to_float_vector();
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5 * (std::fabs(want[i]) + 1)) << i;
}

TEST(CompilerCompile, RandomOpGraphsMatchEager) {
  TempCache c("random");
  // Several random graphs in one function (one library, one compiler run): each
  // graph's results are flattened to f32 and concatenated.
  std::vector<compiler::Graph> graphs;
  const std::vector<Shape> domains = {{4097}, {3, 5}, {7, 33}, {4, 5, 64}, {2, 1, 40}, {5, 1}, {2, 300}, {16, 256}};
  for (int i = 0; i < 16; ++i)
    graphs.push_back(compiler::testing::random_graph(500 + uint64_t(i), domains[size_t(i) % domains.size()],
                                                     i % 2 ? DType::bf16 : DType::f32, 4 + i % 5));
  auto fn = [&graphs](const std::vector<Tensor>& in) {
    std::vector<Tensor> parts;
    size_t k = 0;
    for (auto& g : graphs) {
      std::vector<Tensor> xs(in.begin() + long(k), in.begin() + long(k + g.inputs.size()));
      k += g.inputs.size();
      for (Tensor& o : run_eager(g, xs)) parts.push_back(o.to(DType::f32).reshape({-1}));
    }
    return concat(parts, 0);
  };
  std::vector<Tensor> in, in2;
  for (size_t i = 0; i < graphs.size(); ++i) {
    for (Tensor& t : random_inputs(graphs[i], 10 * i + 1)) in.push_back(t);
    for (Tensor& t : random_inputs(graphs[i], 10 * i + 5)) in2.push_back(t);
  }
  auto f = opscope::compile(fn, "random_graphs");
  f(in);
  CompileReport rep = f.report(in);
  EXPECT_GE(rep.kernels.size(), graphs.size() / 2) << rep.str();
  EXPECT_FALSE(rep.eager_fallback) << rep.fallback_reason;
  auto got = f(in2).to_float_vector(), want = fn(in2).to_float_vector();
  ASSERT_EQ(got.size(), want.size());
  // Per graph: f32 graphs agree to f32 rounding; bf16 ones to bf16's (eager rounds every
  // intermediate to bf16, the fused kernel keeps f32 inside).
  size_t at = 0;
  double worst[2] = {0, 0};
  for (size_t gi = 0; gi < graphs.size(); ++gi) {
    bool bf = graphs[gi].values[size_t(graphs[gi].inputs[0])].dtype == DType::bf16;
    size_t n = 0;
    for (int o : graphs[gi].outputs) n += size_t(graphs[gi].values[size_t(o)].shape.numel());
    double rtol = bf ? 4e-2 : 1e-4;
    for (size_t j = at; j < at + n; ++j) worst[bf] = std::max(worst[bf], std::fabs(got[j] - want[j]) / (std::fabs(want[j]) + 1.0));
    for (size_t j = at; j < at + n; ++j)
      ASSERT_LE(std::fabs(got[j] - want[j]), rtol * (std::fabs(want[j]) + 1.0))
          << "graph " << gi << " element " << j - at << "\n"
          << graphs[gi].str();
    at += n;
  }
  std::printf("[ measure  ] compiled vs eager, largest |diff| / (|eager| + 1): f32 graphs %.2g, bf16 graphs %.2g\n",
              worst[0], worst[1]);
}

TEST(CompilerCompile, KnownPatternsAreOneKernelEachAndMatchTheBuiltins) {
  TempCache c("patterns");
  auto patterns = [](const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y) {
    Tensor rms = x * rsqrt(mean(x * x, {-1}, true) + 1e-6) * w;
    Tensor e = exp(x - max(x, {-1}, true));
    Tensor sm = e / sum(e, {-1}, true);
    Tensor d = x - mean(x, {-1}, true);
    Tensor ln = d * rsqrt(mean(d * d, {-1}, true) + 1e-5) * w + b;
    Tensor sw = silu(x) * y;
    return concat({rms.reshape({-1}), sm.reshape({-1}), ln.reshape({-1}), sw.reshape({-1})}, 0);
  };
  auto f = opscope::compile(patterns, "patterns");
  Tensor x = randn({6, 300}, 1), w = randn({300}, 2), b = randn({300}, 3), y = randn({6, 300}, 4);
  f(x, w, b, y);
  CompileReport rep = f.report({x, w, b, y});
  ASSERT_EQ(rep.kernels.size(), 4u) << rep.str();
  EXPECT_EQ(rep.eager_nodes, 1) << rep.str();  // the concat
  Tensor x2 = randn({6, 300}, 5);
  auto got = f(x2, w, b, y).to_float_vector();
  auto want = concat({rms_norm(x2, w, 1e-6).reshape({-1}), softmax(x2, -1).reshape({-1}),
                      layer_norm(x2, w, b, 1e-5).reshape({-1}), (silu(x2) * y).reshape({-1})},
                     0)
                  .to_float_vector();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4 * (std::fabs(want[i]) + 1)) << i;
}

// gelu, tanh and log in a fused kernel are the eager kernels' own polynomials
// (kernels/cpu/vec_math.inc, pasted into the generated source), not the C library's
// scalar erff/tanhf/logf, which cost 8-27x more per element there: the generated code
// calls them, and its results equal the eager ops' to a few ulp over the whole range,
// tails, infinities and zero included.
TEST(CompilerCompile, FusedGeluTanhAndLogAreTheEagerKernelsMath) {
  TempCache c("vec_math");
  auto fn = [](const Tensor& x, const Tensor& y) {
    return concat({(gelu(x) * y).reshape({-1}), (tanh(x) * y).reshape({-1}), (log(abs(x)) * y).reshape({-1})}, 0);
  };
  auto f = opscope::compile(fn, "vec_math");
  std::vector<float> xs;
  for (int i = 0; i < 4001; ++i) xs.push_back(-40.f + 0.02f * float(i));  // through 0 and both tails
  for (float v : {0.f, -0.f, 1e-30f, -1e-30f, 88.f, -88.f, 1e30f, -1e30f, INFINITY, -INFINITY})
    xs.push_back(v);
  Tensor x = from_host(xs, {int64_t(xs.size())}), y = full({int64_t(xs.size())}, 1.0);
  auto got = steady_call(f, x, y).to_float_vector(), want = fn(x, y).to_float_vector();
  CompileReport rep = f.report({x, y});
  ASSERT_EQ(rep.kernels.size(), 3u) << rep.str();
  for (const char* call : {"ofs_gelu(", "ofs_tanh(", "ofs_log("}) EXPECT_NE(rep.source.find(call), std::string::npos) << call;
  for (const char* libm : {"__builtin_erff", "__builtin_tanhf", "__builtin_logf"})
    EXPECT_EQ(rep.source.find(libm), std::string::npos) << libm;
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const char* op = i < xs.size() ? "gelu" : i < 2 * xs.size() ? "tanh" : "log";
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << op << "(" << xs[i % xs.size()] << ")";
      continue;
    }
    if (std::isinf(want[i]) || want[i] == 0.f) {
      EXPECT_EQ(got[i], want[i]) << op << "(" << xs[i % xs.size()] << ")";
      continue;
    }
    EXPECT_LE(std::fabs(got[i] - want[i]), 4 * std::numeric_limits<float>::epsilon() * std::fabs(want[i]))
        << op << "(" << xs[i % xs.size()] << "): fused " << got[i] << ", eager " << want[i];
  }
}

TEST(CompilerCompile, TensorMethodsCreationAndCustomOpsAreTraced) {
  TempCache c("methods");
  static CustomOp plus1 = register_op({.name = "compiler_test.plus1",
                                       .infer = [](std::span<const Tensor> in) { return OutputSpec{in[0].shape(), in[0].dtype()}; },
                                       .cpu = [](std::span<const KernelTensor> in, const KernelTensor& out, int64_t b, int64_t e) {
                                         int64_t n = out.row_size();
                                         for (int64_t i = b * n; i < e * n; ++i) out.ptr<float>()[i] = in[0].ptr<float>()[i] + 1;
                                       }});
  auto fn = [](const Tensor& x) {
    Tensor t = x.transpose(0, 1).contiguous();       // a copy: traced
    Tensor h = t.to(DType::bf16).to(DType::f32);      // casts: traced, fused
    Tensor k = full({1, 4}, 0.5);                    // made inside: a constant
    Tensor p = plus1({h * k});                       // a custom op: opaque
    return exp(p).clone() * 2.0;
  };
  auto f = opscope::compile(fn, "methods");
  Tensor x = randn({4, 6}, 1);
  f(x);
  CompileReport rep = f.report({x});
  EXPECT_FALSE(rep.eager_fallback) << rep.fallback_reason << "\n" << rep.traced_graph;
  EXPECT_NE(rep.compiled_graph.find("custom("), std::string::npos) << rep.compiled_graph;
  EXPECT_NE(rep.traced_graph.find("contiguous("), std::string::npos) << rep.traced_graph;
  EXPECT_NE(rep.traced_graph.find("param"), std::string::npos) << rep.traced_graph;
  Tensor x2 = randn({4, 6}, 2);
  auto got = f(x2).to_float_vector(), want = fn(x2).to_float_vector();
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5 * (std::fabs(want[i]) + 1)) << i;
}

// A compiled run drops each intermediate after the last node that reads it, as eager
// PyTorch frees a tensor at its last use: the caching allocator then hands its block to a
// later result. Six chained matmuls (not fused) of 1 MiB each: held to the end of the run,
// the intermediates took six blocks at once; dropped, two (a matmul's operand and result).
TEST(CompilerCompile, IntermediatesAreFreedAfterTheirLastRead) {
  TempCache c("lifetimes");
  auto chain = [](const Tensor& x, const Tensor& w) {
    Tensor h = x;
    for (int i = 0; i < 6; ++i) h = matmul(h, w);
    return h;
  };
  auto f = opscope::compile(chain, "lifetimes");
  Tensor x = randn({512, 512}, 3), w = randn({512, 512}, 4) * 0.04;
  Tensor want = chain(x, w);
  f(x, w);
  Tensor got = f(x, w);  // the compiled kernels' values
  Device& dev = x.device();
  dev.synchronize();
  got = Tensor();
  const int64_t before = memory_stats(dev).allocated;
  dev.allocator().reset_peak();
  got = f(x, w);
  dev.synchronize();
  const int64_t block = int64_t(CachingAllocator::round_size(512 * 512 * 4));
  const int64_t extra = memory_stats(dev).peak_allocated - before;
  EXPECT_LE(extra, 2 * block) << "peak " << extra / block << " blocks of the chain's";
  EXPECT_GE(extra, 1 * block);
  auto g = got.to_float_vector(), e = want.to_float_vector();
  for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], e[i], 1e-4 * (std::fabs(e[i]) + 1)) << i;
}
