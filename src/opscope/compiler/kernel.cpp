#include "opscope/compiler/kernel.h"

#include <algorithm>

namespace opscope::compiler {

int64_t FusedKernel::work() const {
  if (flat) return (rows * cols + kFlatBlock - 1) / kFlatBlock;
  return rows;
}

int64_t FusedKernel::grain() const {
  // As the eager kernels: 32K elements (elementwise) or 16K per row sweep (row kernels)
  // before a second core joins.
  if (flat) return 8;
  return std::max<int64_t>(1, (int64_t(1) << 14) / std::max<int64_t>(cols, 1));
}

int64_t FusedKernel::flops() const {
  int64_t f = 0;
  for (const Node& n : body.nodes) {
    if (n.kind == OpKind::input || n.kind == OpKind::constant) continue;
    const Value& v = body.values[n.outputs[0]];
    int64_t per = op_class(n.kind) == OpClass::reduction ? body.values[n.inputs[0]].shape.numel() : v.shape.numel();
    f += per;
  }
  return f;
}

}  // namespace opscope::compiler
