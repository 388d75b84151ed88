// Convolutions beyond conv.h's 2-d forward ones, written over 3 spatial axes (a 2-d op
// gives d size 1), f32, contiguous operands, one launch each:
//  conv3d_f32              im2col + sgemm as conv2d_f32: a work unit writes the columns of
//                          a block of output pixels into its core's buffer and multiplies a
//                          block of output channels with them.
//  conv_transpose{2,3}d_f32  the gradient of a convolution: per (n, group, block of output
//                          channels) the columns W^T x (sgemm) are added into the output
//                          planes at each tap's position (col2im), which start at the bias.
#pragma once
#include <array>
#include <cstdint>

#include "opscope/runtime/launch.h"
#include "opscope/runtime/tensor.h"

namespace opscope::cpu_kernels {

struct ConvGeometry {
  using Axes3 = std::array<int64_t, 3>;  // (d, h, w)
  int64_t n = 0, c = 0, oc = 0, groups = 1;
  Axes3 in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0}, dilation{1, 1, 1};
  int spatial = 3;  // the op's spatial axes (the kernel's name)

  int64_t cg() const { return c / groups; }
  int64_t ocg() const { return oc / groups; }
  int64_t taps() const { return kernel[0] * kernel[1] * kernel[2]; }
  int64_t in_pixels() const { return in[0] * in[1] * in[2]; }
  int64_t out_pixels() const { return out[0] * out[1] * out[2]; }
};

// out (n, oc, *out) = conv(x (n, c, *in), weight (oc, c / groups, *kernel)) + bias.
LaunchSpec conv3d_spec(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor* bias,
                       const ConvGeometry& g);
// out (n, oc, *out) = conv_transpose(x (n, c, *in), weight (c, oc / groups, *kernel)) + bias;
// g.out already includes output_padding.
LaunchSpec conv_transpose_spec(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor* bias,
                               const ConvGeometry& g);

}  // namespace opscope::cpu_kernels
