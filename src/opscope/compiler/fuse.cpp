// Fusion. A group has a domain D (a full shape). Its values are "full" (shape D) or
// per "row" (D with the last dim 1 or dropped: one value per row of D). Greedily, in
// topological order, a node joins the groups of its operands when
//   - an elementwise node's result is full or per-row in the group's domain and its
//     in-group operands broadcast the way the loop computes them (a full node may read
//     a keepdim row value; a row node reads row values of its own shape);
//   - a reduction over the last axis reads a full value of the group;
//   - the merged group does not reach itself through a node outside it (no cycle).
// Groups of two or more ops become one fused node; the rest stay eager nodes.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <mutex>
#include <set>

#include "opscope/compiler/kernel.h"
#include "opscope/compiler/passes.h"
#include "opscope/core/error.h"

namespace opscope::compiler {

namespace {

using Bits = std::vector<uint64_t>;
bool test(const Bits& b, int i) { return (b[size_t(i) >> 6] >> (i & 63)) & 1; }
void set(Bits& b, int i) { b[size_t(i) >> 6] |= uint64_t(1) << (i & 63); }
bool intersects(const Bits& a, const Bits& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] & b[i]) return true;
  return false;
}

void warn_once(const std::string& key, const std::string& msg) {
  static std::mutex m;
  static std::set<std::string> seen;
  std::lock_guard<std::mutex> g(m);
  if (seen.insert(key).second) std::fprintf(stderr, "[compile] %s\n", msg.c_str());
}

enum class Space : uint8_t { none, full, row };

int64_t cols_of(const Shape& d) { return d.size() ? d.back() : 1; }

Space space_of(const Shape& s, const Shape& d) {
  if (s == d) return Space::full;
  int n = d.size();
  if (n == 0) return Space::none;
  int64_t rows = d.numel() / std::max<int64_t>(cols_of(d), 1);
  Shape keep = d, flat;
  keep[n - 1] = 1;
  for (int i = 0; i < n - 1; ++i) flat.push_back(d[i]);
  if (s == keep || s == flat) return Space::row;
  if (rows == 1 && s.numel() == 1) return Space::row;
  return Space::none;
}

// Can a node of shape `ns` (space `sp`) read in-group value of shape `s` inside the loop?
bool operand_fits(const Shape& s, const Shape& ns, Space sp, const Shape& d) {
  if (sp == Space::full) {
    if (s == d) return true;
    // a per-row value broadcast along the last axis: (..., 1) aligned with d
    int n = d.size();
    if (s.size() > n || n == 0) return false;
    Shape p;
    for (int i = 0; i < n - s.size(); ++i) p.push_back(1);
    for (int64_t x : s) p.push_back(x);
    if (p[n - 1] != 1) return false;
    for (int i = 0; i < n - 1; ++i)
      if (p[i] != d[i]) return false;
    return true;
  }
  if (s == ns) return true;
  if (s.numel() != ns.numel()) return false;
  try {
    return broadcast_shapes(s, ns, "fuse") == ns;
  } catch (...) {
    return false;
  }
}

struct Group {
  Shape domain;
  bool has_reduction = false;
  std::vector<int> members;  // node indices, increasing
  Bits bits;
  bool alive = true;
};

class Fuser {
 public:
  explicit Fuser(Graph& g) : g_(g), n_(int(g.nodes.size())), words_((size_t(n_) + 63) / 64) {
    anc_.assign(size_t(n_), Bits(words_, 0));
    for (int i = 0; i < n_; ++i)
      for (int v : g_.nodes[i].inputs) {
        int p = g_.values[v].node;
        set(anc_[i], p);
        for (size_t w = 0; w < words_; ++w) anc_[i][w] |= anc_[p][w];
      }
    group_of_.assign(size_t(n_), -1);
  }

  void run() {
    for (int i = 0; i < n_; ++i)
      if (fusible(i)) place(i);
    rebuild();
  }

 private:
  const Value& out(int i) const { return g_.values[g_.nodes[i].outputs[0]]; }
  const Value& val(int v) const { return g_.values[v]; }
  bool is_const_value(int v) const { return g_.producer(v).kind == OpKind::constant; }

  bool fusible(int i) {
    const Node& n = g_.nodes[i];
    if (n.dead || n.outputs.size() != 1) return false;
    OpClass cls = op_class(n.kind);
    bool elementwise = is_elementwise(n.kind), reduction = cls == OpClass::reduction;
    if (!elementwise && !reduction) return false;
    const Value& o = out(i);
    // The first dtype that is not floating, among the operands and then the result.
    const DType* other = nullptr;
    for (int v : n.inputs)
      if (!other && !is_floating(val(v).dtype)) other = &val(v).dtype;
    if (!other && !is_floating(o.dtype)) other = &o.dtype;
    if (other) {
      bool result = other == &o.dtype;
      warn_once(fmt::format("{}:dtype", op_name(n.kind)),
                fmt::format("{} {} {} is not fused (fused kernels compute floating dtypes); it runs as its eager op",
                            op_name(n.kind), result ? "making" : "on", dtype_name(*other)));
      return false;
    }
    if (o.shape.numel() == 0 || !o.contiguous()) return false;
    if (reduction) {
      const Value& x = val(n.inputs[0]);
      if (n.kind == OpKind::var || n.kind == OpKind::argmax) {
        warn_once(op_name(n.kind), fmt::format("{} is not fused (no generated code for it); it runs as its eager op",
                                               op_name(n.kind)));
        return false;
      }
      int nd = x.shape.size();
      if (nd == 0 || x.shape.numel() == 0) return false;
      bool last = n.attrs.axes.size() == 1 && n.attrs.axes[0] == nd - 1;
      if (!last) {
        warn_once(fmt::format("{}:axes", op_name(n.kind)),
                  fmt::format("{} over axes other than the last one is not fused; it runs as its eager op",
                              op_name(n.kind)));
        return false;
      }
    }
    return true;
  }

  // Would the groups `gs` plus node i form a cycle through an outside node?
  bool cycle(const std::vector<int>& gs, int i) const {
    Bits m(words_, 0);
    std::vector<int> members{i};
    set(m, i);
    for (int gi : gs)
      for (int x : groups_[gi].members) {
        set(m, x);
        members.push_back(x);
      }
    for (int x : members)
      for (int v : g_.nodes[x].inputs) {
        int p = g_.values[v].node;
        if (test(m, p) || is_const_value(v)) continue;
        if (intersects(anc_[p], m)) return true;
      }
    return false;
  }

  bool fits(int i, int gi) const {
    const Group& G = groups_[gi];
    const Node& n = g_.nodes[i];
    const Shape& ns = out(i).shape;
    if (op_class(n.kind) == OpClass::reduction) {
      int v = n.inputs[0];
      return group_of_[g_.values[v].node] == gi && val(v).shape == G.domain;
    }
    Space sp = space_of(ns, G.domain);
    if (sp == Space::none) return false;
    for (int v : n.inputs) {
      int p = g_.values[v].node;
      if (group_of_[p] != gi) continue;
      if (!operand_fits(val(v).shape, ns, sp, G.domain)) return false;
    }
    return true;
  }

  void join(int i, int gi) {
    group_of_[i] = gi;
    groups_[gi].members.push_back(i);
    if (op_class(g_.nodes[i].kind) == OpClass::reduction) groups_[gi].has_reduction = true;
  }

  void absorb(int into, int from) {
    for (int x : groups_[from].members) {
      group_of_[x] = into;
      groups_[into].members.push_back(x);
    }
    groups_[into].has_reduction = groups_[into].has_reduction || groups_[from].has_reduction;
    groups_[from].alive = false;
    groups_[from].members.clear();
    std::sort(groups_[into].members.begin(), groups_[into].members.end());
  }

  void place(int i) {
    const Node& n = g_.nodes[i];
    std::vector<int> cands;
    for (int v : n.inputs) {
      int gi = group_of_[g_.values[v].node];
      if (gi >= 0 && std::find(cands.begin(), cands.end(), gi) == cands.end()) cands.push_back(gi);
    }
    // Prefer groups with a reduction, then larger ones.
    std::stable_sort(cands.begin(), cands.end(), [&](int a, int b) {
      if (groups_[a].has_reduction != groups_[b].has_reduction) return groups_[a].has_reduction;
      return groups_[a].members.size() > groups_[b].members.size();
    });
    int chosen = -1;
    for (int gi : cands)
      if (fits(i, gi) && !cycle({gi}, i)) {
        chosen = gi;
        break;
      }
    if (chosen < 0) {
      Group G;
      G.domain = op_class(n.kind) == OpClass::reduction ? val(n.inputs[0]).shape : out(i).shape;
      groups_.push_back(std::move(G));
      chosen = int(groups_.size()) - 1;
    }
    join(i, chosen);
    // Other operand groups over the same domain merge in when that is still valid.
    for (int gi : cands) {
      if (gi == chosen || !groups_[gi].alive || !(groups_[gi].domain == groups_[chosen].domain)) continue;
      bool ok = true;
      for (int v : n.inputs) {
        if (group_of_[g_.values[v].node] != gi) continue;
        Space sp = space_of(out(i).shape, groups_[chosen].domain);
        if (op_class(n.kind) == OpClass::reduction || !operand_fits(val(v).shape, out(i).shape, sp, groups_[chosen].domain))
          ok = false;
      }
      if (ok && !cycle({chosen, gi}, i)) absorb(chosen, gi);
    }
  }

  std::shared_ptr<FusedKernel> make_kernel(const Group& G, std::vector<int>& ext_inputs, std::vector<int>& outs) {
    auto k = std::make_shared<FusedKernel>();
    Graph& b = k->body;
    std::vector<int> map(g_.values.size(), -1);
    Bits m(words_, 0);
    for (int x : G.members) set(m, x);
    auto operand = [&](int v) {
      if (map[v] >= 0) return map[v];
      const Node& p = g_.producer(v);
      if (p.kind == OpKind::constant) {
        map[v] = b.add_constant(p.attrs.scalar, val(v).dtype);
      } else {
        map[v] = b.add_input(val(v).shape, val(v).strides, val(v).dtype);
        ext_inputs.push_back(v);
      }
      return map[v];
    };
    // Operands first, in order of first use, so that the body reads %0, %1, ... as inputs.
    for (int x : G.members)
      for (int v : g_.nodes[x].inputs)
        if (!test(m, g_.values[v].node) && g_.producer(v).kind != OpKind::constant) operand(v);
    std::vector<std::string> names;
    for (int x : G.members) {
      const Node& n = g_.nodes[x];
      std::vector<int> ins;
      for (int v : n.inputs) ins.push_back(test(m, g_.values[v].node) ? map[v] : operand(v));
      map[n.outputs[0]] = b.add(n.kind, std::move(ins), out(x).shape, out(x).dtype, n.attrs);
      names.push_back(n.kind == OpKind::cast ? std::string("to_") + std::string(dtype_name(n.attrs.dtype))
                                             : op_name(n.kind));
    }
    // Results: member values used outside the group or returned.
    auto uses = g_.uses();
    for (int x : G.members) {
      int v = g_.nodes[x].outputs[0];
      bool outside = false;
      for (int u : uses[v]) outside = outside || u < 0 || !test(m, u);
      if (outside) {
        outs.push_back(v);
        b.outputs.push_back(map[v]);
      }
    }
    b.compact();
    k->domain = G.domain;
    k->cols = cols_of(G.domain);
    k->rows = G.domain.numel() / std::max<int64_t>(k->cols, 1);
    k->has_reduction = G.has_reduction;
    // Flat: no reduction, every operand is the whole domain (contiguous) or one value.
    bool flat = !G.has_reduction;
    for (int v : b.inputs) {
      const Value& iv = b.values[v];
      flat = flat && ((iv.shape == G.domain && iv.contiguous()) || iv.shape.numel() == 1);
    }
    for (int v : b.outputs) flat = flat && b.values[v].shape == G.domain;
    k->flat = flat;
    // Passes: 1 + how many reductions feed the last full value.
    std::vector<int> level(b.values.size(), 0);
    int passes = 1;
    for (const Node& n : b.nodes) {
      if (n.kind == OpKind::input || n.kind == OpKind::constant) continue;
      int l = 0;
      for (int v : n.inputs) l = std::max(l, level[v]);
      bool full = b.values[n.outputs[0]].shape == G.domain;
      if (op_class(n.kind) == OpClass::reduction) {
        passes = std::max(passes, l + 1);
        ++l;
      } else if (full) {
        passes = std::max(passes, l + 1);
      }
      level[n.outputs[0]] = l;
    }
    k->passes = passes;
    std::string name = "fused";
    for (auto& s : names) name += "_" + s;
    if (name.size() > 72) name = name.substr(0, 64) + fmt::format("_n{}", names.size());
    int last = b.outputs.empty() ? b.nodes.back().outputs[0] : b.outputs[0];
    name += '_';
    name += dtype_name(b.values[last].dtype);
    k->name = name;
    k->symbol = name;  // codegen adds the hash of the source
    b.name = name;
    return k;
  }

  void rebuild() {
    // Units: a fused group or a single node; emitted in a topological order.
    std::vector<int> unit_of(static_cast<size_t>(n_), -1);
    std::vector<std::vector<int>> units;
    std::vector<int> unit_group;
    for (int i = 0; i < n_; ++i) {
      int gi = group_of_[i];
      bool fused = gi >= 0 && groups_[gi].members.size() >= 2;
      if (fused && groups_[gi].members[0] != i) {
        unit_of[i] = unit_of[groups_[gi].members[0]];
        continue;
      }
      unit_of[i] = int(units.size());
      units.push_back(fused ? groups_[gi].members : std::vector<int>{i});
      unit_group.push_back(fused ? gi : -1);
    }
    if (units.size() == size_t(n_)) return;  // nothing fused
    std::vector<char> state(units.size(), 0);
    std::vector<Node> nodes;
    std::function<void(int)> emit = [&](int u) {
      if (state[u] == 2) return;
      if (state[u] == 1) fail("compile", "internal: fusion made a cycle in graph '{}'", g_.name);
      state[u] = 1;
      for (int x : units[u])
        for (int v : g_.nodes[x].inputs) {
          int pu = unit_of[g_.values[v].node];
          if (pu != u) emit(pu);
        }
      if (unit_group[u] < 0) {
        nodes.push_back(g_.nodes[units[u][0]]);
      } else {
        Node f;
        f.kind = OpKind::fused;
        f.attrs.kernel = make_kernel(groups_[unit_group[u]], f.inputs, f.outputs);
        for (int x : units[u]) merge_origins(f, g_.nodes[size_t(x)]);
        nodes.push_back(std::move(f));
      }
      state[u] = 2;
    };
    for (size_t u = 0; u < units.size(); ++u) emit(int(u));
    g_.nodes = std::move(nodes);
    // Constants that only fused ops read now live in the kernels' bodies.
    std::vector<char> used(g_.values.size(), 0);
    for (const Node& n : g_.nodes)
      for (int v : n.inputs) used[size_t(v)] = 1;
    for (int o : g_.outputs) used[size_t(o)] = 1;
    for (Node& n : g_.nodes)
      if (n.kind == OpKind::constant && !used[size_t(n.outputs[0])]) n.dead = true;
    g_.compact();
  }

  Graph& g_;
  int n_;
  size_t words_;
  std::vector<Bits> anc_;
  std::vector<int> group_of_;
  std::vector<Group> groups_;
};

}  // namespace

void fuse(Graph& g) {
  g.compact();
  Fuser(g).run();
}

}  // namespace opscope::compiler
