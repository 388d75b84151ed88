// Dead code elimination: mark what the outputs need, drop the rest.
#include "opscope/compiler/passes.h"

namespace opscope::compiler {

void dce(Graph& g) {
  std::vector<char> live(g.values.size(), 0);
  for (int o : g.outputs) live[o] = 1;
  for (int i = int(g.nodes.size()) - 1; i >= 0; --i) {
    Node& n = g.nodes[i];
    if (n.dead) continue;
    bool needed = n.kind == OpKind::input;
    for (int o : n.outputs) needed = needed || live[o];
    if (!needed) {
      n.dead = true;
      continue;
    }
    for (int v : n.inputs) live[v] = 1;
  }
  g.compact();
  // Captured tensors of dropped nodes are released.
  std::vector<Tensor> params;
  for (Node& n : g.nodes)
    if (n.kind == OpKind::param || n.kind == OpKind::untraced) {
      params.push_back(g.params[size_t(n.attrs.axis)]);
      n.attrs.axis = int64_t(params.size()) - 1;
    }
  g.params = std::move(params);
}

}  // namespace opscope::compiler
