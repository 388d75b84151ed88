// Batch norm with running statistics (eval), one pass: y = x * scale[c] + shift[c] over
// each (n, c) plane of a contiguous (N, C, ...) x, where scale = weight / sqrt(var + eps)
// and shift = bias - mean * scale are computed per plane from the f32 statistics (C
// values: a few flops a plane, not launches of their own).
#pragma once
#include "opscope/runtime/launch.h"
#include "opscope/runtime/tensor.h"

namespace opscope::cpu_kernels {

// out and x (N, C, ...) contiguous, of one floating dtype; mean and var (C) f32; weight
// and bias (C) f32 or null (1 and 0).
LaunchSpec batch_norm_spec(const Tensor& out, const Tensor& x, const Tensor& mean, const Tensor& var,
                           const Tensor* weight, const Tensor* bias, double eps);

}  // namespace opscope::cpu_kernels
