// Clones read through views: contiguous(x) (clone, .contiguous()) whose every use is a view
// becomes those views taken of x's own storage, when each one can be: a copy fewer, and its
// readers take the strides. nn.MultiheadAttention traces q.contiguous().view(T, B*H, hd) for
// each of q, k and v: three copies a layer of the in-projection's columns, which the batched
// matmuls read strided (as GPT-2's split heads already are).
#include <array>
#include <optional>
#include <utility>

#include "opscope/compiler/passes.h"
#include "opscope/kernels/cpu/elementwise.h"

namespace opscope::compiler {

namespace {

// A value's layout as dims of size > 1, adjacent ones merged where their strides allow
// (the elementwise kernels' coalesce): the same elements in the same order, in as few dims
// as there can be.
struct Layout {
  Shape size;
  Strides stride;
};

Layout canonical(const Value& v) {
  Layout d{v.shape, {}};
  std::array<Strides, 1> strides{v.strides};
  cpu_kernels::coalesce<1>(d.size, strides);
  d.stride = strides[0];
  return d;
}

// The strides and offset on x's storage of the view `view` of contiguous(x), if there are
// any: each dim of the view must step within one dim of x's layout, and no digit of x's
// index may carry into the next (then an index of the view maps to x's elements linearly).
std::optional<std::pair<Strides, int64_t>> compose(const Layout& x, const Value& view, int64_t offset) {
  const int k = x.size.size();
  std::vector<int64_t> inner(size_t(k), 1);  // elements of contiguous(x) per step of x's dim i
  for (int i = k - 1; i > 0; --i) inner[size_t(i - 1)] = inner[size_t(i)] * x.size[i];
  // The offset's digit in each of x's dims, and then the most each dim's digit can reach.
  std::vector<int64_t> top(static_cast<size_t>(k));
  int64_t rest = offset, at = 0;
  for (int i = 0; i < k; ++i) {
    top[size_t(i)] = rest / inner[size_t(i)];
    rest %= inner[size_t(i)];
    at += top[size_t(i)] * x.stride[i];
  }
  if (k == 0 ? offset != 0 : (rest != 0 || top[0] >= x.size[0])) return std::nullopt;
  Strides out;
  for (int d = 0; d < view.shape.size(); ++d) {
    int64_t n = view.shape[d], s = view.strides[d];
    out.push_back(0);
    if (n == 1 || s == 0) continue;
    int i = 0;
    while (i < k && inner[size_t(i)] > s) ++i;  // x's dim whose step s is: inner[i] <= s < inner[i - 1]
    if (i == k) return std::nullopt;
    const int64_t step = s / inner[size_t(i)];
    if (s % inner[size_t(i)] != 0 || step >= x.size[i]) return std::nullopt;
    top[size_t(i)] += (n - 1) * step;
    if (top[size_t(i)] >= x.size[i]) return std::nullopt;  // it would carry into dim i - 1
    out[d] = step * x.stride[i];
  }
  return std::make_pair(out, at);
}

bool is_copy_to_contiguous(const Node& n) {
  return !n.dead && (n.kind == OpKind::clone || n.kind == OpKind::contiguous) && n.inputs.size() == 1;
}

}  // namespace

void elide_clones(Graph& g) {
  const std::vector<std::vector<int>> uses = g.uses();
  for (Node& c : g.nodes) {
    if (!is_copy_to_contiguous(c)) continue;
    int xv = c.inputs[0], cv = c.outputs[0];
    const Value& cval = g.values[size_t(cv)];
    if (g.values[size_t(xv)].dtype != cval.dtype || !cval.contiguous() || uses[size_t(cv)].empty()) continue;
    // x itself, or the view of a root value it is: the views below are taken of the root.
    const Node& xp = g.producer(xv);
    int root = xp.kind == OpKind::as_strided ? xp.inputs[0] : xv;
    int64_t base = xp.kind == OpKind::as_strided ? xp.attrs.offset : 0;
    Layout x = canonical(g.values[size_t(xv)]);
    std::vector<std::pair<int, std::pair<Strides, int64_t>>> rewrites;
    bool all = true;
    for (int u : uses[size_t(cv)]) {
      const Node* view = u < 0 ? nullptr : &g.nodes[size_t(u)];
      if (!view || view->kind != OpKind::as_strided || uses[size_t(view->outputs[0])].empty()) {
        all = false;
        break;
      }
      const Value& vv = g.values[size_t(view->outputs[0])];
      auto s = compose(x, vv, view->attrs.offset);
      // A dense dim stays dense: a reader that wants its rows or columns so (a matmul's
      // operands) keeps them.
      bool dense_rows = s.has_value();
      for (int d = 0; s && d < vv.shape.size(); ++d)
        dense_rows = dense_rows && (vv.shape[d] == 1 || vv.strides[d] != 1 || s->first[d] == 1);
      bool is_output = false;
      for (int w : uses[size_t(view->outputs[0])]) is_output = is_output || w < 0;
      if (!s || !dense_rows || is_output) {
        all = false;
        break;
      }
      rewrites.emplace_back(u, std::move(*s));
    }
    if (!all) continue;
    for (auto& [u, s] : rewrites) {
      Node& view = g.nodes[size_t(u)];
      view.inputs[0] = root;
      view.attrs.offset = base + s.second;
      g.values[size_t(view.outputs[0])].strides = std::move(s.first);
      merge_origins(view, c);  // the copy's ops now end in the views
    }
    c.dead = true;
    if (xp.kind == OpKind::as_strided && uses[size_t(xv)].size() == 1) g.nodes[size_t(g.values[size_t(xv)].node)].dead = true;
  }
  g.compact();
}

}  // namespace opscope::compiler
