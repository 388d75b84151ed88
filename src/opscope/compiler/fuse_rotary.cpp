// Rotary position embedding as one node: x * cos + rotate_half(x) * sin, where
// rotate_half(x) = cat(-x2, x1) of x's two halves along the last dim (Llama's, GPT-NeoX's),
// traces as two views of x, a neg, a concat, two muls and an add; the concat and the neg
// each make a pass of their own before the fused muls and add. The add becomes
// rotary(x, cos, sin) (kernels/cpu/rotary.h): one read of x, one write.
#include <optional>

#include "opscope/compiler/passes.h"

namespace opscope::compiler {

namespace {

// A value as a window of a base value: the base, the element offset, shape and strides.
struct Window {
  int base = -1;
  int64_t offset = 0;
  Shape shape;
  Strides strides;
};

Window window_of(const Graph& g, int v) {
  const Node& p = g.producer(v);
  const Value& val = g.values[size_t(v)];
  if (p.kind == OpKind::as_strided && !p.dead) return {p.inputs[0], p.attrs.offset, val.shape, val.strides};
  return {v, 0, val.shape, val.strides};
}

// Whether `half` is x's window over the columns [from, from + D/2), with x's other dims.
bool half_of(const Graph& g, int half, const Window& x, int64_t from) {
  const Window w = window_of(g, half);
  const int nd = x.shape.size();
  if (w.base != x.base || w.shape.size() != nd || w.strides != x.strides) return false;
  for (int d = 0; d + 1 < nd; ++d)
    if (w.shape[d] != x.shape[d]) return false;
  return w.shape[nd - 1] * 2 == x.shape[nd - 1] && w.offset == x.offset + from * x.strides[nd - 1];
}

struct RotaryMatch {
  int x = -1, cos = -1, sin = -1;
  std::vector<int> removed;  // the muls, the concat, the neg
};

// rh = cat(neg(x[..., h:]), x[..., :h]), read once: the base value the halves are windows of.
std::optional<int> rotated(const Graph& g, const std::vector<std::vector<int>>& uses, int rh) {
  const Node& cat = g.producer(rh);
  if (cat.kind != OpKind::concat || cat.dead || cat.inputs.size() != 2 || !single_use(uses, rh)) return {};
  const Value& cv = g.values[size_t(rh)];
  if (cat.attrs.axis != cv.shape.size() - 1) return {};
  const Node& neg = g.producer(cat.inputs[0]);
  if (neg.kind != OpKind::neg || neg.dead || !single_use(uses, cat.inputs[0])) return {};
  // x: the window over the whole width from the lower half's start
  Window lo = window_of(g, cat.inputs[1]);
  if (lo.shape.size() == 0) return {};
  Window x{lo.base, lo.offset, cv.shape, lo.strides};
  if (!half_of(g, cat.inputs[1], x, 0) || !half_of(g, neg.inputs[0], x, cv.shape.back() / 2)) return {};
  return lo.base;  // the caller matches it against the mul's x
}

std::optional<RotaryMatch> match_rotary(const Graph& g, const std::vector<std::vector<int>>& uses, const Node& add) {
  if (add.kind != OpKind::add || add.dead || add.inputs.size() != 2 || add.outputs.size() != 1) return {};
  const Value& out = g.values[size_t(add.outputs[0])];
  if (out.dtype != DType::f32 || out.shape.size() == 0 || out.shape.back() % 2 != 0) return {};
  for (int side = 0; side < 2; ++side) {
    const int a = add.inputs[size_t(side)], b = add.inputs[size_t(1 - side)];
    if (!single_use(uses, a) || !single_use(uses, b)) continue;
    const Node &ma = g.producer(a), &mb = g.producer(b);  // ma: x * cos, mb: rotate_half(x) * sin
    if (ma.kind != OpKind::mul || mb.kind != OpKind::mul || ma.dead || mb.dead) continue;
    for (int ri = 0; ri < 2; ++ri) {
      const int rh = mb.inputs[size_t(ri)], sin = mb.inputs[size_t(1 - ri)];
      std::optional<int> base = rotated(g, uses, rh);
      if (!base) continue;
      for (int xi = 0; xi < 2; ++xi) {
        const int x = ma.inputs[size_t(xi)], cos = ma.inputs[size_t(1 - xi)];
        const Window xw = window_of(g, x);
        const Value& xv = g.values[size_t(x)];
        if (xw.base != *base || xv.shape != out.shape || xv.dtype != DType::f32) continue;
        if (!half_of(g, g.producer(rh).inputs[1], xw, 0)) continue;  // x is the window the halves split
        const Value &cv = g.values[size_t(cos)], &sv = g.values[size_t(sin)];
        if (cv.dtype != DType::f32 || sv.dtype != DType::f32) continue;
        if (!broadcasts_to(cv.shape, out.shape) || !broadcasts_to(sv.shape, out.shape)) continue;
        RotaryMatch m;
        m.x = x, m.cos = cos, m.sin = sin;
        const Node& cat = g.producer(rh);
        m.removed = {g.values[size_t(a)].node, g.values[size_t(b)].node, g.values[size_t(rh)].node,
                     g.values[size_t(cat.inputs[0])].node};
        return m;
      }
    }
  }
  return {};
}

}  // namespace

void fuse_rotary(Graph& g) {
  const std::vector<std::vector<int>> uses = g.uses();
  bool any = false;
  for (Node& add : g.nodes) {
    std::optional<RotaryMatch> m = match_rotary(g, uses, add);
    if (!m) continue;
    bool taken = false;
    for (int r : m->removed) taken = taken || g.nodes[size_t(r)].dead;
    if (taken) continue;
    add.kind = OpKind::rotary;
    add.inputs = {m->x, m->cos, m->sin};
    add.attrs = Attrs{};
    g.values[size_t(add.outputs[0])].strides = contiguous_strides(g.values[size_t(add.outputs[0])].shape);
    for (int r : m->removed) {
      merge_origins(add, g.nodes[size_t(r)]);
      g.nodes[size_t(r)].dead = true;
    }
    any = true;
  }
  if (any) dce(g);  // the halves' views
}

}  // namespace opscope::compiler
