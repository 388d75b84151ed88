// Common subexpression elimination: one pass in topological order with a table of the
// nodes seen, keyed by kind, canonical operands, attributes and result type.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unordered_map>

#include "opscope/compiler/passes.h"

namespace opscope::compiler {

namespace {
bool commutative(OpKind k) {
  return k == OpKind::add || k == OpKind::mul || k == OpKind::maximum || k == OpKind::minimum;
}
}  // namespace

void cse(Graph& g) {
  std::vector<int> canon(g.values.size());
  for (size_t v = 0; v < canon.size(); ++v) canon[v] = int(v);
  std::unordered_map<std::string, int> seen;  // key -> node index
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    if (n.dead) continue;
    for (int& v : n.inputs) v = canon[v];
    OpKind k = n.kind;
    if (k == OpKind::input || k == OpKind::param || k == OpKind::untraced || k == OpKind::custom ||
        k == OpKind::fused || n.outputs.size() != 1)
      continue;
    std::vector<int> ops = n.inputs;
    if (commutative(k) && ops.size() == 2 && ops[0] > ops[1]) std::swap(ops[0], ops[1]);
    std::string key = fmt::format("{}|{}|{}|{}", int(k), fmt::join(ops, ","), Graph::attrs_str(n),
                                  type_str(g.values[n.outputs[0]]));
    if (k == OpKind::constant) key += fmt::format("|{}", int(g.values[n.outputs[0]].dtype));
    auto [it, fresh] = seen.try_emplace(key, int(i));
    if (fresh) continue;
    canon[n.outputs[0]] = g.nodes[it->second].outputs[0];
    merge_origins(g.nodes[it->second], n);
    n.dead = true;
  }
  for (int& o : g.outputs) o = canon[o];
  g.compact();
}

}  // namespace opscope::compiler
