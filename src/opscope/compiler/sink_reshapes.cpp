// Reshapes sink below unary elementwise ops: u(reshape(x)) = reshape(u(x)) when the
// reshape keeps the elements' order (a contiguous view of all of a contiguous value) and x
// comes from an elementwise op, which u then fuses with. A Linear on a 3-d input traces as
// addmm on a 2-d view, then a view back to 3-d, then its activation: the view split the
// bias add from the gelu, and they ran as two kernels.
#include "opscope/compiler/passes.h"

namespace opscope::compiler {

bool order_keeping_reshape(const Graph& g, const Node& r) {
  if (r.kind != OpKind::as_strided || r.dead || r.inputs.size() != 1 || r.attrs.offset != 0) return false;
  const Value& x = g.values[r.inputs[0]];
  const Value& v = g.values[r.outputs[0]];
  return x.contiguous() && v.contiguous() && x.shape.numel() == v.shape.numel() && x.dtype == v.dtype;
}

void sink_reshapes(Graph& g) {
  const std::vector<std::vector<int>> uses = g.uses();
  for (Node& n : g.nodes) {
    if (n.dead || op_class(n.kind) != OpClass::unary || n.inputs.size() != 1 || n.outputs.size() != 1) continue;
    int v = n.inputs[0];
    Node& r = g.nodes[size_t(g.values[v].node)];
    if (!order_keeping_reshape(g, r) || uses[size_t(v)].size() != 1) continue;
    // Only where the op then meets an elementwise producer it fuses with: after a matmul
    // the reshape would only move between the op and its consumer (SwiGLU's silu and mul).
    if (!is_elementwise(g.producer(r.inputs[0]).kind)) continue;
    // In place, so the order stays topological: r computes n's op on r's input, and n
    // reshapes r's result as r did. v takes the input's layout and the op's dtype.
    int x = r.inputs[0], w = n.outputs[0];
    std::swap(r.kind, n.kind);
    std::swap(r.attrs, n.attrs);
    std::swap(r.origins, n.origins);
    Value& moved = g.values[size_t(v)];
    moved.shape = g.values[size_t(x)].shape;
    moved.strides = g.values[size_t(x)].strides;
    moved.dtype = g.values[size_t(w)].dtype;
  }
}

}  // namespace opscope::compiler
