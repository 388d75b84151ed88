// The advisor reading a compiled program's code: the static verdicts
// (analysis/kernel_static.h) of its hottest fused kernels, as findings. A fused kernel
// whose main loop is scalar, spills, or reads its input twice from memory costs time the
// table alone cannot explain; the finding names the loop's source lines and the fix.
#pragma once
#include <vector>

#include "opscope/analysis/advisor/advise.h"
#include "opscope/analysis/advisor/compiled.h"

namespace opscope::advisor {

// Fused kernels with at least this share of the kernels' device time are read.
constexpr double kKernelCodeShare = 0.10;

// One finding per "warn" verdict of those kernels; none when their artifacts are gone
// (a profile read on another machine): the code cannot be read, and nothing is claimed.
std::vector<Finding> kernel_code_findings(const prof::Trace& trace, const CompiledView& v);

}  // namespace opscope::advisor
