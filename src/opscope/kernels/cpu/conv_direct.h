// Convolutions computed directly, as sums of shifted copies of their input planes, where
// im2col + sgemm would make gemms of one to a few rows (kernels named as conv.h lists them):
//  conv2d_depthwise_f32  one input channel per group (MobileNet's, EfficientNet's and
//                        ConvNeXt's depthwise layers): each output plane from its one input
//                        plane;
//  conv2d_grouped_f32    2 to 16 input channels per group (RegNet's 8, ResNeXt's 4 to 16):
//                        each band of a group's output rows from its input planes.
// The input is padded and split into stride phases (a tap then reads a fixed offset of one
// phase), and a block of outputs stays in registers through every tap.
#pragma once
#include "opscope/kernels/cpu/activation.h"
#include "opscope/kernels/window2d.h"
#include "opscope/runtime/launch.h"
#include "opscope/runtime/tensor.h"

namespace opscope::cpu_kernels {

// As conv2d_spec (conv.h), for groups == c == oc / multiplier.
LaunchSpec depthwise_spec(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor* bias,
                          const kernels::Window2d& g, Activation act, const Tensor* residual);

// Whether conv2d_grouped_f32 takes this geometry (groups of 2 to 16 channels, a window
// larger than 1x1), and its launch, as conv2d_spec's.
bool grouped_direct_fits(const kernels::Window2d& g);
LaunchSpec grouped_direct_spec(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor* bias,
                               const kernels::Window2d& g, Activation act, const Tensor* residual);

}  // namespace opscope::cpu_kernels
