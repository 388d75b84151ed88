// A compiled graph's matmuls against a weight (an input read through views): packed on
// the second call, the same product as the eager matmul, and never stale: a weight
// written by a launch or by the host runs unpacked and is packed again. A B computed in
// the graph and products too narrow to split are never packed.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "compiler_test_util.h"
#include "opscope/analysis/advisor/advise.h"
#include "opscope/compiler/compile.h"
#include "opscope/compiler/passes.h"
#include "opscope/compiler/pipeline.h"
#include "opscope/kernels/cpu/copy.h"
#include "opscope/kernels/cpu/packed_matmul.h"
#include "opscope/ops/ops.h"
#include "opscope/profiler/session.h"
#include "opscope/runtime/device.h"
#include "opscope/runtime/tensor.h"
#include "trace_util.h"

using namespace opscope;
using namespace opscope::compiler;
using namespace opscope::compiler::testing;
using opscope::test::profiled;

namespace {

// x (2, 64, K) @ w (N, K) transposed, + bias (N): a Linear on a 3-d input.
struct Linear {
  Graph g;
  int64_t K, N;
  Linear(int64_t k, int64_t n, bool computed_weight = false) : K(k), N(n) {
    g.name = "linear";
    int x = input(g, {2, 64, K}), w = input(g, {N, K}), b = input(g, {N});
    if (computed_weight) w = unary(g, OpKind::exp, w);  // B made in the graph: not a weight
    Attrs view;
    int wt = g.add(OpKind::as_strided, {w}, {K, N}, DType::f32, view, Strides{1, K});
    g.outputs = {g.add(OpKind::matmul, {x, wt, b}, {2, 64, N}, DType::f32)};
  }
};

double max_rel_error(const Tensor& got, const Tensor& want) {
  std::vector<float> g = got.to_float_vector(), w = want.to_float_vector();
  EXPECT_EQ(g.size(), w.size());
  double worst = 0, scale = 1e-6;
  for (float v : w) scale = std::max(scale, double(std::fabs(v)));
  for (size_t i = 0; i < g.size() && i < w.size(); ++i) worst = std::max(worst, std::fabs(double(g[i]) - w[i]) / scale);
  return worst;
}

Tensor eager(const Tensor& x, const Tensor& w, const Tensor& b) { return matmul(x, w.transpose(0, 1), b); }

std::vector<std::string> launch_names(const prof::Trace& t) {
  std::vector<std::string> names;
  for (const auto& e : t.events)
    if (e.kind == prof::EventKind::launch) names.push_back(e.name);
  return names;
}

}  // namespace

TEST(PackedWeights, AWeightIsPackedOnTheSecondCallAndGivesTheSameProduct) {
  Linear lin(256, 512);
  CompileReport rep;
  Executable exe = compile_graph(lin.g, {}, rep);
  ASSERT_TRUE(exe.packed);
  Tensor x = randn({2, 64, 256}, 1), w = randn({512, 256}, 2), b = randn({512}, 3);
  Tensor want = eager(x, w, b);
  for (int call = 0; call < 3; ++call) {
    Tensor y = exe.run({x, w, b}).at(0);
    EXPECT_EQ(y.shape(), (Shape{2, 64, 512}));
    EXPECT_LT(max_rel_error(y, want), 1e-5) << "call " << call;
    EXPECT_EQ(exe.packed->packed(), call == 0 ? 0 : 1) << "call " << call;
  }
  // Another activation on the same weight reuses the pack.
  Tensor x2 = randn({2, 64, 256}, 4);
  EXPECT_LT(max_rel_error(exe.run({x2, w, b}).at(0), eager(x2, w, b)), 1e-5);
  if (__builtin_cpu_supports("avx512bf16")) {
    EXPECT_EQ(exe.packed->packed(), 1);  // elsewhere oneDNN may have only a reference kernel: not packed
  }
}

// Packing is a launch of its own, before the first packed product, that the cores run in
// parallel: on the host, with fresh pages, ViT-B/16's weights took ~1 s while the device idled.
// The packed chunks are the device's memory: the caching allocator's, counted in its stats,
// and taken inside the matmul op that packs them, where a memory profile shows them.
TEST(PackedWeights, PackingIsALaunchIntoTheDevicesMemory) {
  Linear lin(256, 512);
  CompileReport rep;
  Executable exe = compile_graph(lin.g, {}, rep);
  Tensor x = randn({2, 64, 256}, 1), w = randn({512, 256}, 2), b = randn({512}, 3);
  exe.run({x, w, b});
  Tensor y, y2;
  prof::Trace t = profiled([&] {
    y = exe.run({x, w, b}).at(0);
    y2 = exe.run({x, w, b}).at(0);
  });
  ASSERT_EQ(exe.packed->packed(), 1);
  std::vector<std::string> launches = launch_names(t);
  int64_t allocated = 0;
  for (const auto& e : t.events)
    if (e.kind == prof::EventKind::alloc) allocated += e.bytes;
  EXPECT_EQ(launches, (std::vector<std::string>{"pack_weights_f32", "matmul_packed_f32", "matmul_packed_f32"}));
  EXPECT_LT(max_rel_error(y, eager(x, w, b)), 1e-5);
  EXPECT_LT(max_rel_error(y2, eager(x, w, b)), 1e-5);
  EXPECT_GE(allocated - y.nbytes() - y2.nbytes(), 256 * 512 * 4) << "the packed weights, from the device's allocator";
  uint64_t packing_op = 0;
  for (const auto& e : t.events)
    if (e.kind == prof::EventKind::launch && e.name == "pack_weights_f32") packing_op = e.parent;
  int64_t under_it = 0;
  for (const auto& e : t.events)
    if (e.kind == prof::EventKind::alloc && packing_op && e.parent == packing_op) under_it += e.bytes;
  for (const auto& e : t.events) {
    if (e.kind == prof::EventKind::op && e.id == packing_op) {
      EXPECT_EQ(e.name, "matmul");
    }
  }
  EXPECT_GE(under_it - y.nbytes(), 256 * 512 * 4) << "the packed weights, under the matmul that packed them";
}

// compile()'s first call traces the function, running it eagerly: that call sees the
// weight, so the second packs it (a profile that warms up for two calls is steady).
TEST(PackedWeights, ACompiledFunctionPacksOnItsSecondCall) {
  auto f = compile([](const Tensor& x, const Tensor& w) { return matmul(x, w.transpose(0, 1)); }, "packs_second");
  Tensor x = randn({2, 64, 256}, 1), w = randn({512, 256}, 2);
  auto kernels_of_call = [&] {
    Tensor y;
    std::vector<std::string> names = launch_names(profiled([&] { y = f(x, w); }));
    EXPECT_LT(max_rel_error(y, matmul(x, w.transpose(0, 1))), 1e-5);
    return names;
  };
  std::vector<std::string> first = kernels_of_call();
  EXPECT_EQ(std::count(first.begin(), first.end(), "pack_weights_f32"), 0) << "the traced call runs eagerly";
  EXPECT_EQ(kernels_of_call(), (std::vector<std::string>{"pack_weights_f32", "matmul_packed_f32"}));
  EXPECT_EQ(kernels_of_call(), (std::vector<std::string>{"matmul_packed_f32"}));
  // Written since: seen again first, packed on the call after.
  cpu_kernels::launch_copy(w, randn({512, 256}, 3));
  EXPECT_EQ(kernels_of_call(), (std::vector<std::string>{"matmul_f32"}));
  EXPECT_EQ(kernels_of_call(), (std::vector<std::string>{"pack_weights_f32", "matmul_packed_f32"}));
}

// A profile that holds the packing call shows time no steady call spends: the advisor says
// so, and a profile of the calls after it has no such finding.
TEST(PackedWeights, TheAdvisorCallsPackingAOneTimeCost) {
  Linear lin(256, 512);
  CompileReport rep;
  Executable exe = compile_graph(lin.g, {}, rep);
  Tensor x = randn({2, 64, 256}, 1), w = randn({512, 256}, 2), b = randn({512}, 3);
  exe.run({x, w, b});
  auto profile_two_calls = [&] {
    return advisor::advise(profiled([&] {
      for (int i = 0; i < 2; ++i) exe.run({x, w, b});
    }));
  };
  auto packing = [](const advisor::Advice& a) {
    for (const advisor::Finding& f : a.findings)
      if (f.kind == "one_time_packing") return f;
    return advisor::Finding{};
  };
  advisor::Finding f = packing(profile_two_calls());
  ASSERT_EQ(f.kind, "one_time_packing");
  EXPECT_TRUE(f.title.starts_with("One-time cost: the compiled graph packed its weights")) << f.title;
  EXPECT_NE(f.detail.find("1 pack_weights launch reordered"), std::string::npos) << f.detail;
  EXPECT_GT(f.impact_ns, 0);
  EXPECT_GT(f.t1, f.t0);
  EXPECT_EQ(packing(profile_two_calls()).kind, "") << "the steady calls pack nothing";
}

TEST(PackedWeights, AWeightWrittenSinceItWasPackedIsNeverReadStale) {
  Linear lin(256, 512);
  CompileReport rep;
  Executable exe = compile_graph(lin.g, {}, rep);
  Tensor x = randn({2, 64, 256}, 5), w = randn({512, 256}, 6), b = randn({512}, 7);
  exe.run({x, w, b});
  exe.run({x, w, b});
  ASSERT_EQ(exe.packed->packed(), 1);

  // Written by a launch (an in-place copy on the device).
  cpu_kernels::launch_copy(w, randn({512, 256}, 8));
  EXPECT_LT(max_rel_error(exe.run({x, w, b}).at(0), eager(x, w, b)), 1e-5);
  EXPECT_EQ(exe.packed->packed(), 0);
  EXPECT_LT(max_rel_error(exe.run({x, w, b}).at(0), eager(x, w, b)), 1e-5);
  EXPECT_EQ(exe.packed->packed(), 1) << "held still for a call: packed again";

  // Written by the host (what the torch bridge counts for its host copies).
  w.to_float_vector();  // the launch above has finished
  w.data<float>()[7] += 100.0f;
  w.storage()->host_writes.fetch_add(1);
  EXPECT_LT(max_rel_error(exe.run({x, w, b}).at(0), eager(x, w, b)), 1e-5);
  EXPECT_EQ(exe.packed->packed(), 0);

  // Another tensor with the same shape: a new storage, whatever its address.
  Tensor w2 = randn({512, 256}, 9);
  exe.run({x, w2, b});
  EXPECT_LT(max_rel_error(exe.run({x, w2, b}).at(0), eager(x, w2, b)), 1e-5);
  EXPECT_LT(max_rel_error(exe.run({x, w, b}).at(0), eager(x, w, b)), 1e-5);
}

TEST(PackedWeights, ABComputedInTheGraphOrTooNarrowToSplitIsNeverPacked) {
  for (bool computed : {true, false}) {
    Linear lin(computed ? 256 : 1024, computed ? 512 : 64, computed);  // both large enough to pack
    CompileReport rep;
    Executable exe = compile_graph(lin.g, {}, rep);
    Tensor x = randn({2, 64, lin.K}, 10), w = randn({lin.N, lin.K}, 11, DType::f32, nullptr, 0, 0.1f),
           b = randn({lin.N}, 12);
    Tensor want = eager(x, computed ? exp(w) : w, b);
    for (int call = 0; call < 3; ++call) EXPECT_LT(max_rel_error(exe.run({x, w, b}).at(0), want), 1e-5);
    bool narrow_splits = !computed && cpu().num_cores() == 1;  // one core: one chunk is the whole product
    EXPECT_EQ(exe.packed->packed(), narrow_splits ? 1 : 0) << (computed ? "computed B" : "64 columns");
  }
}

namespace {

// x (rows, K) @ view(w (N, K)) transposed, then (+ bias) and an activation; through a view
// back to 3-d when `view_back` (a Linear without a bias on a 3-d input).
Graph linear_act(int64_t rows, int64_t K, int64_t N, bool bias, OpKind act, bool view_back = false,
                 bool computed_weight = false) {
  Graph g;
  g.name = "linear_act";
  int x = input(g, {rows, K}), w = input(g, {N, K}), b = input(g, {N});
  if (computed_weight) w = unary(g, OpKind::exp, w);
  Attrs view;
  int wt = g.add(OpKind::as_strided, {w}, {K, N}, DType::f32, view, Strides{1, K});
  int y = g.add(OpKind::matmul, {x, wt}, {rows, N}, DType::f32);
  if (bias) y = binary(g, OpKind::add, y, b);
  if (view_back) y = g.add(OpKind::as_strided, {y}, {2, rows / 2, N}, DType::f32, view, Strides{rows / 2 * N, N, 1});
  g.outputs = {unary(g, act, y)};
  return g;
}

const Node* the_matmul(const Graph& g) {
  for (const Node& n : g.nodes)
    if (n.kind == OpKind::matmul) return &n;
  return nullptr;
}

}  // namespace

// The bias add and activation after a matmul on a weight join it (oneDNN applies them in its
// launch); with "pack" off, on a B computed in the graph, or on a product too small to pack,
// they stay a fused kernel. Every variant computes the same values as the eager ops.
TEST(PackedWeights, TheBiasAndActivationAfterAMatmulOnAWeightJoinIt) {
  struct Case {
    bool bias, view_back, computed, pack;
    int64_t N;
    bool joins;
  };
  for (Case c : {Case{true, false, false, true, 512, true}, Case{false, true, false, true, 512, true},
                 Case{true, false, false, false, 512, false}, Case{true, false, true, true, 512, false},
                 Case{true, false, false, true, 64, false}}) {
    std::string what = fmt::format("bias {} view {} computed {} pack {} N {}", c.bias, c.view_back, c.computed,
                                   c.pack, c.N);
    Graph g = linear_act(128, 256, c.N, c.bias, OpKind::gelu, c.view_back, c.computed);
    Graph passed = g;
    PassOptions po;
    po.pack = c.pack;
    run_passes(passed, po, nullptr);
    passed.compact();
    const Node* mm = the_matmul(passed);
    ASSERT_TRUE(mm) << what;
    EXPECT_EQ(mm->attrs.epilogue.has_value(), c.joins) << what;
    if (c.joins) {
      EXPECT_EQ(*mm->attrs.epilogue, OpKind::gelu) << what;
      EXPECT_EQ(mm->inputs.size(), c.bias ? 3u : 2u) << what;
      EXPECT_EQ(count_kind(passed, OpKind::fused) + count_kind(passed, OpKind::gelu) + count_kind(passed, OpKind::add), 0)
          << what << "\n" << passed.str();
    }

    CompileOptions opts;
    if (!c.pack) opts.passes.pack = false;
    CompileReport rep;
    Executable exe = compile_graph(g, opts, rep);
    Tensor x = randn({128, 256}, 20), w = randn({c.N, 256}, 21, DType::f32, nullptr, 0, 0.1f), b = randn({c.N}, 22);
    Tensor y = matmul(x, (c.computed ? exp(w) : w).transpose(0, 1));
    if (c.bias) y = add(y, b);
    if (c.view_back) y = y.reshape({2, 64, c.N});
    Tensor want = gelu(y);
    for (int call = 0; call < 3; ++call) {
      Tensor got = exe.run({x, w, b}).at(0);
      EXPECT_EQ(got.shape(), want.shape()) << what;
      EXPECT_LT(max_rel_error(got, want), 1e-5) << what << ", call " << call;
    }
  }
}

// A bf16 weight is packed too where oneDNN has a bf16 matmul for this CPU (AVX-512: the
// bf16 dot products), and not on one where it would run oneDNN's reference kernel (AVX2):
// the same values as the eager bf16 matmul within bf16 rounding either way.
TEST(PackedWeights, ABf16WeightIsPackedWhereTheCpuHasABf16Kernel) {
  Graph g;
  g.name = "linear_bf16";
  int x = input(g, {128, 256}, DType::bf16), w = input(g, {512, 256}, DType::bf16);
  Attrs view;
  int wt = g.add(OpKind::as_strided, {w}, {256, 512}, DType::bf16, view, Strides{1, 256});
  g.outputs = {g.add(OpKind::matmul, {x, wt}, {128, 512}, DType::bf16)};
  CompileReport rep;
  Executable exe = compile_graph(g, {}, rep);
  Tensor xs = randn({128, 256}, 30, DType::bf16), ws = randn({512, 256}, 31, DType::bf16);
  Tensor want = matmul(xs.to(DType::f32), ws.to(DType::f32).transpose(0, 1));
  for (int call = 0; call < 3; ++call) {
    Tensor y = exe.run({xs, ws}).at(0);
    EXPECT_EQ(y.dtype(), DType::bf16);
    EXPECT_LT(max_rel_error(y.to(DType::f32), want), 1e-2) << "call " << call;
  }
  bool cpu_has_kernel = cpu_kernels::PackedMatmul::make(xs, ws.transpose(0, 1), nullptr, cpu().num_cores()) != nullptr;
  EXPECT_EQ(exe.packed->packed(), cpu_has_kernel ? 1 : 0);
}

namespace {

// A Linear on a 3-d x (rows split in two), its result viewed back to 3-d, then `op` with a
// residual r: r + view(x @ wᵀ + b) (or r * ...), with gelu before the view if `act`.
// `r_after`: r computed from x after the matmul (exp of x, defined later); `r_transposed`: r
// read through a transposed view.
struct ResidualCase {
  OpKind op;
  bool r_after, r_transposed;
  bool joins;
  bool act = false;
};

Graph linear_residual(int64_t rows, int64_t K, const ResidualCase& c) {
  Graph g;
  g.name = "linear_residual";
  const int64_t N = K;
  int x = input(g, {rows, K}), w = input(g, {N, K}), b = input(g, {N}), r = input(g, {2, rows / 2, N});
  Attrs view;
  int wt = g.add(OpKind::as_strided, {w}, {K, N}, DType::f32, view, Strides{1, K});
  int y = binary(g, OpKind::add, g.add(OpKind::matmul, {x, wt}, {rows, N}, DType::f32), b);
  if (c.act) y = unary(g, OpKind::gelu, y);
  if (c.r_after) r = g.add(OpKind::as_strided, {unary(g, OpKind::exp, x)}, {2, rows / 2, N}, DType::f32, view,
                           Strides{rows / 2 * N, N, 1});
  if (c.r_transposed) r = g.add(OpKind::as_strided, {r}, {2, rows / 2, N}, DType::f32, view, Strides{rows / 2 * N, 1, rows / 2});
  y = g.add(OpKind::as_strided, {y}, {2, rows / 2, N}, DType::f32, view, Strides{rows / 2 * N, N, 1});
  g.outputs = {binary(g, c.op, r, y)};
  return g;
}

}  // namespace

// A residual add (or a gate's multiply) of a packed matmul's result joins it (oneDNN's
// binary post-op, after the bias): one launch, named for it, the values of the eager ops.
// An operand computed after the matmul or read strided stays its own op.
TEST(PackedWeights, AResidualAddOrMultiplyOfAPackedMatmulJoinsIt) {
  const int64_t rows = 128, K = 256;
  for (ResidualCase c : {ResidualCase{OpKind::add, false, false, true}, ResidualCase{OpKind::mul, false, false, true},
                         ResidualCase{OpKind::add, true, false, false}, ResidualCase{OpKind::add, false, true, false},
                         ResidualCase{OpKind::add, false, false, true, true}}) {
    std::string what =
        fmt::format("{} r_after {} r_transposed {} act {}", op_name(c.op), c.r_after, c.r_transposed, c.act);
    Graph g = linear_residual(rows, K, c);
    Graph passed = g;
    run_passes(passed, PassOptions{}, nullptr);
    passed.compact();
    const Node* mm = the_matmul(passed);
    ASSERT_TRUE(mm) << what;
    EXPECT_EQ(mm->attrs.residual.has_value(), c.joins) << what << "\n" << passed.str();
    if (c.joins) {
      EXPECT_EQ(*mm->attrs.residual, c.op) << what;
      EXPECT_EQ(mm->attrs.epilogue.has_value(), c.act) << what;
      EXPECT_EQ(mm->inputs.size(), 4u) << what;  // a, b, the bias, the residual
      EXPECT_EQ(count_kind(passed, c.op), 0) << what << "\n" << passed.str();
    }

    CompileReport rep;
    Executable exe = compile_graph(g, {}, rep);
    Tensor x = randn({rows, K}, 40), w = randn({K, K}, 41, DType::f32, nullptr, 0, 0.1f), b = randn({K}, 42),
           r = randn({2, rows / 2, K}, 43);
    Tensor r_read = c.r_after ? exp(x).reshape({2, rows / 2, K})
                    : c.r_transposed ? Tensor(r.storage(), {2, rows / 2, K}, {rows / 2 * K, 1, rows / 2}, 0, DType::f32)
                                     : r;
    Tensor y = add(matmul(x, w.transpose(0, 1)), b);
    y = (c.act ? gelu(y) : y).reshape({2, rows / 2, K});
    Tensor want = c.op == OpKind::add ? add(r_read, y) : mul(r_read, y);
    for (int call = 0; call < 3; ++call) {
      prof::Trace t = profiled([&] { EXPECT_LT(max_rel_error(exe.run({x, w, b, r}).at(0), want), 1e-5) << what; });
      if (call == 0) continue;  // the first call runs unpacked
      std::vector<std::string> names = launch_names(t);
      const std::string joined = fmt::format("matmul_packed{}_{}_f32", c.act ? "_gelu" : "", op_name(c.op));
      EXPECT_EQ(std::count(names.begin(), names.end(), joined), c.joins ? 1 : 0) << what << ", call " << call;
    }
  }
}
