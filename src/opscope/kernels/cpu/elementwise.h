// Elementwise kernels: unary math and broadcasting binary ops. The op (framework layer)
// has validated the operands and allocated `out` (contiguous, in the broadcast shape);
// these build the launch, choosing a loop from the operands' layout once per run:
//   flat     every operand contiguous with `out`: one loop the compiler vectorizes;
//   scalar   one operand a single value (a double, or any one-element tensor);
//   rows     2-d after merging dims: x * w with w of shape (H), x * r with r of shape
//            (N, 1), outer products, transposes — one run per row;
//   strided  higher ranks through for_each_run, inner loops as above.
// Floating dtypes compute in f32 and round once; i32/i64 wrap around on overflow.
#pragma once
#include <algorithm>
#include <array>
#include <bit>
#include <cstdlib>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "opscope/core/dtype.h"
#include "opscope/core/shape.h"
#include "opscope/kernels/cpu/strided.h"
#include "opscope/runtime/launch.h"
#include "opscope/runtime/tensor.h"

namespace opscope::cpu_kernels {

enum class UnaryOp : uint8_t {
  neg, abs, exp, log, sqrt, rsqrt, sin, cos, tanh, sigmoid, silu, gelu, relu,
  gelu_tanh, hardswish, hardsigmoid,  // gelu's tanh approximation; MobileNetV3's activations
  floor, ceil, round, trunc, sign,    // rounding (round: half to even, as torch.round)
  log2, reciprocal, erf,
  expm1, log1p, tan, atan, asin, acos, sinh, cosh,  // the C library's, scalar: rarely hot
  erfinv
};
inline constexpr int kUnaryOpCount = int(UnaryOp::erfinv) + 1;

// Unary ops with torch's scalar parameters (UnaryParams a, b, c), and a few without, that
// only the CPU device has (no CUDA kernels: the ops say so). Floating dtypes only.
//   leaky_relu  a = negative_slope
//   elu         a = alpha, b = scale, c = input_scale (torch's selu and celu are elus)
//   softplus    a = beta, b = threshold
//   mish, log10, exp2, log_sigmoid, atanh, frac, lgamma: none
enum class ParamUnaryOp : uint8_t { leaky_relu, elu, softplus, mish, log10, exp2, log_sigmoid, atanh, frac, lgamma };
inline constexpr int kParamUnaryOpCount = int(ParamUnaryOp::lgamma) + 1;
struct UnaryParams {
  float a = 0, b = 0, c = 0;
};

// div_trunc, div_floor: torch's div(rounding_mode="trunc" / "floor"), integers included.
// remainder: torch's (Python's %: the sign of the divisor), integers included.
enum class BinaryOp : uint8_t { add, sub, mul, div, pow, maximum, minimum, div_trunc, div_floor, remainder };

// pow(x, s) for the exponents torch's CPU kernel computes without pow (PowKernel.cpp), by
// its steps: x * x, x * x * x, 1 / (x * x), 1 / x, sqrt x, 1 / sqrt x. The eager kernels
// and the compiler's fused code take them too, so their values are torch's bit for bit
// (a correctly rounded pow differs from x * x * x in a quarter of all f32).
enum class PowSteps : uint8_t { none, square, cube, inverse_square, inverse, sqrt, inverse_sqrt };
inline PowSteps pow_steps(double s) {
  if (s == 2.0) return PowSteps::square;
  if (s == 3.0) return PowSteps::cube;
  if (s == -2.0) return PowSteps::inverse_square;
  if (s == -1.0) return PowSteps::inverse;
  if (s == 0.5) return PowSteps::sqrt;
  if (s == -0.5) return PowSteps::inverse_sqrt;
  return PowSteps::none;
}

std::string_view op_name(UnaryOp op);
std::string_view op_name(ParamUnaryOp op);
std::string_view op_name(BinaryOp op);
// Kernel names, "exp_f32", "mul_bf16", "add_scalar_f32": made once, as formatting one
// per launch would cost a noticeable part of a small op.
const std::string& kernel_name(UnaryOp op, DType dt);
const std::string& kernel_name(ParamUnaryOp op, DType dt);
const std::string& kernel_name(BinaryOp op, DType dt, bool scalar);
// Whether the op has i32/i64 kernels; every op has f32, bf16 and f16 ones.
bool supports_integers(UnaryOp op);
bool supports_integers(BinaryOp op);

// out = op(x); out has x's shape and dtype. Kernel "exp_f32".
LaunchSpec unary_spec(UnaryOp op, const Tensor& out, const Tensor& x);
// out = op(a, b) broadcast; a, b and out share a dtype. Kernel "mul_f32".
LaunchSpec binary_spec(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b);
// out = op(x; p); out has x's shape and dtype. Kernel "leaky_relu_f32".
LaunchSpec unary_param_spec(ParamUnaryOp op, const Tensor& out, const Tensor& x, UnaryParams p);

// out = op(x, s), or op(s, x) when scalar_first. For floating dtypes s is used as f32
// (not rounded to bf16/f16); for integer dtypes it must be a value of x's dtype.
// Kernel "add_scalar_f32".
LaunchSpec binary_scalar_spec(BinaryOp op, const Tensor& out, const Tensor& x, double s, bool scalar_first);

// ---- the layout of a launch, shared by the unary and binary kernels ----

// `t`'s strides in the broadcast shape `shape` (0 along dims that t broadcasts).
Strides broadcast_strides(const Tensor& t, const Shape& shape);
// Elements of `t` a kernel reads at least once (broadcast dims count once), for spec.bytes.
int64_t distinct_elements(const Tensor& t);

// Drops size-1 dims and merges neighbouring dims that every operand steps through as
// one (outer stride == inner stride * inner size), so runs are as long as possible:
// contiguous operands end up 1-d, x (N, H) with w (H) stays 2-d.
template <int N>
void coalesce(Shape& shape, std::array<Strides, N>& strides) {
  Shape s;
  std::array<Strides, N> t;
  for (int d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    int m = s.size();
    bool merge = m > 0;
    for (int k = 0; k < N && merge; ++k) merge = t[k][m - 1] == strides[k][d] * shape[d];
    if (merge) {
      s[m - 1] *= shape[d];
      for (int k = 0; k < N; ++k) t[k][m - 1] = strides[k][d];
    } else {
      s.push_back(shape[d]);
      for (int k = 0; k < N; ++k) t[k].push_back(strides[k][d]);
    }
  }
  shape = s;
  strides = t;
}

// The index space of a launch: out (operand 0, contiguous) and the inputs, coalesced.
// Inputs already contiguous in out's shape (the common case) skip the general work.
template <int N>
void elementwise_layout(const Tensor& out, const std::array<const Tensor*, N - 1>& in, Shape& shape,
                        std::array<Strides, N>& strides) {
  bool flat = true;
  for (const Tensor* t : in) flat = flat && t->shape() == out.shape() && t->is_contiguous();
  if (flat) {
    shape.resize(1, out.numel());
    for (auto& s : strides) s.resize(1, 1);
    return;
  }
  shape = out.shape();
  strides[0] = contiguous_strides(shape);
  for (int k = 1; k < N; ++k) strides[k] = broadcast_strides(*in[k - 1], shape);
  coalesce<N>(shape, strides);
}

// Walks elements [lo, hi) of the coalesced index space (operand 0 is the output) and
// calls run(offsets, inner strides, count) for each run: one run when 1-d, one per row of
// each (rows, cols) plane of the last two dims beyond. An operand read across its rows
// (a transpose) is walked in tiles of kTileRows rows x kTileCols columns, so each cache
// line and page it touches serves all the rows; without one, higher ranks go through
// for_each_run.
constexpr int64_t kTileRows = 16, kTileCols = 256;

// Elements [lo, hi) of one (rows, h) plane whose element (0, 0) is at `base`.
template <int N, class F>
void walk_plane(int64_t h, const std::array<int64_t, N>& base, const std::array<int64_t, N>& row_stride,
                const std::array<int64_t, N>& inner, bool tiled, int64_t lo, int64_t hi, F& run) {
  std::array<int64_t, N> off{};
  auto row = [&](int64_t r, int64_t j, int64_t count) {
    for (int k = 0; k < N; ++k) off[k] = base[k] + r * row_stride[k] + j * inner[k];
    run(off, inner, count);
  };
  int64_t r = lo / h, j = lo - r * h, i = lo;
  if (j > 0) {  // the partial first row
    int64_t count = std::min(h - j, hi - i);
    row(r++, j, count);
    i += count;
  }
  int64_t rows = (hi - i) / h;  // whole rows
  if (tiled) {
    for (int64_t r0 = r; r0 < r + rows; r0 += kTileRows)
      for (int64_t j0 = 0; j0 < h; j0 += kTileCols)
        for (int64_t rr = r0; rr < std::min(r0 + kTileRows, r + rows); ++rr) row(rr, j0, std::min(kTileCols, h - j0));
  } else {
    for (int64_t rr = r; rr < r + rows; ++rr) row(rr, 0, h);
  }
  r += rows;
  i += rows * h;
  if (i < hi) row(r, 0, hi - i);  // the partial last row
}

template <int N, class F>
void walk(const Shape& shape, const std::array<Strides, N>& st, int64_t lo, int64_t hi, F&& run) {
  int nd = shape.size();
  if (nd <= 1) {
    std::array<int64_t, N> off{}, inner{};
    for (int k = 0; k < N; ++k) {
      inner[k] = nd ? st[k][0] : 1;
      off[k] = lo * inner[k];
    }
    run(off, inner, hi - lo);
    return;
  }
  std::array<int64_t, N> row_stride{}, inner{};
  bool tiled = false;
  for (int k = 0; k < N; ++k) {
    row_stride[k] = st[k][nd - 2];
    inner[k] = st[k][nd - 1];
    tiled = tiled || (std::abs(inner[k]) > 1 && std::abs(row_stride[k]) < std::abs(inner[k]));
  }
  int64_t h = shape[nd - 1];
  if (nd == 2) {
    walk_plane<N>(h, {}, row_stride, inner, tiled, lo, hi, run);
    return;
  }
  if (!tiled) {
    for_each_run<N>(shape, st, lo, hi, run);
    return;
  }
  // Ranks above 2 with a transposed operand: plane by plane (batched transposes, permutes).
  int64_t plane = shape[nd - 2] * h;
  for (int64_t p = lo / plane; p * plane < hi; ++p) {
    std::array<int64_t, N> base{};
    for (int64_t rem = p, d = nd - 3; d >= 0; --d) {
      int64_t idx = rem % shape[int(d)];
      rem /= shape[int(d)];
      for (int k = 0; k < N; ++k) base[k] += idx * st[k][int(d)];
    }
    int64_t a = std::max(lo, p * plane) - p * plane, b = std::min(hi, (p + 1) * plane) - p * plane;
    walk_plane<N>(h, base, row_stride, inner, tiled, a, b, run);
  }
}

// ---- per-element helpers of the loops ----

// c ? a : b as a mask blend. Plain ?: lets GCC move a floating computation feeding one
// arm under a branch, and then it does not vectorize the loop (the op might trap).
[[gnu::always_inline]] inline float blend(bool c, float a, float b) {
  return std::bit_cast<float>(select_bits(c, std::bit_cast<uint32_t>(a), std::bit_cast<uint32_t>(b)));
}

// Arithmetic type of a storage type: f32 for floating dtypes, the integer itself otherwise.
template <class T> using compute_t = std::conditional_t<std::is_integral_v<T>, T, float>;
template <class T> [[gnu::always_inline]] inline compute_t<T> load(T v) {
  if constexpr (std::is_integral_v<T>) return v;
  else return to_f32(v);
}
template <class T> [[gnu::always_inline]] inline T store(compute_t<T> v) {
  if constexpr (std::is_integral_v<T>) return v;
  else return from_f32<T>(v);
}

}  // namespace opscope::cpu_kernels
