#include "opscope/kernels/cpu/conv_common.h"

#include <fmt/format.h>

#include <array>
#include <string_view>
#include <vector>

namespace opscope::cpu_kernels::conv_detail {

float* cols_buffer(size_t n) {
  thread_local std::vector<float> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

void epilogue(float* c, int64_t ldc, const float* bias, const float* residual, Activation act, int64_t rows,
              int64_t cols) {
  for (int64_t o = 0; o < rows; ++o) {
    float* r = c + o * ldc;
    if (bias) {
      float b = bias[o];
      for (int64_t j = 0; j < cols; ++j) r[j] += b;
    }
    if (residual) {
      const float* e = residual + o * ldc;
      for (int64_t j = 0; j < cols; ++j) r[j] += e[j];
    }
    apply_activation(act, r, cols);
  }
}

ConvData conv_data(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor* bias,
                   const Tensor* residual) {
  return {x.data<float>(),
          weight.data<float>(),
          bias ? bias->data<float>() : nullptr,
          residual ? residual->data<float>() : nullptr,
          out.data<float>(),
          x.nbytes() + weight.nbytes() + out.nbytes() + (bias ? bias->nbytes() : 0)};
}

const std::string& kernel_name(ConvKernel kernel, bool residual, Activation act) {
  static const std::array<const char*, 4> bases = {"conv2d", "conv2d_1x1", "conv2d_depthwise", "conv2d_grouped"};
  static const auto names = [] {
    std::array<std::array<std::array<std::string, 5>, 2>, 4> n;
    for (size_t b = 0; b < bases.size(); ++b)
      for (int r = 0; r < 2; ++r)
        for (int a = 0; a < 5; ++a) {
          std::string_view act_name = activation_name(Activation(a));
          n[b][r][a] = fmt::format("{}{}{}{}_f32", bases[b], r ? "_add" : "", act_name.empty() ? "" : "_", act_name);
        }
    return n;
  }();
  return names[size_t(kernel)][residual][size_t(act)];
}

}  // namespace opscope::cpu_kernels::conv_detail
