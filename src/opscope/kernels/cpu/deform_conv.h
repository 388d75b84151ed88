// torchvision's deformable convolution (DCN v1, and v2 with a mask) on the CPU device: the
// im2col step, whose taps read x at learned fractional offsets. The product with the
// weight is a matmul after it (ops/deform_conv.cpp).
#pragma once
#include <cstdint>

#include "opscope/runtime/launch.h"
#include "opscope/runtime/tensor.h"

namespace opscope::cpu_kernels {

struct DeformParams {
  int64_t kh = 1, kw = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1;
  int64_t offset_groups = 1;
};

// cols (N, C * kh * kw, OH * OW) f32 from x (N, C, H, W), offset (N, 2 * offset_groups * kh
// * kw, OH, OW) as (dy, dx) pairs per tap, and mask (N, offset_groups * kh * kw, OH, OW) or
// null; all contiguous f32. Row (c, i, j) holds, for each output pixel, x's channel c sampled
// bilinearly at (oy * stride - pad + i * dil + dy, ox * stride - pad + j * dil + dx), zero
// outside the image (a neighbour outside counts 0), times the tap's mask. A unit per (n, c).
LaunchSpec deform_im2col_spec(const Tensor& cols, const Tensor& x, const Tensor& offset, const Tensor* mask,
                              const DeformParams& p);

}  // namespace opscope::cpu_kernels
