// Scalar constant folding and the identities x*1, 1*x, x/1, x+0, 0+x, x-0, x^1.
#include "opscope/compiler/passes.h"
#include "opscope/compiler/scalar_ops.h"

namespace opscope::compiler {

namespace {
bool is_const(const Graph& g, int v, double* value = nullptr) {
  const Node& n = g.producer(v);
  if (n.kind != OpKind::constant) return false;
  if (value) *value = n.attrs.scalar;
  return true;
}

bool same_layout(const Value& a, const Value& b) {
  return a.shape == b.shape && a.dtype == b.dtype && a.strides == b.strides;
}

// The operand that `n` passes through unchanged, or -1.
int identity_operand(const Graph& g, const Node& n) {
  if (n.inputs.size() != 2) return -1;
  int a = n.inputs[0], b = n.inputs[1];
  double c;
  switch (n.kind) {
    case OpKind::mul:
      if (is_const(g, b, &c) && c == 1) return a;
      if (is_const(g, a, &c) && c == 1) return b;
      return -1;
    case OpKind::add:
      if (is_const(g, b, &c) && c == 0) return a;
      if (is_const(g, a, &c) && c == 0) return b;
      return -1;
    case OpKind::sub:
    case OpKind::div:
    case OpKind::pow:
      if (is_const(g, b, &c) && c == (n.kind == OpKind::sub ? 0 : 1)) return a;
      return -1;
    default: return -1;
  }
}
}  // namespace

void fold_constants(Graph& g) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    if (n.dead || !is_elementwise(n.kind) || n.outputs.size() != 1 || n.inputs.empty()) continue;
    int out = n.outputs[0];
    const Value& ov = g.values[out];
    bool all_const = ov.shape.size() == 0 && is_floating(ov.dtype);
    double a = 0, b = 0;
    all_const = all_const && is_const(g, n.inputs[0], &a);
    if (n.inputs.size() > 1) all_const = all_const && is_const(g, n.inputs[1], &b);
    if (all_const) {
      // Eager ops compute in f32 and round the result to its dtype.
      float v = round_to(ov.dtype, eval_elementwise(n.kind, float(a), float(b), n.attrs.dtype));
      n.kind = OpKind::constant;
      n.inputs.clear();
      n.attrs = Attrs{};
      n.attrs.scalar = double(v);
      continue;
    }
    int x = identity_operand(g, n);
    if (x >= 0 && same_layout(g.values[x], ov)) {
      g.replace_uses(out, x);
      n.dead = true;
    }
  }
  g.compact();
}

}  // namespace opscope::compiler
