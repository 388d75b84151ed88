// A matmul's bias add joins the matmul: add(matmul(a, b), bias) with bias of shape (N)
// becomes matmul(a, b, bias), which the CPU kernel adds in its own launch (the slice of C
// starts as the bias, sgemm adds onto it) instead of a second pass over C. A Linear traces
// as addmm, and addmm lowers to matmul then add. Where the add fuses with what follows
// (a Linear and its activation), it stays: it costs no pass there, unless the matmul's
// weight is packed, where oneDNN adds it and applies the activation (fold_matmul_epilogue),
// then a residual add or gate multiply of C (fold_matmul_residual).
#include "opscope/compiler/packed_weights.h"
#include "opscope/compiler/passes.h"
#include "opscope/kernels/cpu/packed_matmul.h"

namespace opscope::compiler {

namespace {

// f32 matmuls add an f32 bias in their launch, packed or not; bf16 ones a bf16 bias when
// packed (oneDNN adds it to the f32 sums), and otherwise the matmul runs, then the add.
bool takes_bias(DType out, DType bias) { return out == bias && (out == DType::f32 || out == DType::bf16); }

// The matmul operand of `add` that can take the other operand as its bias, or -1.
int bias_target(const Graph& g, const Node& add, const std::vector<std::vector<int>>& uses) {
  for (int side = 0; side < 2; ++side) {
    int m = add.inputs[size_t(side)], bias = add.inputs[size_t(1 - side)];
    const Node& mm = g.producer(m);
    const Value &mv = g.values[size_t(m)], &bv = g.values[size_t(bias)];
    if (mm.kind != OpKind::matmul || mm.dead || mm.inputs.size() != 2 || uses[size_t(m)].size() != 1) continue;
    if (!takes_bias(mv.dtype, bv.dtype) || mv.shape.size() < 2) continue;
    if (bv.shape.size() != 1 || bv.shape[0] != mv.shape.back() || !bv.contiguous()) continue;
    if (g.values[size_t(add.outputs[0])].shape != mv.shape) continue;
    if (g.values[size_t(bias)].node > g.values[size_t(m)].node) continue;  // defined after the matmul
    return m;
  }
  return -1;
}

// Whether the add's result fuses onward, into an elementwise consumer (sink_reshapes has
// already moved a unary one from behind a reshape): there the bias add costs no pass of its
// own (it runs in the consumer's fused kernel), and the fusion keeps it.
bool fuses_onward(const Graph& g, int v, const std::vector<std::vector<int>>& uses) {
  for (int u : uses[size_t(v)])
    if (u >= 0 && is_elementwise(g.nodes[size_t(u)].kind)) return true;
  return false;
}

// Whether value `v` is a matmul (with or without a bias or activation already) whose weight
// will be packed: f32 or bf16, B a weight, large enough to be packed, and `v` used once.
bool packed_matmul(const Graph& g, int v, const std::vector<std::vector<int>>& uses) {
  const Node& mm = g.producer(v);
  if (mm.kind != OpKind::matmul || mm.dead || mm.attrs.residual || uses[size_t(v)].size() != 1) return false;
  const Value& out = g.values[size_t(v)];
  if ((out.dtype != DType::f32 && out.dtype != DType::bf16) || out.shape.size() < 2 || !g.read_from_source(mm.inputs[1]))
    return false;
  const int64_t N = out.shape.back(), K = g.values[size_t(mm.inputs[0])].shape.back();
  return N > 0 && cpu_kernels::PackedMatmul::worth_packing(out.shape.numel() / N, N, K);
}

bool takes_epilogue(const Graph& g, int v, const std::vector<std::vector<int>>& uses) {
  return packed_matmul(g, v, uses) && !g.producer(v).attrs.epilogue;
}

// The matmul result under `v`: v itself, or the matmul an in-order view of it reads, that
// view being its one use; -1 where `v` is neither.
int matmul_under(const Graph& g, int v, const std::vector<std::vector<int>>& uses) {
  const Node& p = g.producer(v);
  if (p.kind == OpKind::matmul) return v;
  if (!order_keeping_reshape(g, p) || uses[size_t(v)].size() != 1) return -1;
  return g.producer(p.inputs[0]).kind == OpKind::matmul ? p.inputs[0] : -1;
}

// oneDNN's bf16 matmul applies relu and gelu as fast as the fused kernel after it, and
// its silu, sigmoid and tanh slower (Linear(512, 2048) on 128 bf16 rows, compiled, two
// rounds: silu 454-473 -> 615-656 us, sigmoid 471-493 -> 614-680 us, tanh 469-479 ->
// 494-511 us; gelu 495-510 -> 475-510 us, relu 422-445 -> 407-433 us). f32 takes each.
bool epilogue_pays(OpKind act, DType dtype) {
  return dtype == DType::f32 || act == OpKind::relu || act == OpKind::gelu;
}

}  // namespace

void fold_matmul_bias(Graph& g) {
  const std::vector<std::vector<int>> uses = g.uses();
  for (Node& add : g.nodes) {
    if (add.dead || add.kind != OpKind::add || add.inputs.size() != 2 || add.outputs.size() != 1) continue;
    int m = bias_target(g, add, uses);
    if (m < 0 || fuses_onward(g, add.outputs[0], uses)) continue;
    int bias = add.inputs[0] == m ? add.inputs[1] : add.inputs[0];
    Node& mm = g.nodes[size_t(g.values[size_t(m)].node)];
    mm.inputs.push_back(bias);
    merge_origins(mm, add);
    g.replace_uses(add.outputs[0], m);
    add.dead = true;
  }
}

void fold_matmul_epilogue(Graph& g) {
  const std::vector<std::vector<int>> uses = g.uses();
  for (Node& act : g.nodes) {
    if (act.dead || !is_matmul_epilogue(act.kind) || act.outputs.size() != 1) continue;
    if (!epilogue_pays(act.kind, g.values[size_t(act.outputs[0])].dtype)) continue;
    // A Linear without a bias on a 3-d input is a matmul, an in-order view back to 3-d, then
    // the activation, which commutes with the view and joins the matmul before it.
    const int in = act.inputs[0];
    const Node& view = g.producer(in);
    const bool through_view = order_keeping_reshape(g, view) && uses[size_t(in)].size() == 1;
    int v = through_view ? view.inputs[0] : in, bias = -1;
    Node* add = &g.nodes[size_t(g.values[size_t(v)].node)];
    if (add->kind == OpKind::add && !add->dead && add->inputs.size() == 2 && uses[size_t(v)].size() == 1) {
      int m = bias_target(g, *add, uses);
      if (m < 0) continue;
      bias = add->inputs[0] == m ? add->inputs[1] : add->inputs[0];
      v = m;
    } else {
      add = nullptr;
    }
    if (!takes_epilogue(g, v, uses)) continue;
    Node& mm = g.nodes[size_t(g.values[size_t(v)].node)];
    if (add) {
      mm.inputs.push_back(bias);
      merge_origins(mm, *add);
      g.replace_uses(add->outputs[0], v);
      add->dead = true;
    }
    mm.attrs.epilogue = act.kind;
    merge_origins(mm, act);
    // The activation's readers read the view (now of the activated result), or the matmul's result.
    g.replace_uses(act.outputs[0], through_view ? in : v);
    act.dead = true;
  }
}

void fold_matmul_residual(Graph& g) {
  const std::vector<std::vector<int>> uses = g.uses();
  for (Node& op : g.nodes) {
    if (op.dead || (op.kind != OpKind::add && op.kind != OpKind::mul) || op.inputs.size() != 2 ||
        op.outputs.size() != 1 || op.inputs[0] == op.inputs[1])
      continue;
    const Value& res = g.values[size_t(op.outputs[0])];
    for (int side = 0; side < 2; ++side) {
      const int v = op.inputs[size_t(side)], other = op.inputs[size_t(1 - side)];
      const int m = matmul_under(g, v, uses);
      if (m < 0 || !packed_matmul(g, m, uses) || uses[size_t(v)].size() != 1) continue;
      const Value &mv = g.values[size_t(m)], &ov = g.values[size_t(other)];
      // C and the other operand element for element: the same shape as the result, dense,
      // f32 (oneDNN's bf16 binary post-op is not measured), and ready before the matmul runs
      if (mv.dtype != DType::f32 || ov.dtype != DType::f32 || res.dtype != DType::f32) continue;
      if (ov.shape != res.shape || g.values[size_t(v)].shape != res.shape || !ov.contiguous()) continue;
      if (ov.node > mv.node) continue;
      Node& mm = g.nodes[size_t(mv.node)];
      mm.inputs.push_back(other);
      mm.attrs.residual = op.kind;
      merge_origins(mm, op);
      g.replace_uses(op.outputs[0], v);
      op.dead = true;
      break;
    }
  }
}

}  // namespace opscope::compiler
