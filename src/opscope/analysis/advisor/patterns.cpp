#include "opscope/analysis/advisor/op_kinds.h"
#include "opscope/analysis/advisor/patterns.h"

#include <algorithm>
#include <string_view>

namespace opscope::advisor {

namespace {

// One step of a pattern: the op names it accepts ("mul|pow": x * x or x ** 2).
struct Pattern {
  KnownOp op;
  std::vector<std::vector<std::string_view>> steps;
  std::string_view followed_by = {};  // the op after the chain, when it identifies it
};

const std::vector<Pattern>& patterns() {
  static const std::vector<Pattern> all = {
      {{"RMSNorm", "rms_norm(x, weight, eps) (C++) / opscope.ops.rms_norm (Python), or compile the region", true},
       {{"mul", "pow"}, {"mean"}, {"add"}, {"rsqrt"}, {"mul"}, {"mul"}}},
      {{"RMSNorm", "rms_norm(x, weight, eps) (C++) / opscope.ops.rms_norm (Python), or compile the region", true},
       {{"mul", "pow"}, {"mean"}, {"add"}, {"sqrt"}, {"div"}, {"mul"}}},
      {{"LayerNorm", "layer_norm(x, weight, bias, eps) (C++) / opscope.ops.layer_norm (Python), or compile", true},
       {{"mean"}, {"sub"}, {"mul", "pow"}, {"mean"}, {"add"}, {"rsqrt"}, {"mul"}, {"mul"}, {"add"}}},
      {{"LayerNorm", "layer_norm(x, weight, bias, eps) (C++) / opscope.ops.layer_norm (Python), or compile", true},
       {{"mean"}, {"sub"}, {"mul", "pow"}, {"mean"}, {"add"}, {"rsqrt"}, {"mul"}}},
      {{"softmax", "softmax(x, axis) (C++) / opscope.ops.softmax (Python), or compile", true},
       {{"max"}, {"sub"}, {"exp"}, {"sum"}, {"div"}}},
      {{"GELU (tanh)", "gelu(x) (C++) / opscope.ops.gelu (Python), or compile", false},
       {{"mul", "pow"}, {"mul"}, {"add"}, {"mul"}, {"tanh"}, {"add"}, {"mul"}, {"mul"}}},
      {{"SiLU·mul (SwiGLU)", "compile the region (one kernel for silu(gate) * up)", false}, {{"silu"}, {"mul"}}},
      {{"SiLU·mul (SwiGLU)", "compile the region (one kernel for silu(gate) * up)", false},
       {{"sigmoid"}, {"mul"}, {"mul"}}},
      // Attention's scale and mask before its softmax. Compiling the region fuses those
      // two; softmax stays its own (built-in) kernel: the fuser takes elementwise ops and
      // reductions, not library ops.
      {{"attention scale-mask", "compile the attention region (scale and mask in one kernel; softmax stays its own)",
        false},
       {{"mul", "div"}, {"add"}},
       "softmax"},
  };
  return all;
}

bool cast(std::string_view op) { return op == "to" || op == "contiguous" || op == "clone"; }

}  // namespace

const KnownOp* known_op(const std::vector<std::string>& ops, const std::string& next) {
  std::vector<std::string_view> core;
  for (const std::string& o : ops)
    if (!cast(base_op(o))) core.push_back(base_op(o));
  for (const Pattern& p : patterns()) {
    if (p.steps.size() != core.size() || (!p.followed_by.empty() && base_op(next) != p.followed_by)) continue;
    bool match = true;
    for (size_t i = 0; i < core.size() && match; ++i)
      match = std::find(p.steps[i].begin(), p.steps[i].end(), core[i]) != p.steps[i].end();
    if (match) return &p.op;
  }
  return nullptr;
}

}  // namespace opscope::advisor
