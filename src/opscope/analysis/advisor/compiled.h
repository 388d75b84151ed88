// A compiled profile seen by the advisor: the fused kernels the compiler made (their
// origins, kernel_origins.h) are what it would have suggested, so it names them instead
// of suggesting them again, and its fixes stop answering "compile" to a compiled program.
#pragma once
#include <optional>
#include <vector>

#include "opscope/analysis/advisor/advise.h"

namespace opscope::advisor {

// The fused kernels that ran, most device time first; empty for an eager profile.
std::vector<CompiledKernel> compiled_kernels(const prof::Trace& trace);

// "Compiled: N fused kernels ...": what they run and what is left outside them (the
// largest kernels that are not fused). No impact of its own: it is what was done.
std::optional<Finding> compiled_finding(const prof::Trace& trace, const std::vector<CompiledKernel>& fused);

// The findings whose fix says "fuse or compile", said for a compiled program.
void fixes_for_compiled(std::vector<Finding>& findings);

}  // namespace opscope::advisor
