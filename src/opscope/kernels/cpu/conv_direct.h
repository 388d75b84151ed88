// conv2d_depthwise_f32: one input channel per group (MobileNet's, EfficientNet's and
// ConvNeXt's depthwise layers), each output plane computed directly from its one input
// plane as a sum of shifted copies of it, where im2col + sgemm would make a gemm of one
// row. The plane is padded and split into stride phases (a tap then reads a fixed offset
// of one phase), and a block of outputs stays in registers through every tap.
#pragma once
#include "opscope/kernels/cpu/activation.h"
#include "opscope/kernels/window2d.h"
#include "opscope/runtime/launch.h"
#include "opscope/runtime/tensor.h"

namespace opscope::cpu_kernels {

// As conv2d_spec (conv.h), for groups == c == oc / multiplier.
LaunchSpec depthwise_spec(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor* bias,
                          const kernels::Window2d& g, Activation act, const Tensor* residual);

// conv2d_grouped_f32: groups of a few input channels each (RegNet's group width of 8,
// ResNeXt's 4 to 16), where each group's sgemm has 8 rows: each band of a group's output
// rows from its input planes' phases, taps over all of the group's channels.
bool grouped_direct_fits(const kernels::Window2d& g);
LaunchSpec grouped_direct_spec(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor* bias,
                               const kernels::Window2d& g, Activation act, const Tensor* residual);

}  // namespace opscope::cpu_kernels
