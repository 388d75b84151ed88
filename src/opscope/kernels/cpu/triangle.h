// triu and tril on the CPU device: a matrix's upper or lower triangle, the rest zero, for
// each of a batch of matrices. Any dtype: zero is all-zero bytes in each of them.
#pragma once
#include <cstdint>

#include "opscope/runtime/launch.h"
#include "opscope/runtime/tensor.h"

namespace opscope::cpu_kernels {

// out and x contiguous, (..., R, C). upper: keeps x[..., i, j] where j - i >= diagonal
// (triu); else where j - i <= diagonal (tril). A work unit per row.
LaunchSpec triangle_spec(const Tensor& out, const Tensor& x, int64_t diagonal, bool upper);

}  // namespace opscope::cpu_kernels
