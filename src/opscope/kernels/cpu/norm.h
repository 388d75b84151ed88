// Fused normalization kernels: softmax, rms_norm, layer_norm. One launch each; the work
// unit is a row (or, for softmax over an outer axis, a block of columns), f32 math for
// every dtype. Inputs are contiguous (the op makes them so); outputs are contiguous.
// Row kernels read each row from memory once (it stays in L1/L2 for the later passes)
// and write large outputs (>= 8 MiB) with streaming stores, which skip the
// read-for-ownership of y: rms_norm then moves as many bytes as a copy.
#pragma once
#include "opscope/runtime/launch.h"
#include "opscope/runtime/tensor.h"

namespace opscope::cpu_kernels {

// Softmax of the contiguous x over `axis` (numerically stable: max-subtracted).
LaunchSpec softmax_spec(const Tensor& out, const Tensor& x, int axis);
// Softmax of each of `rows` f32 rows of n (row stride ld) in place, on the calling core:
// what attention runs on the block of scores in its cache.
void softmax_rows_inplace(float* x, int64_t rows, int64_t n, int64_t ld);
// y = x * rsqrt(mean(x^2) + eps) * weight over the last axis; weight may be null (no scale).
LaunchSpec rms_norm_spec(const Tensor& out, const Tensor& x, const Tensor* weight, float eps);
// y = (x - mean) * rsqrt(var_biased + eps) * weight + bias over the last axis; weight and
// bias may be null.
LaunchSpec layer_norm_spec(const Tensor& out, const Tensor& x, const Tensor* weight, const Tensor* bias, float eps);

}  // namespace opscope::cpu_kernels
