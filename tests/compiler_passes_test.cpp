// The compiler's passes on small hand-built graphs: dead code, common subexpressions,
// constant folding, and the fusion decisions on known graphs (naive RMSNorm is one
// kernel; softmax, layer norm and SiLU·mul as ops are one kernel each; matmul, custom
// ops and reductions over other axes stay eager). No compiler runs here: graphs without
// fused kernels run on their eager ops.
#include <gtest/gtest.h>

#include <cstdlib>

#include "compiler_test_util.h"
#include "opscope/compiler/executor.h"
#include "opscope/compiler/kernel.h"
#include "opscope/compiler/passes.h"
#include "opscope/core/error.h"
#include "opscope/runtime/tensor.h"

using namespace opscope;
using namespace opscope::compiler;
using namespace opscope::compiler::testing;

namespace {

int matmul(Graph& g, int a, int b) {
  Shape s{g.values[a].shape[0], g.values[b].shape[1]};
  return g.add(OpKind::matmul, {a, b}, s, g.values[a].dtype);
}

std::vector<const FusedKernel*> fused(const Graph& g) {
  std::vector<const FusedKernel*> ks;
  for (const Node& n : g.nodes)
    if (n.kind == OpKind::fused) ks.push_back(n.attrs.kernel.get());
  return ks;
}

void all_passes(Graph& g) { run_passes(g, PassOptions{}, nullptr); }

}  // namespace

TEST(CompilerPasses, DeadCodeIsRemovedAndInputsStay) {
  Graph g;
  int x = input(g, {4, 8}), y = input(g, {4, 8});
  int used = binary(g, OpKind::add, x, x);
  unary(g, OpKind::exp, binary(g, OpKind::mul, x, y));  // never returned
  g.outputs = {used};
  dce(g);
  EXPECT_EQ(g.nodes.size(), 3u);  // two inputs + add
  EXPECT_EQ(g.inputs.size(), 2u);
  EXPECT_EQ(g.producer(g.outputs[0]).kind, OpKind::add);
}

TEST(CompilerPasses, CommonSubexpressionsMerge) {
  Graph g;
  int x = input(g, {4, 8}), w = input(g, {8});
  int a = binary(g, OpKind::mul, x, w);
  int b = binary(g, OpKind::mul, w, x);  // commutative: the same value
  int c = binary(g, OpKind::sub, x, w);
  int d = binary(g, OpKind::sub, w, x);  // not commutative: stays
  int e1 = unary(g, OpKind::exp, a), e2 = unary(g, OpKind::exp, b);
  g.outputs = {binary(g, OpKind::add, binary(g, OpKind::add, e1, e2), binary(g, OpKind::add, c, d))};
  size_t before = g.nodes.size();
  cse(g);
  EXPECT_EQ(g.nodes.size(), before - 2);  // one mul and one exp fewer
  EXPECT_EQ(count_kind(g, OpKind::mul), 1);
  EXPECT_EQ(count_kind(g, OpKind::exp), 1);
  EXPECT_EQ(count_kind(g, OpKind::sub), 2);
}

TEST(CompilerPasses, CustomOpsAndDifferentAttributesDoNotMerge) {
  Graph g;
  int x = input(g, {4, 8});
  Attrs ca;
  ca.name = "user_op";
  int c1 = g.add(OpKind::custom, {x}, {4, 8}, DType::f32, ca);
  int c2 = g.add(OpKind::custom, {x}, {4, 8}, DType::f32, ca);
  int m1 = reduce_last(g, OpKind::mean, x, true);
  int m2 = reduce_last(g, OpKind::mean, x, false);
  g.outputs = {binary(g, OpKind::add, c1, c2), m1, m2};
  cse(g);
  EXPECT_EQ(count_kind(g, OpKind::custom), 2);
  EXPECT_EQ(count_kind(g, OpKind::mean), 2);
}

TEST(CompilerPasses, ScalarConstantsFold) {
  Graph g;
  int x = input(g, {3});
  int two = g.add_constant(2.0, DType::f32), three = g.add_constant(3.0, DType::f32);
  int five = binary(g, OpKind::add, two, three);
  int r = unary(g, OpKind::sqrt, g.add_constant(16.0, DType::f32));
  int y = binary(g, OpKind::mul, binary(g, OpKind::add, x, five), r);  // (x + 5) * 4
  int z = scalar_op(g, OpKind::mul, y, 1.0);                           // identity
  g.outputs = {scalar_op(g, OpKind::add, z, 0.0)};                      // identity
  fold_constants(g);
  dce(g);
  EXPECT_EQ(count_kind(g, OpKind::constant), 2);
  std::string s = g.str();
  EXPECT_NE(s.find("const 5"), std::string::npos) << s;
  EXPECT_NE(s.find("const 4"), std::string::npos) << s;
  EXPECT_EQ(count_kind(g, OpKind::add), 1);  // x + 5 only
  EXPECT_EQ(count_kind(g, OpKind::mul), 1);
  EXPECT_EQ(g.producer(g.outputs[0]).kind, OpKind::mul);
}

TEST(CompilerPasses, FoldingRoundsToTheDtypeAndKeepsLayouts) {
  Graph g;
  int one_third = binary(g, OpKind::div, g.add_constant(1.0, DType::bf16), g.add_constant(3.0, DType::bf16));
  // x is a transposed view: x + 0 makes it contiguous, so it must not fold to x.
  int x = g.add_input({2, 3}, Strides{1, 2}, DType::bf16);
  int y = scalar_op(g, OpKind::add, x, 0.0);
  g.outputs = {binary(g, OpKind::mul, y, one_third)};
  fold_constants(g);
  dce(g);
  EXPECT_EQ(count_kind(g, OpKind::add), 1);
  const Node& mul = g.producer(g.outputs[0]);
  ASSERT_EQ(mul.kind, OpKind::mul);
  const Node& c = g.producer(mul.inputs[1]);
  ASSERT_EQ(c.kind, OpKind::constant) << g.str();
  EXPECT_EQ(c.attrs.scalar, double(bf16_to_f32(f32_to_bf16(1.0f / 3.0f))));
}

TEST(CompilerFusion, NaiveRmsNormIsOneKernel) {
  Graph g = rms_norm_graph({32, 4096});
  all_passes(g);
  auto ks = fused(g);
  ASSERT_EQ(ks.size(), 1u) << g.str();
  EXPECT_EQ(ks[0]->name, "fused_mul_mean_add_rsqrt_mul_mul_f32");
  EXPECT_EQ(ks[0]->rows, 32);
  EXPECT_EQ(ks[0]->cols, 4096);
  EXPECT_EQ(ks[0]->passes, 2);
  EXPECT_FALSE(ks[0]->flat);
  // inputs + the fused node: nothing else runs
  EXPECT_EQ(g.nodes.size(), 3u) << g.str();
}

TEST(CompilerFusion, BF16RmsNormWithCastsIsOneKernel) {
  // x.to(f32) ... .to(bf16), the usual mixed-precision form
  Graph g;
  int xb = input(g, {4, 64}, DType::bf16), wb = input(g, {64}, DType::bf16);
  int x = cast(g, xb, DType::f32);
  int r = unary(g, OpKind::rsqrt, scalar_op(g, OpKind::add, reduce_last(g, OpKind::mean, binary(g, OpKind::mul, x, x), true), 1e-6));
  int y = cast(g, binary(g, OpKind::mul, x, r), DType::bf16);
  g.outputs = {binary(g, OpKind::mul, y, wb)};
  all_passes(g);
  auto ks = fused(g);
  ASSERT_EQ(ks.size(), 1u) << g.str();
  EXPECT_EQ(ks[0]->name, "fused_to_f32_mul_mean_add_rsqrt_mul_to_bf16_mul_bf16");
}

TEST(CompilerFusion, SoftmaxLayerNormAndSiluMulAreOneKernelEach) {
  {
    Graph g;
    int x = input(g, {8, 100});
    int e = unary(g, OpKind::exp, binary(g, OpKind::sub, x, reduce_last(g, OpKind::max, x, true)));
    g.outputs = {binary(g, OpKind::div, e, reduce_last(g, OpKind::sum, e, true))};
    all_passes(g);
    auto ks = fused(g);
    ASSERT_EQ(ks.size(), 1u) << g.str();
    EXPECT_EQ(ks[0]->passes, 3);
  }
  {
    Graph g;
    int x = input(g, {8, 100}), w = input(g, {100}), b = input(g, {100});
    int d = binary(g, OpKind::sub, x, reduce_last(g, OpKind::mean, x, true));
    int v = reduce_last(g, OpKind::mean, binary(g, OpKind::mul, d, d), true);
    int y = binary(g, OpKind::mul, d, unary(g, OpKind::rsqrt, scalar_op(g, OpKind::add, v, 1e-5)));
    g.outputs = {binary(g, OpKind::add, binary(g, OpKind::mul, y, w), b)};
    all_passes(g);
    ASSERT_EQ(fused(g).size(), 1u) << g.str();
    EXPECT_EQ(fused(g)[0]->passes, 3);
  }
  {
    Graph g;
    int a = input(g, {8, 100}), b = input(g, {8, 100});
    g.outputs = {binary(g, OpKind::mul, unary(g, OpKind::silu, a), b)};
    all_passes(g);
    ASSERT_EQ(fused(g).size(), 1u) << g.str();
    EXPECT_TRUE(fused(g)[0]->flat);
  }
}

TEST(CompilerFusion, MatmulStaysSeparate) {
  // rms_norm(x) @ W, then silu(h) * h: two fused kernels around one matmul
  Graph g;
  int x = input(g, {16, 64}), w = input(g, {64}), W = input(g, {64, 32});
  int r = unary(g, OpKind::rsqrt, scalar_op(g, OpKind::add, reduce_last(g, OpKind::mean, binary(g, OpKind::mul, x, x), true), 1e-6));
  int h = matmul(g, binary(g, OpKind::mul, binary(g, OpKind::mul, x, r), w), W);
  g.outputs = {binary(g, OpKind::mul, unary(g, OpKind::silu, h), h)};
  all_passes(g);
  EXPECT_EQ(fused(g).size(), 2u) << g.str();
  EXPECT_EQ(count_kind(g, OpKind::matmul), 1);
}

namespace {
int reshape(Graph& g, int x, const Shape& s) {
  return g.add(OpKind::as_strided, {x}, s, g.values[x].dtype, {}, contiguous_strides(s));
}
}  // namespace

// A Linear on a 3-d input: the bias add on the 2-d matmul result, a view to 3-d, the
// gelu, a view back. The reshape sinks below the gelu and the add and gelu are one kernel;
// a reshape that is not order-keeping (a transpose) or that another op also reads stays.
TEST(CompilerFusion, AUnaryOpAfterAReshapeFusesWithTheOpBeforeIt) {
  Graph g;
  int x = input(g, {128, 64}), w = input(g, {64, 256}), b = input(g, {256});
  int h = binary(g, OpKind::add, matmul(g, x, w), b);
  int act = unary(g, OpKind::gelu, reshape(g, h, {1, 128, 256}));
  g.outputs = {reshape(g, act, {128, 256})};
  all_passes(g);
  std::vector<const FusedKernel*> ks = fused(g);
  ASSERT_EQ(ks.size(), 1u) << g.str();
  EXPECT_EQ(ks[0]->name, "fused_add_gelu_f32") << g.str();
  EXPECT_EQ(g.values[g.outputs[0]].shape, (Shape{128, 256}));
  EXPECT_EQ(count_kind(g, OpKind::gelu), 0);

  Graph t;  // a transpose: the elements' order changes, the gelu stays after it
  int y = input(t, {8, 16}), c = input(t, {16});
  int s = binary(t, OpKind::add, y, c);
  int tr = t.add(OpKind::as_strided, {s}, Shape{16, 8}, DType::f32, {}, Strides{1, 16});
  t.outputs = {unary(t, OpKind::exp, tr)};
  sink_reshapes(t);
  EXPECT_EQ(t.producer(t.outputs[0]).kind, OpKind::exp);
  EXPECT_EQ(t.producer(t.producer(t.outputs[0]).inputs[0]).kind, OpKind::as_strided);

  Graph mm;  // straight after a matmul: nothing to fuse with, the reshape stays before the op
  int p = input(mm, {8, 16}), q = input(mm, {16, 16});
  int sil = unary(mm, OpKind::silu, reshape(mm, matmul(mm, p, q), {2, 4, 16}));
  mm.outputs = {sil};
  sink_reshapes(mm);
  EXPECT_EQ(mm.producer(sil).kind, OpKind::silu);

  Graph two;  // the reshape's result also read by another op: left as it is
  int z = input(two, {8, 16});
  int r = reshape(two, unary(two, OpKind::neg, z), {2, 4, 16});
  two.outputs = {unary(two, OpKind::exp, r), r};
  sink_reshapes(two);
  EXPECT_EQ(two.producer(two.outputs[0]).kind, OpKind::exp);
  EXPECT_EQ(two.producer(two.outputs[1]).kind, OpKind::as_strided);
}

// A Linear's bias add with nothing elementwise after it joins the matmul (added in its
// launch); a bias add followed by an activation stays, fused with it; a bias that is not
// of shape (N) stays an add.
TEST(CompilerFusion, ABiasAddJoinsItsMatmulWhereItFusesWithNothingElse) {
  Graph g;
  int x = input(g, {128, 64}), w = input(g, {64, 256}), b = input(g, {256});
  int mm = matmul(g, x, w);
  g.outputs = {reshape(g, binary(g, OpKind::add, mm, b), {1, 128, 256})};
  all_passes(g);
  EXPECT_EQ(count_kind(g, OpKind::add), 0) << g.str();
  const Node& m = g.producer(g.producer(g.outputs[0]).inputs[0]);
  ASSERT_EQ(m.kind, OpKind::matmul) << g.str();
  EXPECT_EQ(m.inputs.size(), 3u);

  Graph act;  // bias, then relu: one fused kernel, the matmul keeps two operands
  int y = input(act, {16, 8}), v = input(act, {8, 32}), c = input(act, {32});
  act.outputs = {unary(act, OpKind::relu, binary(act, OpKind::add, matmul(act, y, v), c))};
  all_passes(act);
  ASSERT_EQ(fused(act).size(), 1u) << act.str();
  EXPECT_EQ(fused(act)[0]->name, "fused_add_relu_f32");

  Graph full;  // a (M, N) addend is no bias
  int p = input(full, {16, 8}), q = input(full, {8, 32}), r = input(full, {16, 32});
  full.outputs = {binary(full, OpKind::add, matmul(full, p, q), r)};
  all_passes(full);
  EXPECT_EQ(count_kind(full, OpKind::add), 1) << full.str();
}

TEST(CompilerFusion, NoCycleThroughAnOutsideNode) {
  // y = x * mean(x); z = matmul(y, W) (outside); out = y + z: y's group must not take
  // the final add, which depends on y through the matmul.
  Graph g;
  int x = input(g, {16, 16}), W = input(g, {16, 16});
  int m = reduce_last(g, OpKind::mean, x, true);
  int y = binary(g, OpKind::mul, x, m);
  int z = matmul(g, y, W);
  g.outputs = {unary(g, OpKind::exp, binary(g, OpKind::add, y, z))};
  all_passes(g);
  ASSERT_EQ(fused(g).size(), 2u) << g.str();
  // topological order: every operand is defined before its use
  std::vector<char> defined(g.values.size(), 0);
  for (const Node& n : g.nodes) {
    for (int v : n.inputs) EXPECT_TRUE(defined[size_t(v)]) << g.str();
    for (int v : n.outputs) defined[size_t(v)] = 1;
  }
}

TEST(CompilerFusion, OtherAxesIntegersAndLibraryOpsStayEager) {
  Graph g;
  int x = input(g, {8, 16});
  int s0 = reduce_axes(g, OpKind::sum, x, {0}, true);  // over rows: not fused
  int y = binary(g, OpKind::mul, x, s0);
  Attrs sm;
  sm.axis = 1;
  int p = g.add(OpKind::softmax, {y}, {8, 16}, DType::f32, sm);  // already a fused library kernel
  int i = input(g, {8, 16}, DType::i32);
  int ii = binary(g, OpKind::add, i, i);  // integers: eager
  g.outputs = {binary(g, OpKind::add, p, cast(g, ii, DType::f32))};
  all_passes(g);
  EXPECT_EQ(count_kind(g, OpKind::sum), 1);
  EXPECT_EQ(count_kind(g, OpKind::softmax), 1);
  EXPECT_EQ(count_kind(g, OpKind::add), 2);  // the integer add, and the last one (alone: no gain)
  EXPECT_EQ(count_kind(g, OpKind::fused), 0) << g.str();
}

TEST(CompilerFusion, NonKeepdimRowValuesDoNotBroadcastAlongRows) {
  // mean without keepdim has shape (4); x (4, 4) * m broadcasts along columns in numpy,
  // so it must not be fused as a per-row value.
  Graph g;
  int x = input(g, {4, 4});
  int m = reduce_last(g, OpKind::mean, x, false);
  g.outputs = {binary(g, OpKind::mul, x, unary(g, OpKind::exp, m))};
  all_passes(g);
  for (const FusedKernel* k : fused(g))
    for (const Node& n : k->body.nodes)
      if (n.kind == OpKind::mean) {
        for (const Node& m2 : k->body.nodes) EXPECT_NE(m2.kind, OpKind::mul) << g.str();
      }
}

TEST(CompilerPasses, PassesSwitchOffAndExplainShowsEachStep) {
  Graph g = rms_norm_graph({4, 8});
  std::string log;
  PassOptions off;
  off.fuse = false;
  run_passes(g, off, &log);
  EXPECT_EQ(count_kind(g, OpKind::fused), 0);
  EXPECT_NE(log.find("-- traced --"), std::string::npos);
  EXPECT_NE(log.find("-- after dce --"), std::string::npos);
  EXPECT_NE(log.find("-- fuse: off --"), std::string::npos);

  ::setenv("OPSCOPE_COMPILE_DISABLE", "cse,fuse", 1);
  PassOptions p = pass_options_from_env({});
  EXPECT_TRUE(p.dce);
  EXPECT_FALSE(p.cse);
  EXPECT_TRUE(p.fold);
  EXPECT_FALSE(p.fuse);
  ::setenv("OPSCOPE_COMPILE_DISABLE", "fuse,bogus", 1);
  try {
    pass_options_from_env({});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[compile]", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("bogus"), std::string::npos);
  }
  ::unsetenv("OPSCOPE_COMPILE_DISABLE");
}

namespace {
std::vector<float> run_eager(const Graph& g, const Tensor& x) {
  Executable exe;
  exe.graph = g;
  return exe.run({x})[0].to_vector<float>();
}
}  // namespace

// nn.MultiheadAttention's heads: q and k are column slices of the in-projection (T=6,
// E=8 of 3E=24, B=1), each made contiguous, then split into H=2 heads of 4 (k also
// transposed) for a batched matmul. The copies go: the views read the projection with
// the strides they compose to, and the product is unchanged. The heads' output,
// transposed back and flattened, cannot be a view of it: that copy stays.
TEST(CompilerPasses, ClonesReadOnlyThroughViewsBecomeViewsOfTheirSource) {
  Graph g;
  int x = input(g, {6, 24});
  int q = unary(g, OpKind::clone, view(g, x, {6, 1, 8}, {24, 24, 1}, 0));
  int k = g.add(OpKind::contiguous, {view(g, x, {6, 1, 8}, {24, 24, 1}, 8)}, Shape{6, 1, 8}, DType::f32);
  int qh = view(g, q, {2, 6, 4}, {4, 8, 1}, 0), kt = view(g, k, {2, 4, 6}, {4, 1, 8}, 0);
  int s = bmm(g, qh, kt);                                   // (2, 6, 6)
  int o = unary(g, OpKind::clone, view(g, s, {6, 2, 6}, {6, 36, 1}, 0));
  g.outputs = {view(g, o, {6, 12}, {12, 1}, 0)};
  Tensor in = randn({6, 24}, 3);
  std::vector<float> want = run_eager(g, in);

  Graph e = g;
  elide_clones(e);
  EXPECT_EQ(count_kind(e, OpKind::contiguous), 0) << e.str();
  ASSERT_EQ(count_kind(e, OpKind::clone), 1) << e.str();  // the heads' output
  const Node& mm = e.producer(e.producer(e.producer(e.producer(e.outputs[0]).inputs[0]).inputs[0]).inputs[0]);
  ASSERT_EQ(mm.kind, OpKind::matmul) << e.str();
  const Value &a = e.values[size_t(mm.inputs[0])], &b = e.values[size_t(mm.inputs[1])];
  EXPECT_EQ(e.producer(mm.inputs[0]).inputs[0], e.inputs[0]);
  EXPECT_EQ(a.strides, (Strides{4, 24, 1}));
  EXPECT_EQ(b.strides, (Strides{4, 1, 24}));
  EXPECT_EQ(e.producer(mm.inputs[0]).attrs.offset, 0);
  EXPECT_EQ(e.producer(mm.inputs[1]).attrs.offset, 8);
  EXPECT_EQ(run_eager(e, in), want);

  // A clone that an op reads, or that is an output through its view, stays; so does one
  // whose view would turn a dense dim into a strided one.
  Graph kept;
  int y = input(kept, {6, 24});
  int c1 = unary(kept, OpKind::clone, view(kept, y, {6, 8}, {24, 1}, 0));
  int c2 = unary(kept, OpKind::clone, view(kept, y, {6, 8}, {24, 1}, 8));
  int c3 = unary(kept, OpKind::clone, view(kept, y, {8, 6}, {1, 24}, 16));
  kept.outputs = {unary(kept, OpKind::exp, c1), view(kept, c2, {48}, {1}, 0),
                  unary(kept, OpKind::exp, view(kept, c3, {48}, {1}, 0))};
  elide_clones(kept);
  EXPECT_EQ(count_kind(kept, OpKind::clone), 3) << kept.str();
}
