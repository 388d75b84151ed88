// A fused kernel: a body graph that the CPU code generator turns into one loop nest.
// Values in the body are either "full" (the domain's shape) or per "row" (one value per
// row of the domain: a reduction over the last axis and what is computed from it).
#pragma once
#include <cstdint>
#include <string>

#include "opscope/compiler/graph.h"

namespace opscope::compiler {

struct FusedKernel {
  std::string name;    // from the ops, e.g. "fused_mul_mean_add_rsqrt_mul_mul_f32"
  std::string symbol;  // extern "C" name in the library: name + "_" + hash of its source
  Graph body;          // inputs: the kernel's operands (with their layouts); outputs: results
  Shape domain;        // the full shape the kernel iterates over
  int64_t rows = 1;    // numel(domain) / cols
  int64_t cols = 1;    // last dim of the domain
  bool flat = false;   // elementwise over contiguous operands: work units are element blocks
  bool has_reduction = false;
  int passes = 1;      // sweeps over a row (1 + reduction depth)

  // Work units of one launch and the fewest worth a core.
  int64_t work() const;
  int64_t grain() const;
  int64_t flops() const;
};

// Elements per work unit of a flat kernel (as the eager elementwise kernels).
constexpr int64_t kFlatBlock = 4096;

}  // namespace opscope::compiler
