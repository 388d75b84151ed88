// Indexing kernels: concat (each input copied into its slice of the output), embedding
// (rows of a table gathered by index) and embedding bags' max (nn.EmbeddingBag(mode="max")).
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

// out (B, D) f32 and argmax (B, D) i64: bag b holds rows[starts[b] .. starts[b + 1]) of the
// f32 weight (V, D) (unit stride along D); each column its maximum and the row that first
// reached it (a later row wins only when greater, so a NaN counts only as a bag's first
// value: torch's CPU kernel), 0 and 0 for an empty bag. rows and starts are contiguous i64,
// the rows in range (the caller checked). A unit per bag.
LaunchSpec embedding_bag_max_spec(const Tensor& out, const Tensor& argmax, const Tensor& weight, const Tensor& rows,
                                  const Tensor& starts);

}  // namespace opscope::cpu_kernels
