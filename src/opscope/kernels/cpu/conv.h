// 2-d convolution (NCHW, f32) on the CPU device's cores, in one launch each:
//  conv2d_f32            im2col + sgemm: a work unit writes the columns of a block of
//                        output pixels (K = C/groups x KH x KW rows) into its core's buffer
//                        (about half of L2) and multiplies a block of output channels with them
//                        (sgemm.h, on that core alone); the next unit of the same
//                        pixel block reuses the columns.
//  conv2d_1x1_f32        a 1x1 window, stride 1, no padding: the input planes are already
//                        the columns, so sgemm reads them in place.
//  conv2d_depthwise_f32  one input channel per group (mobilenet's depthwise layers), and
//  conv2d_grouped_f32    2 to 16 per group (RegNet, ResNeXt): direct sums of shifted planes
//                        (conv_direct.h), where gemms of one to a few rows would waste sgemm.
// The bias, a residual (a tensor of the output's shape added: ResNet's skip connection)
// and a fused activation (conv2d_1x1_hardswish_f32) are applied to each block while it is
// in cache.
#pragma once
#include "opscope/kernels/cpu/activation.h"
#include "opscope/kernels/window2d.h"
#include "opscope/runtime/launch.h"
#include "opscope/runtime/tensor.h"

namespace opscope::cpu_kernels {

// out (n, oc, oh, ow) = conv(x (n, c, h, w), weight (oc, c / groups, kh, kw)) + bias (oc),
// all f32 and contiguous; bias and residual (out's shape) may be null; then act(out). `g` is
// the validated geometry (the op's).
LaunchSpec conv2d_spec(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor* bias,
                       const kernels::Window2d& g, Activation act = Activation::none,
                       const Tensor* residual = nullptr);

}  // namespace opscope::cpu_kernels
