#include "opscope/kernels/cpu/conv_common.h"

#include <fmt/format.h>

#include <array>
#include <string_view>
#include <type_traits>
#include <vector>

#include "opscope/kernels/cpu/half_rows.h"

namespace opscope::cpu_kernels::conv_detail {

float* cols_buffer(size_t n) {
  thread_local std::vector<float> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

namespace {

// act(x) on a vector, as apply_activation computes it lane by lane (the same bits: the same
// comparisons, NaN kept as there, and hardswish's division).
struct NoAct {
  static f32v f(f32v x) { return x; }
};
struct Relu {
  static f32v f(f32v x) { return x < 0.0f ? f32v{} : x; }
};
struct Relu6 {
  static f32v f(f32v x) {
    f32v lo = x < 0.0f ? f32v{} : x;  // std::max(x, 0.f): x where x is NaN
    return 6.0f < lo ? f32v{} + 6.0f : lo;
  }
};
struct Hardswish {
  static f32v f(f32v x) {
    f32v s = x + 3.0f;
    s = s < 0.0f ? f32v{} : s;
    s = 6.0f < s ? f32v{} + 6.0f : s;
    return x * s / 6.0f;
  }
};

// One row: r = A(r + b + e), the bias and residual where given, in one pass of vectors.
template <class A, bool kBias, bool kResidual>
void finish_row(float* __restrict r, const float* __restrict e, float b, int64_t n) {
  int64_t j = 0;
  for (; j + kVecLanes <= n; j += kVecLanes) {
    f32v v = load_f32v(r + j);
    if constexpr (kBias) v += b;
    if constexpr (kResidual) v += load_f32v(e + j);
    store_f32v(r + j, A::f(v), false);
  }
  for (; j < n; ++j) {
    f32v v = {};
    v[0] = r[j];
    if constexpr (kBias) v[0] += b;
    if constexpr (kResidual) v[0] += e[j];
    r[j] = A::f(v)[0];
  }
}

template <class A, bool kBias, bool kResidual>
void finish_rows(float* c, int64_t ldc, const float* bias, const float* residual, int64_t rows, int64_t cols) {
  for (int64_t o = 0; o < rows; ++o)
    finish_row<A, kBias, kResidual>(c + o * ldc, kResidual ? residual + o * ldc : nullptr, kBias ? bias[o] : 0.0f,
                                    cols);
}

template <class A>
void finish_rows(float* c, int64_t ldc, const float* bias, const float* residual, int64_t rows, int64_t cols) {
  if (bias && residual) return finish_rows<A, true, true>(c, ldc, bias, residual, rows, cols);
  if (bias) return finish_rows<A, true, false>(c, ldc, bias, residual, rows, cols);
  if (residual) return finish_rows<A, false, true>(c, ldc, bias, residual, rows, cols);
  if constexpr (!std::is_same_v<A, NoAct>) finish_rows<A, false, false>(c, ldc, bias, residual, rows, cols);
}

}  // namespace

// One pass over each row for the bias, the residual and the activation (three passes over
// an output block of 64 channels by up to 3136 pixels, out of L2, cost more than the
// separate elementwise ops they replace). silu keeps its own two-pass loop
// (apply_activation) after the bias and residual.
void epilogue(float* c, int64_t ldc, const float* bias, const float* residual, Activation act, int64_t rows,
              int64_t cols) {
  switch (act) {
    case Activation::none: return finish_rows<NoAct>(c, ldc, bias, residual, rows, cols);
    case Activation::relu: return finish_rows<Relu>(c, ldc, bias, residual, rows, cols);
    case Activation::relu6: return finish_rows<Relu6>(c, ldc, bias, residual, rows, cols);
    case Activation::hardswish: return finish_rows<Hardswish>(c, ldc, bias, residual, rows, cols);
    case Activation::silu:
      finish_rows<NoAct>(c, ldc, bias, residual, rows, cols);
      for (int64_t o = 0; o < rows; ++o) apply_activation(act, c + o * ldc, cols);
      return;
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
