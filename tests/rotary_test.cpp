// The rotary kernel against the ops it replaces (x * cos + cat(-x2, x1) * sin) on strided
// heads, broadcast cos and sin, a strided last dim; its refusals; and the pass that makes a
// graph's rotate_half pattern one node, in the orders torch code writes it, and not others.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler_test_util.h"
#include "opscope/compiler/executor.h"
#include "opscope/compiler/passes.h"
#include "opscope/core/error.h"
#include "opscope/kernels/cpu/rotary.h"
#include "opscope/ops/ops.h"
#include "opscope/runtime/device.h"
#include "opscope/runtime/runtime.h"
#include "opscope/runtime/tensor.h"

using namespace opscope;
using namespace opscope::compiler;
using namespace opscope::compiler::testing;

namespace {

Tensor run_rotary(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  Tensor out = empty(x.shape());
  const Tensor* reads[] = {&x, &cos, &sin};
  const Tensor* writes[] = {&out};
  runtime::launch(cpu(), cpu_kernels::rotary_spec(out, x, cos, sin), reads, writes);
  return out;
}

// What the traced ops compute, op by op.
Tensor rotary_ops(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  const int64_t D = x.shape()[x.ndim() - 1], h = D / 2;
  Tensor x1 = x.slice(x.ndim() - 1, 0, h), x2 = x.slice(x.ndim() - 1, h, D);
  return add(mul(x, cos), mul(concat({neg(x2), x1}, x.ndim() - 1), sin));
}

double max_rel_error(const Tensor& got, const Tensor& want) {
  std::vector<float> g = got.to_float_vector(), w = want.to_float_vector();
  EXPECT_EQ(g.size(), w.size());
  double scale = 1e-30, err = 0;
  for (float v : w) scale = std::max(scale, double(std::fabs(v)));
  for (size_t i = 0; i < g.size() && i < w.size(); ++i) err = std::max(err, std::fabs(double(g[i]) - w[i]));
  return err / scale;
}

}  // namespace

// Llama's q: the heads of a (T, H*D) projection read as (1, H, T, D), cos and sin (T, D);
// then cos as (1, 1, T, D) and sin as (D) (one position), 7 odd-width heads of D = 10, and
// x with a strided last dim (a transposed view).
TEST(Rotary, EqualsItsOpsOnStridedHeadsAndBroadcastCosSin) {
  const int64_t T = 37, H = 3, D = 64;
  Tensor proj = randn({T, H * D}, 1);
  Tensor q(proj.storage(), {1, H, T, D}, {H * T * D, D, H * D, 1}, 0, DType::f32);
  Tensor cos = randn({T, D}, 2), sin = randn({T, D}, 3);
  EXPECT_LT(max_rel_error(run_rotary(q, cos, sin), rotary_ops(q, cos, sin)), 1e-6);

  Tensor cos4 = randn({1, 1, T, D}, 4), sin1 = randn({D}, 5);
  EXPECT_LT(max_rel_error(run_rotary(q, cos4, sin1), rotary_ops(q, cos4, sin1)), 1e-6);

  Tensor odd = randn({7, 5, 10}, 6), c10 = randn({5, 10}, 7), s10 = randn({5, 10}, 8);
  EXPECT_LT(max_rel_error(run_rotary(odd, c10, s10), rotary_ops(odd, c10, s10)), 1e-6);

  Tensor base = randn({D, T}, 9);
  Tensor xt(base.storage(), {T, D}, {1, T}, 0, DType::f32);  // last dim T apart
  EXPECT_LT(max_rel_error(run_rotary(xt, cos, sin), rotary_ops(xt, cos, sin)), 1e-6);

  Tensor none = empty({0, D});  // no rows: nothing to do, no error
  EXPECT_EQ(run_rotary(none, cos.slice(0, 0, 0), sin.slice(0, 0, 0)).numel(), 0);
}

TEST(Rotary, AnOddWidthOrCosThatDoesNotBroadcastIsRefusedByName) {
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Tensor x = randn({4, 6}, 1), c = randn({4, 6}, 2);
  std::string odd = message([&] { run_rotary(randn({4, 5}, 3), randn({4, 5}, 4), randn({4, 5}, 5)); });
  EXPECT_NE(odd.find("[rotary] x's last dim must be even"), std::string::npos) << odd;
  std::string bad = message([&] { run_rotary(x, randn({3, 6}, 6), c); });
  EXPECT_NE(bad.find("[rotary] cos of shape (3, 6) does not broadcast to x's (4, 6)"), std::string::npos) << bad;
  std::string f16 = message([&] { run_rotary(x.to(DType::f16), c, c); });
  EXPECT_NE(f16.find("[rotary] x, cos and sin must be f32"), std::string::npos) << f16;
}

namespace {

struct Order {
  bool cos_first, rotated_first, neg_lower;  // mul(cos, x); add(rotated, x*cos); cat(-x1, x2)
};

// x = heads of a projection (1, H, T, D) as views of input 0 (T, H*D); cos, sin (T, D);
// out = x * cos + rotate_half(x) * sin, each product and sum in the order given.
Graph rope_graph(int64_t T, int64_t H, int64_t D, Order o) {
  Graph g;
  g.name = "rope";
  int proj = input(g, {T, H * D}), cos = input(g, {T, D}), sin = input(g, {T, D});
  const Strides st{H * T * D, D, H * D, 1};
  const int64_t h = D / 2;
  int x = view(g, proj, {1, H, T, D}, st, 0);
  int x1 = view(g, proj, {1, H, T, h}, st, 0), x2 = view(g, proj, {1, H, T, h}, st, h);
  Attrs cat;
  cat.axis = 3;
  int rh = o.neg_lower ? g.add(OpKind::concat, {unary(g, OpKind::neg, x1), x2}, {1, H, T, D}, DType::f32, cat)
                       : g.add(OpKind::concat, {unary(g, OpKind::neg, x2), x1}, {1, H, T, D}, DType::f32, cat);
  int xc = o.cos_first ? binary(g, OpKind::mul, cos, x) : binary(g, OpKind::mul, x, cos);
  int rs = binary(g, OpKind::mul, rh, sin);
  g.outputs = {o.rotated_first ? binary(g, OpKind::add, rs, xc) : binary(g, OpKind::add, xc, rs)};
  return g;
}

}  // namespace

TEST(RotaryPass, RotateHalfTimesSinPlusXTimesCosIsOneNodeInEitherOrder) {
  const int64_t T = 12, H = 2, D = 16;
  std::vector<Tensor> xs{randn({T, H * D}, 1), randn({T, D}, 2), randn({T, D}, 3)};
  for (Order o : {Order{false, false, false}, Order{true, true, false}, Order{false, false, true}}) {
    Graph g = rope_graph(T, H, D, o);
    std::vector<float> want = run_graph(g, xs);
    Graph f = g;
    fuse_rotary(f);
    const bool matches = !o.neg_lower;  // cat(-x1, x2) rotates the other way: not RoPE's
    EXPECT_EQ(count_kind(f, OpKind::rotary), matches ? 1 : 0) << f.str();
    if (matches) {
      EXPECT_EQ(count_kind(f, OpKind::concat) + count_kind(f, OpKind::neg) + count_kind(f, OpKind::mul), 0) << f.str();
    }
    std::vector<float> got = run_graph(f, xs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f * (1 + std::fabs(want[i]))) << i;
  }

  // rotate_half(x) also an output: it must exist, so the ops stay.
  Graph kept = rope_graph(T, H, D, Order{false, false, false});
  for (const Node& n : kept.nodes)
    if (n.kind == OpKind::concat) kept.outputs.push_back(n.outputs[0]);
  ASSERT_EQ(kept.outputs.size(), 2u);
  fuse_rotary(kept);
  EXPECT_EQ(count_kind(kept, OpKind::rotary), 0) << kept.str();
}

// The pipeline runs it unless "rotary" is switched off (as it is for a CUDA graph, whose
// executor has no rotary kernel).
TEST(RotaryPass, ThePipelineRunsItUnlessSwitchedOff) {
  for (bool on : {true, false}) {
    Graph g = rope_graph(12, 2, 16, Order{false, false, false});
    PassOptions po;
    po.rotary = on;
    run_passes(g, po, nullptr);
    EXPECT_EQ(count_kind(g, OpKind::rotary), on ? 1 : 0) << g.str();
  }
  PassOptions po;
  ASSERT_TRUE(disable_pass(po, "rotary"));
  EXPECT_FALSE(po.rotary);
}
