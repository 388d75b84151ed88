// The fused ops a chain of small ops may compute, by their op sequence, and the fix
// that names them: the six-op RMSNorm is rms_norm, max → sub → exp → sum → div is
// softmax. A chain that matches none is "compile this region".
#pragma once
#include <string>
#include <vector>

namespace opscope::advisor {

struct KnownOp {
  std::string name;    // "RMSNorm"
  std::string fix;     // "rms_norm (C++) / opscope.ops.rms_norm (Python), or compile"
  // A fused kernel of this op streams its input once: the row it re-reads after its
  // reduction stays in cache (norms, softmax).
  bool row_reuse = false;
};

// The known op `ops` compute (casts and copies ignored), or nullptr. `next`: the op that
// ended the chain (attention's scale and mask are known by the softmax after them).
const KnownOp* known_op(const std::vector<std::string>& ops, const std::string& next = "");

}  // namespace opscope::advisor
