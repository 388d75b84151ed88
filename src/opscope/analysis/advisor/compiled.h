// A compiled profile seen by the advisor: the fused kernels the compiler made (their
// origins, kernel_origins.h) are what it would have suggested, so it names them instead
// of suggesting them again, and its fixes stop answering "compile" to a compiled program.
#pragma once
#include <optional>
#include <vector>

#include "opscope/analysis/advisor/advise.h"

namespace opscope::advisor {

// A profile's kernels as the compiler left them, from one key_averages pass.
struct CompiledView {
  std::vector<CompiledKernel> fused;  // most device time first; empty for an eager profile
  std::vector<std::string> unfused;   // the largest kernels it did not fuse (at most 3)
  int64_t kernel_ns = 0;              // every kernel's device time
  int64_t packing_ns = 0, packing_launches = 0;  // pack_weights_*: weights packed for its matmuls
  int64_t packing_t0 = 0, packing_t1 = 0;        // the span of those kernels
};
CompiledView compiled_view(const prof::Trace& trace);

// "Compiled: N fused kernels ...": what they run and what is left outside them. No impact
// of its own: it is what was done. None for an eager profile.
std::optional<Finding> compiled_finding(const CompiledView& v);

// "One-time cost: ..." when the profile holds the call that packed the compiled graph's
// weights (pack_weights_* kernels): time a steady-state call does not spend, which a
// profile that warmed up for fewer calls shows beside the model's own kernels.
std::optional<Finding> packing_finding(const CompiledView& v);

// The findings whose fix says "fuse or compile", said for a compiled program.
void fixes_for_compiled(std::vector<Finding>& findings);

}  // namespace opscope::advisor
