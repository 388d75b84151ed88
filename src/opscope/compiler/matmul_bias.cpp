// A matmul's bias add joins the matmul: add(matmul(a, b), bias) with bias of shape (N)
// becomes matmul(a, b, bias), which the CPU kernel adds in its own launch (the slice of C
// starts as the bias, sgemm adds onto it) instead of a second pass over C. A Linear traces
// as addmm, and addmm lowers to matmul then add. Where the add fuses with what follows
// (a Linear and its activation), it stays: it costs no pass there.
#include "opscope/compiler/passes.h"

namespace opscope::compiler {

namespace {

// The matmul operand of `add` that can take the other operand as its bias, or -1.
int bias_target(const Graph& g, const Node& add, const std::vector<std::vector<int>>& uses) {
  for (int side = 0; side < 2; ++side) {
    int m = add.inputs[size_t(side)], bias = add.inputs[size_t(1 - side)];
    const Node& mm = g.producer(m);
    const Value &mv = g.values[size_t(m)], &bv = g.values[size_t(bias)];
    if (mm.kind != OpKind::matmul || mm.dead || mm.inputs.size() != 2 || uses[size_t(m)].size() != 1) continue;
    if (mv.dtype != DType::f32 || bv.dtype != DType::f32 || mv.shape.size() < 2) continue;
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

}  // namespace opscope::compiler
