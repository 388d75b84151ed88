// What the CPU convolution kernels share: conv.cpp's im2col + sgemm and 1x1 kernels and
// conv_direct.cpp's.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "opscope/kernels/cpu/activation.h"
#include "opscope/runtime/tensor.h"

namespace opscope::cpu_kernels::conv_detail {

// Below this many flops a second core costs more than it helps.
inline constexpr int64_t kMinFlopsPerCore = int64_t(1) << 21;

// This core's scratch buffer of at least n floats (im2col columns, a direct kernel's padded
// planes), kept between launches: a fresh one per launch would be page-faulted in every time.
float* cols_buffer(size_t n);

// The block C (rows x cols, row stride ldc) after its sums: bias[o] added to row o, the
// residual's block (same place, same strides) added, then the activation, while the block
// is in cache. bias and residual may be null.
void epilogue(float* c, int64_t ldc, const float* bias, const float* residual, Activation act, int64_t rows,
              int64_t cols);

// The f32 data a convolution's launch reads and writes; bias and residual null where absent.
struct ConvData {
  const float *x, *w, *bias, *residual;
  float* out;
  // x, weight, out and bias, the bytes the launch moves (conv2d_spec adds the residual's).
  int64_t bytes;
};
ConvData conv_data(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor* bias,
                   const Tensor* residual);

enum class ConvKernel : uint8_t { gemm, one_by_one, depthwise, grouped };
// "conv2d_f32", "conv2d_1x1_f32", "conv2d_depthwise_f32", "conv2d_grouped_f32"; with a
// residual and an activation fused, "conv2d_1x1_add_relu_f32". Made once per name.
const std::string& kernel_name(ConvKernel kernel, bool residual, Activation act);

}  // namespace opscope::cpu_kernels::conv_detail
