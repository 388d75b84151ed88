// 2-d max pooling (NCHW) on the CPU device's cores: max_pool2d_<dtype>, a work unit per
// output plane, any floating dtype (compared in f32, the maximum copied exactly).
#pragma once
#include "opscope/kernels/window2d.h"
#include "opscope/runtime/launch.h"
#include "opscope/runtime/tensor.h"

namespace opscope::cpu_kernels {

// out (n, c, oh, ow) = the maximum of each window of the contiguous x (n, c, h, w);
// indices (i64, out's shape, may be null) = its position h * w_in + w in the input plane,
// as torch's max_pool2d_with_indices. A NaN wins (and the last NaN of a window is the
// one reported), as in torch. Padding is never the maximum.
LaunchSpec max_pool2d_spec(const Tensor& out, const Tensor* indices, const Tensor& x, const kernels::Window2d& g);

}  // namespace opscope::cpu_kernels
