// The attention kernel against the ops it replaces (matmul, the score steps, softmax,
// matmul) on strided heads, odd sizes, broadcast masks and several row blocks; its
// refusals; and the pass that makes a graph's attention one node.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "compiler_test_util.h"
#include "opscope/compiler/executor.h"
#include "opscope/compiler/passes.h"
#include "opscope/core/error.h"
#include "opscope/kernels/cpu/attention.h"
#include "opscope/kernels/cpu/sgemm.h"
#include "opscope/ops/ops.h"
#include "opscope/runtime/device.h"
#include "opscope/runtime/runtime.h"
#include "opscope/runtime/tensor.h"

using namespace opscope;
using cpu_kernels::ScoreStep;

namespace {

Tensor run_attention(const Tensor& q, const Tensor& kt, const Tensor& v, const std::vector<ScoreStep>& steps,
                     const Shape& scores) {
  Tensor out = empty({q.shape()[0], q.shape()[1], v.shape()[2]});
  std::vector<const Tensor*> reads{&q, &kt, &v};
  for (const ScoreStep& s : steps)
    if (s.operand) reads.push_back(s.operand);
  const Tensor* writes[] = {&out};
  runtime::launch(cpu(), cpu_kernels::attention_spec(out, q, kt, v, steps, scores), reads, writes);
  return out;
}

double max_rel_error(const Tensor& got, const Tensor& want) {
  std::vector<float> g = got.to_float_vector(), w = want.to_float_vector();
  EXPECT_EQ(g.size(), w.size());
  double scale = 0, err = 0;
  for (float x : w) scale = std::max(scale, double(std::fabs(x)));
  for (size_t i = 0; i < g.size() && i < w.size(); ++i) err = std::max(err, double(std::fabs(g[i] - w[i])));
  return err / scale;
}

}  // namespace

// GPT-2's heads as the in-projection's columns (q, k, v each a strided view of one
// (T, 3E) buffer), kᵀ read transposed, a scale, a causal mask as a multiply and an add of
// -inf, and a per-head bias broadcast over batch and rows: scores (2, 3, Tq, Tk). Tk is
// long enough (2200 keys: 29 rows of 256 KiB of scores) that the kernel takes its query rows
// in two blocks, the second partial.
TEST(Attention, EqualsItsOpsOnStridedHeadsAndBroadcastMasks) {
  const int64_t B = 2, H = 3, T = 37, Tk = 2200, D = 24;
  // q: (B*H, T, D) columns of a (T, B*H*D) buffer; k, v: (B*H, Tk, D) of a (Tk, 2*B*H*D) one
  Tensor qbuf = randn({T, B * H * D}, 1), kv = randn({Tk, 2 * B * H * D}, 2);
  Tensor q(qbuf.storage(), {B * H, T, D}, {D, B * H * D, 1}, 0, DType::f32);
  Tensor kt(kv.storage(), {B * H, D, Tk}, {D, 1, 2 * B * H * D}, 0, DType::f32);
  Tensor v(kv.storage(), {B * H, Tk, D}, {D, 2 * B * H * D, 1}, B * H * D, DType::f32);
  std::vector<float> keep(size_t(T * Tk)), inf(size_t(T * Tk));
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < Tk; ++j) {
      bool on = j <= i + Tk - T;  // causal, the queries being the last T positions
      keep[size_t(i * Tk + j)] = on ? 1.0f : 0.0f;
      inf[size_t(i * Tk + j)] = on ? 0.0f : -std::numeric_limits<float>::infinity();
    }
  Tensor mul_mask = from_host(keep, {1, 1, T, Tk}), add_mask = from_host(inf, {1, 1, T, Tk});
  Tensor head_bias = randn({H, 1, Tk}, 4);  // (H, 1, Tk): per head, over rows
  const Shape scores{B, H, T, Tk};
  std::vector<ScoreStep> steps(4);
  steps[0].op = ScoreStep::Op::mul, steps[0].scalar = 0.2f;
  steps[1].op = ScoreStep::Op::mul, steps[1].operand = &mul_mask;
  steps[2].op = ScoreStep::Op::add, steps[2].operand = &add_mask;
  steps[3].op = ScoreStep::Op::sub, steps[3].operand = &head_bias, steps[3].swap = true;  // bias - s
  Tensor got = run_attention(q, kt, v, steps, scores);

  Tensor s = mul(matmul(q, kt), 0.2).reshape(scores);
  s = sub(head_bias, add(mul(s, mul_mask), add_mask));
  Tensor want = matmul(softmax(s, -1).reshape({B * H, T, Tk}), v);
  EXPECT_LE(max_rel_error(got, want), 1e-5);

  // An operand broadcast along the keys (one value a query row): the row's scores shift alike.
  Tensor per_row = randn({1, 1, T, 1}, 6);
  std::vector<ScoreStep> shift(1);
  shift[0].op = ScoreStep::Op::add, shift[0].operand = &per_row;
  Tensor shifted = run_attention(q, kt, v, shift, scores);
  Tensor s_shift = add(matmul(q, kt).reshape(scores), per_row);
  EXPECT_LE(max_rel_error(shifted, matmul(softmax(s_shift, -1).reshape({B * H, T, Tk}), v)), 1e-5);

  // q stored transposed (its rows one element apart), no steps
  Tensor qt = randn({B * H, D, T}, 5).transpose(1, 2);
  Tensor plain = run_attention(qt, kt, v, {}, {B * H, T, Tk});
  EXPECT_LE(max_rel_error(plain, matmul(softmax(matmul(qt, kt), -1), v)), 1e-5);
}

TEST(Attention, SgemmLayoutReadsEitherDenseDim) {
  auto rows = cpu_kernels::sgemm_layout(4, 8, 16, 1);  // rows 16 apart
  ASSERT_TRUE(rows);
  EXPECT_FALSE(rows->trans);
  EXPECT_EQ(rows->ld, 16);
  auto cols = cpu_kernels::sgemm_layout(4, 8, 1, 12);  // columns 12 apart: read transposed
  ASSERT_TRUE(cols);
  EXPECT_TRUE(cols->trans);
  EXPECT_EQ(cols->ld, 12);
  EXPECT_FALSE(cpu_kernels::sgemm_layout(4, 8, 16, 2));  // neither dim dense
  EXPECT_FALSE(cpu_kernels::sgemm_layout(4, 8, 4, 1));   // rows overlap
  EXPECT_TRUE(cpu_kernels::sgemm_layout(1, 8, 0, 1));    // one row: its stride unused
}

TEST(Attention, ShapesThatDoNotChainAreRefusedByName) {
  Tensor q = randn({2, 5, 4}, 1), kt = randn({2, 4, 6}, 2), v = randn({2, 7, 3}, 3), out = empty({2, 5, 3});
  try {
    cpu_kernels::attention_spec(out, q, kt, v, {}, {2, 5, 6});
    FAIL() << "v of 7 rows against 6 keys was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[attention]"), std::string::npos) << e.what();
  }
  Tensor mask = randn({3, 6}, 4);  // 3 rows against the scores' 5
  ScoreStep st;
  st.operand = &mask;
  Tensor v6 = randn({2, 6, 3}, 5);
  EXPECT_THROW(cpu_kernels::attention_spec(out, q, kt, v6, {st}, {2, 5, 6}), Error);
  Tensor skewed(q.storage(), {2, 5, 4}, {20, 4, 2}, 0, DType::f32);  // no dense dim
  EXPECT_THROW(cpu_kernels::attention_spec(out, skewed, kt, v6, {}, {2, 5, 6}), Error);
}

namespace {

using namespace opscope::compiler;
using namespace opscope::compiler::testing;

int softmax_last(Graph& g, int x) {
  Attrs a;
  a.axis = g.values[x].shape.size() - 1;
  return g.add(OpKind::softmax, {x}, g.values[x].shape, g.values[x].dtype, a);
}

// GPT-2's attention traced: heads of a (T, 3E) projection, scores reshaped to (1, H, T, T),
// scaled, masked by a multiply and an add, softmax, reshaped back, times v.
Graph gpt2_attention(int64_t T, int64_t H, int64_t D, bool scores_out) {
  Graph g;
  int qkv = input(g, {T, 3 * H * D}), keep = input(g, {1, 1, T, T}), inf = input(g, {1, 1, T, T});
  int q = view(g, qkv, {H, T, D}, {D, 3 * H * D, 1}, 0), kt = view(g, qkv, {H, D, T}, {D, 1, 3 * H * D}, H * D);
  int v = view(g, qkv, {H, T, D}, {D, 3 * H * D, 1}, 2 * H * D);
  int s = view(g, bmm(g, q, kt), {1, H, T, T}, {H * T * T, T * T, T, 1}, 0);
  int z = binary(g, OpKind::add, binary(g, OpKind::mul, scalar_op(g, OpKind::mul, s, 0.125), keep), inf);
  int p = view(g, softmax_last(g, z), {H, T, T}, {T * T, T, 1}, 0);
  g.outputs = {bmm(g, p, v)};
  if (scores_out) g.outputs.push_back(s);
  return g;
}

// ... then the heads back in token order, as `y.transpose(1, 2).contiguous().view(T, H*D)`.
Graph gpt2_attention_tokens_first(int64_t T, int64_t H, int64_t D) {
  Graph g = gpt2_attention(T, H, D, false);
  int y = view(g, g.outputs[0], {1, T, H, D}, {H * T * D, D, T * D, 1}, 0);
  g.outputs = {view(g, unary(g, OpKind::clone, y), {T, H * D}, {H * D, 1}, 0)};
  return g;
}

}  // namespace

TEST(AttentionPass, GptTwoAttentionIsOneNodeWithItsStepsAndEqualsItsOps) {
  const int64_t T = 20, H = 3, D = 8;
  Graph g = gpt2_attention(T, H, D, false);
  std::vector<float> keep(size_t(T * T)), inf(size_t(T * T));
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < T; ++j) {
      keep[size_t(i * T + j)] = j <= i;
      inf[size_t(i * T + j)] = j <= i ? 0.0f : -std::numeric_limits<float>::infinity();
    }
  std::vector<Tensor> xs{randn({T, 3 * H * D}, 1), from_host(keep, {1, 1, T, T}), from_host(inf, {1, 1, T, T})};
  std::vector<float> want = run_graph(g, xs);

  Graph f = g;
  fuse_attention(f);
  ASSERT_EQ(count_kind(f, OpKind::attention), 1) << f.str();
  EXPECT_EQ(count_kind(f, OpKind::matmul) + count_kind(f, OpKind::softmax) + count_kind(f, OpKind::mul), 0) << f.str();
  const Node& at = f.producer(f.outputs[0]);
  EXPECT_EQ(Graph::attrs_str(at), "scores=(1, 3, 20, 20) steps=[mul 0.125, mul #3, add #4]");
  std::vector<float> got = run_graph(f, xs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f * (1 + std::fabs(want[i]))) << i;

  // The heads put back in token order: the kernel writes them so, and the copy goes.
  Graph tokens = gpt2_attention_tokens_first(T, H, D);
  std::vector<float> want_tokens = run_graph(tokens, xs);
  fuse_attention(tokens);
  EXPECT_EQ(count_kind(tokens, OpKind::clone), 0) << tokens.str();
  ASSERT_EQ(count_kind(tokens, OpKind::attention), 1) << tokens.str();
  for (const Node& n : tokens.nodes)
    if (n.kind == OpKind::attention) {
      EXPECT_EQ(tokens.values[size_t(n.outputs[0])].strides, (Strides{D, H * D, 1}));
    }
  std::vector<float> got_tokens = run_graph(tokens, xs);
  ASSERT_EQ(got_tokens.size(), want_tokens.size());
  for (size_t i = 0; i < got_tokens.size(); ++i)
    EXPECT_NEAR(got_tokens[i], want_tokens[i], 1e-5f * (1 + std::fabs(want_tokens[i]))) << i;

  // The scores also an output: they must exist, so the ops stay.
  Graph kept = gpt2_attention(T, H, D, true);
  fuse_attention(kept);
  EXPECT_EQ(count_kind(kept, OpKind::attention), 0) << kept.str();

  // A softmax over another axis is not attention's.
  Graph other;
  int a = input(other, {2, 5, 4}), b = input(other, {2, 4, 5}), c = input(other, {2, 5, 3});
  Attrs ax;
  ax.axis = 1;
  int sm = other.add(OpKind::softmax, {bmm(other, a, b)}, Shape{2, 5, 5}, DType::f32, ax);
  other.outputs = {bmm(other, sm, c)};
  fuse_attention(other);
  EXPECT_EQ(count_kind(other, OpKind::attention), 0) << other.str();
}
