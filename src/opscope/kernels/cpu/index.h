// Indexing kernels: concat (each input copied into its slice of the output) and
// embedding (rows of a table gathered by index).
#pragma once
#include <span>

#include "opscope/runtime/launch.h"
#include "opscope/runtime/tensor.h"

namespace opscope::cpu_kernels {

// Copies xs (any strides) into the contiguous out along `axis`, the first of them at
// position `start` of that axis. Work units are element blocks of all inputs together.
LaunchSpec concat_spec(const Tensor& out, std::span<const Tensor> xs, int axis, int64_t start);

// out (indices..., D) = rows of weight (V, D) (unit stride along D) picked by the
// contiguous i32/i64 `indices`. An index outside [0, V) fails the kernel; the error
// surfaces at the next synchronization.
LaunchSpec embedding_spec(const Tensor& out, const Tensor& weight, const Tensor& indices);

}  // namespace opscope::cpu_kernels
