// Attention as one node: matmul(q, kᵀ) → [a reshape] → elementwise steps on the scores
// (a scale, masks added or multiplied in) → softmax over the last axis → [a reshape] →
// matmul(·, v) becomes attention(q, kᵀ, v, the steps' operands), which keeps each block
// of scores in a core's cache (kernels/cpu/attention.h). A scalar scale of q before the
// first matmul (nn.MultiheadAttention's q / sqrt(d)) joins the steps: (q/c)kᵀ = (qkᵀ)/c.
// Unfused, GPT-2's attention is two batched matmuls, a scale-and-mask kernel and a
// softmax, with the scores going to memory and back between each.
#include <algorithm>
#include <optional>

#include "opscope/compiler/passes.h"
#include "opscope/kernels/cpu/sgemm.h"

namespace opscope::compiler {

namespace {

struct Match {
  std::vector<int> removed;     // nodes that join the attention node
  std::vector<ScoreStep> steps;  // in order
  std::vector<int> operands;     // the steps' tensors, as value ids (step.input indexes them from 3)
  int q = -1, kt = -1, v = -1;
  Shape scores;
};

// A 3-d f32 value sgemm can read as a batch of matrices, none of its dims empty.
bool gemm_ready(const Value& v) {
  if (v.dtype != DType::f32 || v.shape.size() != 3 || v.shape.numel() == 0) return false;
  return cpu_kernels::sgemm_layout(v.shape[1], v.shape[2], v.strides[1], v.strides[2]).has_value();
}

// The step that binary node b applies to the running value `run` (one of its operands).
std::optional<ScoreStep> step_of(const Graph& g, const Node& b, int run, const Shape& scores) {
  if (b.kind != OpKind::add && b.kind != OpKind::sub && b.kind != OpKind::mul && b.kind != OpKind::div) return {};
  if (b.inputs.size() != 2 || (b.inputs[0] == run) == (b.inputs[1] == run)) return {};
  ScoreStep st;
  st.op = b.kind;
  st.swap = b.inputs[1] == run;
  int x = b.inputs[st.swap ? 0 : 1];
  if (g.is_scalar_constant(x)) {
    st.scalar = g.producer(x).attrs.scalar;
    return st;
  }
  const Value& xv = g.values[size_t(x)];
  if (xv.dtype != DType::f32 || !broadcasts_to(xv.shape, scores)) return {};
  st.input = x;  // a value id until the steps are in order (match numbers the operands)
  return st;
}

// The value behind an order-keeping reshape that only `uses` reads, or v itself.
int through_reshape(const Graph& g, const std::vector<std::vector<int>>& uses, int v, Match& m) {
  const Node& r = g.producer(v);
  if (!order_keeping_reshape(g, r) || !single_use(uses, r.inputs[0])) return v;
  m.removed.push_back(g.values[size_t(v)].node);
  return r.inputs[0];
}

// Backwards from the softmax's input z: the steps (numbered in order), the first matmul, and
// a scalar scale of q read by that matmul alone. False where the chain is not attention's.
bool match_scores(const Graph& g, const std::vector<std::vector<int>>& uses, int z, Match& m) {
  std::vector<ScoreStep> back;
  int run = z;
  for (;;) {
    const Node& p = g.producer(run);
    if (op_class(p.kind) != OpClass::binary || g.values[size_t(run)].shape != m.scores) break;
    auto full = [&](int x) { return single_use(uses, x) && g.values[size_t(x)].shape == m.scores; };
    int prev = full(p.inputs[0]) ? p.inputs[0] : full(p.inputs[1]) ? p.inputs[1] : -1;
    if (prev < 0) break;
    auto st = step_of(g, p, prev, m.scores);
    if (!st) break;
    back.push_back(*st);
    m.removed.push_back(g.values[size_t(run)].node);
    run = prev;
  }
  run = through_reshape(g, uses, run, m);
  const Node& s = g.producer(run);
  if (s.kind != OpKind::matmul || s.inputs.size() != 2 || s.attrs.epilogue || !single_use(uses, run)) return false;
  m.removed.push_back(g.values[size_t(run)].node);
  m.q = s.inputs[0];
  m.kt = s.inputs[1];
  // q / c or q * c, read by this matmul alone: the scale joins the steps, first.
  const Node& qp = g.producer(m.q);
  if ((qp.kind == OpKind::mul || qp.kind == OpKind::div) && single_use(uses, m.q) && qp.inputs.size() == 2 &&
      g.is_scalar_constant(qp.inputs[1]) && !g.is_scalar_constant(qp.inputs[0])) {
    ScoreStep st;
    st.op = qp.kind;
    st.scalar = g.producer(qp.inputs[1]).attrs.scalar;
    back.push_back(st);
    m.removed.push_back(g.values[size_t(m.q)].node);
    m.q = qp.inputs[0];
  }
  m.steps.assign(back.rbegin(), back.rend());
  for (ScoreStep& st : m.steps) {  // operands numbered in the order the steps read them
    if (st.input < 0) continue;
    if (std::find(m.operands.begin(), m.operands.end(), st.input) == m.operands.end()) m.operands.push_back(st.input);
    st.input = 3 + int(std::find(m.operands.begin(), m.operands.end(), st.input) - m.operands.begin());
  }
  return true;
}

// Forwards from the softmax: [a reshape, then] the matmul by v; v, or -1.
int match_output(const Graph& g, const std::vector<std::vector<int>>& uses, const Node& sm, Match& m) {
  int p = sm.outputs[0];
  if (!single_use(uses, p)) return -1;
  const Node* after = &g.nodes[size_t(uses[size_t(p)][0])];
  if (order_keeping_reshape(g, *after) && single_use(uses, after->outputs[0])) {
    m.removed.push_back(uses[size_t(p)][0]);
    p = after->outputs[0];
    after = &g.nodes[size_t(uses[size_t(p)][0])];
  }
  if (after->kind != OpKind::matmul || after->inputs.size() != 2 || after->attrs.epilogue || after->inputs[0] != p)
    return -1;
  return after->inputs[1];
}

std::optional<Match> match(const Graph& g, const std::vector<std::vector<int>>& uses, const Node& sm) {
  Match m;
  int z = sm.inputs[0];
  const Value& zv = g.values[size_t(z)];
  if (zv.dtype != DType::f32 || zv.shape.size() < 2 || sm.attrs.axis != zv.shape.size() - 1 || !single_use(uses, z))
    return {};
  m.scores = zv.shape;
  if (!match_scores(g, uses, z, m) || (m.v = match_output(g, uses, sm, m)) < 0) return {};
  // The heads as sgemm reads them, and the scores' shape theirs.
  const Value &q = g.values[size_t(m.q)], &k = g.values[size_t(m.kt)], &v = g.values[size_t(m.v)];
  if (!gemm_ready(q) || !gemm_ready(k) || !gemm_ready(v) || v.shape[0] != q.shape[0] || k.shape[0] != q.shape[0])
    return {};
  int64_t heads = 1;
  for (int d = 0; d + 2 < m.scores.size(); ++d) heads *= m.scores[d];
  if (heads != q.shape[0] || m.scores[m.scores.size() - 2] != q.shape[1] || m.scores.back() != k.shape[2]) return {};
  return m;
}

// The permutation of o's dims that view u is, if it is one (u reads all of o, offset 0):
// then o can be laid out so that u is contiguous. o's new strides, or none.
std::optional<Strides> layout_making_contiguous(const Value& o, const Value& u, int64_t offset) {
  if (offset != 0 || o.shape.numel() != u.shape.numel() || !o.contiguous()) return {};
  Strides dense = contiguous_strides(o.shape), want = contiguous_strides(u.shape), out = dense;
  std::vector<bool> taken(size_t(o.shape.size()), false);
  for (int d = 0; d < u.shape.size(); ++d) {
    if (u.shape[d] == 1) continue;
    int e = 0;
    while (e < o.shape.size() && (taken[size_t(e)] || o.shape[e] != u.shape[d] || dense[e] != u.strides[d])) ++e;
    if (e == o.shape.size()) return {};
    taken[size_t(e)] = true;
    out[e] = want[d];
  }
  for (int e = 0; e < o.shape.size(); ++e)
    if (o.shape[e] != 1 && !taken[size_t(e)]) return {};
  return out;
}

// attention → a permuting view → a copy to contiguous (the heads put back in token order,
// `(att @ v).transpose(1, 2).contiguous()`): the kernel writes its rows where the copy
// would have put them, and the copy goes.
void write_in_copy_layout(Graph& g) {
  const std::vector<std::vector<int>> uses = g.uses();
  for (Node& a : g.nodes) {
    if (a.dead || a.kind != OpKind::attention || !single_use(uses, a.outputs[0])) continue;
    Node& u = g.nodes[size_t(uses[size_t(a.outputs[0])][0])];
    int uv = u.kind == OpKind::as_strided ? u.outputs[0] : -1;
    if (uv < 0 || !single_use(uses, uv)) continue;
    Node& c = g.nodes[size_t(uses[size_t(uv)][0])];
    if (c.kind != OpKind::clone && c.kind != OpKind::contiguous) continue;
    Value& o = g.values[size_t(a.outputs[0])];
    auto strides = layout_making_contiguous(o, g.values[size_t(uv)], u.attrs.offset);
    if (!strides || (*strides)[o.shape.size() - 1] != 1) continue;  // the kernel writes dense rows
    o.strides = *strides;
    g.values[size_t(uv)].strides = contiguous_strides(g.values[size_t(uv)].shape);
    merge_origins(a, c);
    g.replace_uses(c.outputs[0], uv);
    c.dead = true;
  }
}

}  // namespace

void fuse_attention(Graph& g) {
  const std::vector<std::vector<int>> uses = g.uses();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& sm = g.nodes[i];
    if (sm.dead || sm.kind != OpKind::softmax) continue;
    std::optional<Match> m = match(g, uses, sm);
    if (!m) continue;
    bool taken = false;  // by an attention made earlier in this pass
    for (int r : m->removed) taken = taken || g.nodes[size_t(r)].dead;
    if (taken) continue;
    int o = uses[size_t(sm.outputs[0])][0];
    if (g.nodes[size_t(o)].kind == OpKind::as_strided) o = uses[size_t(g.nodes[size_t(o)].outputs[0])][0];
    Node& at = g.nodes[size_t(o)];
    at.kind = OpKind::attention;
    at.inputs = {m->q, m->kt, m->v};
    at.inputs.insert(at.inputs.end(), m->operands.begin(), m->operands.end());
    at.attrs = Attrs{};
    at.attrs.axes = m->scores.vec();
    at.attrs.score = m->steps;
    m->removed.push_back(int(i));
    for (int r : m->removed) {
      merge_origins(at, g.nodes[size_t(r)]);
      g.nodes[size_t(r)].dead = true;
    }
  }
  write_in_copy_layout(g);
  dce(g);  // and the constants the steps took in
}

}  // namespace opscope::compiler
