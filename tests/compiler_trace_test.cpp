// compile() end to end with the tracer: functions whose ops record themselves (here
// through small wrappers, as the eager ops' hooks do), compiled and run against the
// eager result; signatures, views, captured tensors, custom ops, fallbacks, errors and
// what a compiled call looks like in a profile.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "opscope/compiler/artifacts.h"
#include "opscope/compiler/compile.h"
#include "opscope/compiler/trace.h"
#include "opscope/core/error.h"
#include "opscope/ops/custom.h"
#include "opscope/ops/ops.h"
#include "opscope/profiler/session.h"
#include "opscope/runtime/device.h"
#include "opscope/runtime/runtime.h"

using namespace opscope;
namespace fs = std::filesystem;
using compiler::TraceAttrs;

namespace {

// Ops that record themselves, as the hooked eager ops do.
namespace tr {
Tensor mul(const Tensor& a, const Tensor& b) { Tensor o = opscope::mul(a, b); compiler::record("mul", {&a, &b}, o); return o; }
Tensor add(const Tensor& a, const Tensor& b) { Tensor o = opscope::add(a, b); compiler::record("add", {&a, &b}, o); return o; }
Tensor mul(const Tensor& a, double s) { Tensor o = opscope::mul(a, s); compiler::record("mul", {&a}, o, TraceAttrs::rhs(s)); return o; }
Tensor add(const Tensor& a, double s) { Tensor o = opscope::add(a, s); compiler::record("add", {&a}, o, TraceAttrs::rhs(s)); return o; }
Tensor sub(double s, const Tensor& a) { Tensor o = opscope::sub(s, a); compiler::record("sub", {&a}, o, TraceAttrs::lhs(s)); return o; }
Tensor neg(const Tensor& a) { Tensor o = opscope::neg(a); compiler::record("neg", {&a}, o); return o; }
Tensor exp(const Tensor& a) { Tensor o = opscope::exp(a); compiler::record("exp", {&a}, o); return o; }
Tensor rsqrt(const Tensor& a) { Tensor o = opscope::rsqrt(a); compiler::record("rsqrt", {&a}, o); return o; }
Tensor silu(const Tensor& a) { Tensor o = opscope::silu(a); compiler::record("silu", {&a}, o); return o; }
Tensor mean(const Tensor& x, std::vector<int64_t> axes, bool keep) {
  Tensor o = opscope::mean(x, axes, keep);
  compiler::record("mean", {&x}, o, TraceAttrs::reduce(axes, keep));
  return o;
}
Tensor matmul(const Tensor& a, const Tensor& b) { Tensor o = opscope::matmul(a, b); compiler::record("matmul", {&a, &b}, o); return o; }
Tensor to(const Tensor& a, DType t) {
  Tensor o = a.to(t);
  if (o.storage() != a.storage()) compiler::record("to", {&a}, o, TraceAttrs::cast(t));
  return o;
}
// sub(a, b) made of other recorded ops, then recorded itself: the outer record wins.
Tensor sub(const Tensor& a, const Tensor& b) { Tensor o = tr::add(a, tr::neg(b)); compiler::record("sub", {&a, &b}, o); return o; }
}  // namespace tr

Tensor rms_naive(const Tensor& x, const Tensor& w) {
  Tensor r = tr::rsqrt(tr::add(tr::mean(tr::mul(x, x), {-1}, true), 1e-6));
  return tr::mul(tr::mul(x, r), w);
}

// The same in mixed precision: f32 math on a bf16 input.
Tensor rms_naive_bf16(const Tensor& x, const Tensor& w) {
  Tensor xf = tr::to(x, DType::f32);
  Tensor r = tr::rsqrt(tr::add(tr::mean(tr::mul(xf, xf), {-1}, true), 1e-6));
  return tr::mul(tr::to(tr::mul(xf, r), DType::bf16), w);
}

struct TempCache {
  std::string dir;
  explicit TempCache(const std::string& tag) {
    dir = fs::temp_directory_path().string() + "/opscope-trace-" + tag + "-" + std::to_string(::getpid());
    fs::remove_all(dir);
    ::setenv("OPSCOPE_CACHE_DIR", dir.c_str(), 1);
  }
  ~TempCache() {
    ::unsetenv("OPSCOPE_CACHE_DIR");
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

void expect_close(const Tensor& a, const Tensor& b, double rtol) {
  ASSERT_EQ(a.shape(), b.shape());
  auto x = a.to_float_vector(), y = b.to_float_vector();
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_LE(std::fabs(x[i] - y[i]), rtol * (std::fabs(y[i]) + 1e-3)) << "element " << i << ": " << x[i] << " vs " << y[i];
}

}  // namespace

TEST(CompilerTrace, RmsNormIsOneKernelAndMatchesEager) {
  TempCache c("rms");
  auto f = opscope::compile(rms_naive, "rms_naive");
  Tensor x = randn({8, 256}, 1), w = randn({256}, 2);
  Tensor first = f(x, w);  // traced: computed eagerly
  expect_close(first, rms_naive(x, w), 0);
  CompileReport rep = f.report({x, w});
  ASSERT_EQ(rep.kernels.size(), 1u) << rep.str();
  EXPECT_EQ(rep.kernels[0], "fused_mul_mean_add_rsqrt_mul_mul_f32");
  EXPECT_EQ(rep.eager_nodes, 0) << rep.str();
  EXPECT_FALSE(rep.eager_fallback) << rep.fallback_reason;
  EXPECT_NE(rep.traced_graph.find("rsqrt"), std::string::npos);
  // Later calls run the kernel: new values, same signature.
  for (uint64_t seed = 3; seed < 6; ++seed) {
    Tensor x2 = randn({8, 256}, seed);
    expect_close(f(x2, w), rms_naive(x2, w), 1e-5);
    expect_close(f(x2, w), rms_norm(x2, w, 1e-6), 1e-5);
  }
  EXPECT_EQ(f.num_signatures(), 1u);
  Tensor x3 = randn({3, 256}, 9);
  expect_close(f(x3, w), rms_naive(x3, w), 0);  // a new signature: traced again
  expect_close(f(x3, w), rms_naive(x3, w), 1e-5);
  EXPECT_EQ(f.num_signatures(), 2u);
}

TEST(CompilerTrace, Bf16RmsNormWithCasts) {
  TempCache c("bf16");
  auto f = opscope::compile(rms_naive_bf16, "rms_bf16");
  Tensor x = randn({4, 1000}, 1, DType::bf16), w = randn({1000}, 2, DType::bf16);
  f(x, w);
  CompileReport rep = f.report({x, w});
  ASSERT_EQ(rep.kernels.size(), 1u) << rep.str();
  Tensor x2 = randn({4, 1000}, 7, DType::bf16);
  Tensor y = f(x2, w);
  EXPECT_EQ(y.dtype(), DType::bf16);
  expect_close(y, rms_naive_bf16(x2, w), 1e-2);
}

TEST(CompilerTrace, ViewsAndCapturedTensors) {
  TempCache c("views");
  Tensor bias = randn({5}, 11);  // captured: a constant of the graph
  auto fn = [bias](const Tensor& x) {
    Tensor t = x.transpose(0, 1);                // a view: as_strided of the input
    return tr::add(tr::exp(tr::mul(t, 0.5)), bias);  // (7, 5) + (5)
  };
  auto f = opscope::compile(fn, "views");
  Tensor x = randn({5, 7}, 1);
  f(x);
  CompileReport rep = f.report({x});
  EXPECT_NE(rep.traced_graph.find("as_strided"), std::string::npos) << rep.traced_graph;
  EXPECT_NE(rep.traced_graph.find("param"), std::string::npos) << rep.traced_graph;
  ASSERT_EQ(rep.kernels.size(), 1u) << rep.str();
  Tensor x2 = randn({5, 7}, 2);
  expect_close(f(x2), fn(x2), 1e-5);
  // A non-contiguous input is its own signature.
  Tensor xt = randn({7, 5}, 3).transpose(0, 1);
  expect_close(f(xt), fn(xt), 0);
  expect_close(f(xt), fn(xt), 1e-5);
  EXPECT_EQ(f.num_signatures(), 2u);
}

TEST(CompilerTrace, NestedRecordsKeepTheOuterOp) {
  TempCache c("nested");
  CompileOptions o;
  o.passes.fuse = false;  // look at the ops, run them eagerly
  auto f = opscope::compile([](const Tensor& a, const Tensor& b) { return tr::sub(a, b); }, "nested", o);
  Tensor a = randn({16}, 1), b = randn({16}, 2);
  f(a, b);
  CompileReport rep = f.report({a, b});
  EXPECT_NE(rep.compiled_graph.find("sub("), std::string::npos) << rep.compiled_graph;
  EXPECT_EQ(rep.compiled_graph.find("neg("), std::string::npos) << rep.compiled_graph;
  EXPECT_TRUE(rep.kernels.empty());
  expect_close(f(b, a), opscope::sub(b, a), 0);
}

TEST(CompilerTrace, ScalarOnTheLeftAndMatmulInTheMiddle) {
  TempCache c("mm");
  Tensor W = randn({32, 16}, 5);
  auto fn = [W](const Tensor& x) {
    Tensor h = tr::matmul(tr::silu(x), W);  // silu alone: eager; matmul: eager
    return tr::mul(tr::sub(1.0, tr::exp(tr::neg(h))), h);
  };
  auto f = opscope::compile(fn, "mm");
  Tensor x = randn({8, 32}, 1);
  f(x);
  CompileReport rep = f.report({x});
  EXPECT_EQ(rep.kernels.size(), 1u) << rep.str();
  EXPECT_NE(rep.compiled_graph.find("matmul("), std::string::npos);
  Tensor x2 = randn({8, 32}, 2);
  expect_close(f(x2), fn(x2), 1e-4);
}

TEST(CompilerTrace, CustomOpsAreOpaqueNodes) {
  TempCache c("custom");
  static CustomOp twice = register_op({.name = "compiler_test.twice",
                                       .infer = [](std::span<const Tensor> in) { return OutputSpec{in[0].shape(), in[0].dtype()}; },
                                       .cpu = [](std::span<const KernelTensor> in, const KernelTensor& out, int64_t b, int64_t e) {
                                         int64_t n = out.row_size();
                                         for (int64_t i = b * n; i < e * n; ++i) out.ptr<float>()[i] = 2 * in[0].ptr<float>()[i];
                                       }});
  auto fn = [](const Tensor& x) {
    std::vector<Tensor> ins{x};
    Tensor y = twice(ins);
    compiler::record_custom("compiler_test.twice", ins, y);
    return tr::mul(tr::exp(y), 3.0);
  };
  auto f = opscope::compile(fn, "with_custom");
  Tensor x = randn({4, 8}, 1, DType::f32, nullptr, 0, 0.3f);
  f(x);
  CompileReport rep = f.report({x});
  EXPECT_NE(rep.compiled_graph.find("custom(%0) name=compiler_test.twice"), std::string::npos) << rep.compiled_graph;
  EXPECT_EQ(rep.kernels.size(), 1u);
  Tensor x2 = randn({4, 8}, 2, DType::f32, nullptr, 0, 0.3f);
  expect_close(f(x2), fn(x2), 1e-5);
}

TEST(CompilerTrace, WhatTheTracerCannotSeeRunsEagerly) {
  TempCache c("fallback");
  // A tensor written by a launch the tracer does not see (the runtime layer directly).
  auto fn = [](const Tensor& x) {
    Tensor y = runtime::allocate(x.shape(), x.dtype(), x.device());
    LaunchSpec s;
    s.name = "test.copy";
    s.work = 1;
    const float* xp = x.data<float>();
    float* yp = y.data<float>();
    int64_t n = x.numel();
    s.body = [=](int64_t, int64_t) {
      for (int64_t i = 0; i < n; ++i) yp[i] = xp[i] + 1;
    };
    runtime::launch(x.device(), std::move(s), {&x}, {&y});
    return tr::mul(y, 2.0);
  };
  auto f = opscope::compile(fn, "fallback");
  Tensor x = randn({10}, 1);
  f(x);
  CompileReport rep = f.report({x});
  EXPECT_TRUE(rep.eager_fallback);
  EXPECT_NE(rep.fallback_reason.find("tracer does not see"), std::string::npos) << rep.fallback_reason;
  Tensor x2 = randn({10}, 2);
  expect_close(f(x2), fn(x2), 0);  // right, because it ran eagerly

  // An op name the compiler does not know.
  auto g = opscope::compile(
      [](const Tensor& x) {
        Tensor y = opscope::exp(x);
        compiler::record("frobnicate", {&x}, y);
        return tr::mul(y, 2.0);
      },
      "unknown_op");
  g(x);
  EXPECT_NE(g.report({x}).fallback_reason.find("frobnicate"), std::string::npos);
  expect_close(g(x2), opscope::mul(opscope::exp(x2), 2.0), 0);
}

TEST(CompilerTrace, CompileErrorsSurfaceFromTheCall) {
  TempCache c("errors");
  CompileOptions o;
  o.cxx = "/nonexistent/c++";
  auto f = opscope::compile(rms_naive, "no_cc", o);
  Tensor x = randn({2, 16}, 1), w = randn({16}, 2);
  try {
    f(x, w);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[compile] no C++ compiler", 0), 0u) << e.what();
  }
  EXPECT_EQ(f.num_signatures(), 0u);
  try {
    f({x});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[no_cc] the compiled function takes 2 tensors, got 1", 0), 0u) << e.what();
  }
}

TEST(CompilerTrace, ACompiledCallIsOneOpInTheProfile) {
  TempCache c("profile");
  auto f = opscope::compile(rms_naive, "rms_profiled");
  Tensor x = randn({64, 512}, 1), w = randn({512}, 2);
  prof::Profiler p;
  p.start();
  f(x, w).to_float_vector();  // compiles
  f(x, w).to_float_vector();  // runs the kernel
  p.stop();
  const prof::Trace& t = p.trace();
  uint64_t region = 0;
  int regions = 0, compiles = 0;
  for (auto& e : t.events) {
    if (e.kind != prof::EventKind::op) continue;
    if (e.name == "rms_profiled") regions++, region = e.id;
    if (e.name == "compile:rms_profiled") compiles++;
  }
  EXPECT_EQ(regions, 1);
  EXPECT_EQ(compiles, 1);
  int kernels = 0;
  for (auto& e : t.events)
    if (e.kind == prof::EventKind::kernel && e.name == "fused_mul_mean_add_rsqrt_mul_mul_f32") {
      ++kernels;
      EXPECT_EQ(e.parent, region);
    }
  EXPECT_GE(kernels, 1);
  // The kernel's artifact, for the profile's kernel table.
  auto art = compiler::find_kernel_artifact("fused_mul_mean_add_rsqrt_mul_mul_f32");
  ASSERT_TRUE(art);
  EXPECT_EQ(art->hash, f.report({x, w}).hash);
  EXPECT_TRUE(fs::exists(art->manifest));
}

TEST(CompilerTrace, CompiledFunctionsInsideTracedFunctionsAreInlined) {
  TempCache c("inline");
  auto inner = opscope::compile([](const Tensor& a) { return tr::exp(tr::mul(a, 2.0)); }, "inner");
  auto outer = opscope::compile([&](const Tensor& a) { return tr::add(inner(a), 1.0); }, "outer");
  Tensor x = randn({100}, 1, DType::f32, nullptr, 0, 0.5f);
  outer(x);
  CompileReport rep = outer.report({x});
  ASSERT_EQ(rep.kernels.size(), 1u) << rep.str();
  EXPECT_EQ(rep.kernels[0], "fused_mul_exp_add_f32");
  EXPECT_EQ(inner.num_signatures(), 0u);
  Tensor x2 = randn({100}, 2, DType::f32, nullptr, 0, 0.5f);
  expect_close(outer(x2), opscope::add(opscope::exp(opscope::mul(x2, 2.0)), 1.0), 1e-5);
}
