// The framework layer's eager ops. Each op validates its inputs and infers the output
// (framework), allocates it and launches one kernel (runtime), which the device's cores
// execute asynchronously. Errors name the op: "[add] shapes (2, 3) and (4) do not broadcast".
//
// Binary ops broadcast (numpy rules) and need equal dtypes (convert with .to()).
// Reductions take a list of axes (empty = all axes) and keepdim. Floating dtypes are
// computed in f32; bf16/f16 results are rounded once, at the end.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "opscope/kernels/cpu/activation.h"
#include "opscope/runtime/tensor.h"

namespace opscope {

using cpu_kernels::Activation;  // an activation conv2d applies to its output (activation.h)

// ---- unary ----
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor silu(const Tensor& x);
Tensor gelu(const Tensor& x);  // exact (erf) form
Tensor relu(const Tensor& x);
Tensor gelu_tanh(const Tensor& x);    // gelu's tanh approximation (torch's approximate="tanh")
Tensor hardswish(const Tensor& x);    // x * relu6(x + 3) / 6
Tensor hardsigmoid(const Tensor& x);  // relu6(x + 3) / 6
// Rounding and sign keep integer inputs unchanged; round is half to even (torch.round).
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor round(const Tensor& x);
Tensor trunc(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor log2(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor tan(const Tensor& x);
Tensor atan(const Tensor& x);
Tensor asin(const Tensor& x);
Tensor acos(const Tensor& x);
Tensor sinh(const Tensor& x);
Tensor cosh(const Tensor& x);
Tensor erfinv(const Tensor& x);
// Activations with torch's parameters, and log10, exp2, log_sigmoid, atanh, frac, lgamma: the
// CPU device only, f32/bf16/f16.
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);  // x > 0 ? x : x * negative_slope
// x > 0 ? x * scale : alpha * scale * (exp(x * input_scale) - 1); selu and celu are elus.
Tensor elu(const Tensor& x, double alpha = 1.0, double scale = 1.0, double input_scale = 1.0);
// x * beta > threshold ? x : log1p(exp(x * beta)) / beta
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
Tensor mish(const Tensor& x);  // x * tanh(softplus(x))
Tensor log10(const Tensor& x);
Tensor exp2(const Tensor& x);
Tensor log_sigmoid(const Tensor& x);  // min(x, 0) - log1p(exp(-|x|))
Tensor atanh(const Tensor& x);
Tensor frac(const Tensor& x);  // x - trunc(x)
Tensor lgamma(const Tensor& x);  // log |gamma(x)|

// ---- binary, with broadcasting; a double operand is a scalar of x's dtype ----
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, double b);
Tensor sub(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);
Tensor div(const Tensor& a, double b);
Tensor pow(const Tensor& a, double b);
Tensor maximum(const Tensor& a, double b);
Tensor minimum(const Tensor& a, double b);
Tensor add(double a, const Tensor& b);
Tensor sub(double a, const Tensor& b);
Tensor mul(double a, const Tensor& b);
Tensor div(double a, const Tensor& b);
// torch.div's rounding_mode "trunc" (toward zero) and "floor" (toward -inf), any dtype:
// integers stay integers, divided exactly; an integer zero divisor is a kernel error.
enum class RoundingMode : uint8_t { trunc, floor };
Tensor div(const Tensor& a, const Tensor& b, RoundingMode mode);
Tensor div(const Tensor& a, double b, RoundingMode mode);
// torch.remainder (Python's %): a - floor(a / b) * b, the sign of b; any dtype, integers
// exact; an integer zero divisor is a kernel error.
Tensor remainder(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, double b);
Tensor remainder(double a, const Tensor& b);

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator+(const Tensor& a, double b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, double b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, double b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, double b) { return div(a, b); }
inline Tensor operator+(double a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(double a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(double a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(double a, const Tensor& b) { return div(a, b); }
inline Tensor operator-(const Tensor& a) { return neg(a); }

// ---- comparisons and selection (ops/compare.cpp); masks are bool (DType::b8) ----
// a op b broadcast, a and b of one dtype (bool too for eq/ne); the result is bool. With a
// double, the value is first rounded to x's dtype, as torch compares a tensor with a number.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& x, double s);
Tensor ne(const Tensor& x, double s);
Tensor lt(const Tensor& x, double s);
Tensor le(const Tensor& x, double s);
Tensor gt(const Tensor& x, double s);
Tensor ge(const Tensor& x, double s);
// Elementwise logic on bool tensors (broadcast).
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_xor(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& x);
// cond ? a : b elementwise, all three broadcast; a and b of one dtype, cond bool.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
// mask ? value : x (mask bool, broadcast to x's shape); value rounded to x's dtype.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);
// min(max(x, lo), hi) with either bound absent, as torch.clamp: NaN in x or in a bound
// gives NaN, lo > hi gives hi. Bounds are rounded to x's dtype (integers: truncated).
Tensor clamp(const Tensor& x, std::optional<double> lo, std::optional<double> hi);
// x * (1 + ...): addcmul(x, a, b, v) = x + v * a * b, one kernel (broadcast, one dtype).
Tensor addcmul(const Tensor& x, const Tensor& a, const Tensor& b, double value = 1.0);

// ---- reductions ----
Tensor sum(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor max(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor min(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
// Variance with Bessel's correction by default (correction = 1), as torch.var.
Tensor var(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false, int64_t correction = 1);
// The p-norm over `axes` (all when empty), floating x: p = 2 (the square root of the sum
// of squares), 1, inf and -inf (the largest and smallest magnitude), 0 (the count of
// nonzeros), or any other p as (sum |x|^p)^(1/p).
Tensor norm(const Tensor& x, double p, const std::vector<int64_t>& axes = {}, bool keepdim = false);
// Index of the largest value along `axis` (first one on ties), as i64.
Tensor argmax(const Tensor& x, int64_t axis, bool keepdim = false);

// ---- normalization and activation kernels (each one fused launch) ----
Tensor softmax(const Tensor& x, int64_t axis = -1);
// y = x * rsqrt(mean(x^2, -1) + eps) * weight; weight has x's last dim.
Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps = 1e-6);
// y = (x - mean) * rsqrt(var_biased + eps) * weight + bias over the last dim.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-5);

// ---- linear algebra ----
// 2-d @ 2-d, batched (..., M, K) @ (..., K, N) with broadcast batch dims, and 1-d
// operands as in numpy. f32 through oneDNN's sgemm; bf16/f16 converted to f32 and back.
Tensor matmul(const Tensor& a, const Tensor& b);
// a @ b + bias, as addmm (nn.Linear). A bias of shape (N) on f32 CPU operands is added in
// the matmul's own launch (each core's slice of C starts as the bias and sgemm adds onto
// it, or gemv adds it to its outputs); any other bias: matmul, then add.
Tensor matmul(const Tensor& a, const Tensor& b, const Tensor& bias);

// ---- convolution and pooling, NCHW; a Size2 is (h, w) ----
using Size2 = std::array<int64_t, 2>;
// Cross-correlation as torch's conv2d: x (N, C, H, W), weight (OC, C / groups, KH, KW) and
// bias (OC) or undefined give (N, OC, OH, OW), OH = (H + 2 padding - dilation (KH - 1) - 1)
// / stride + 1. f32 on the CPU device's cores (im2col + sgemm; 1x1 and depthwise windows
// have their own kernels), bf16/f16 computed in f32 and rounded once; on CUDA, im2col +
// cuBLAS. `residual` (the output's shape and dtype) is added to the result, then `act`
// applied: in the CPU kernel's epilogue for f32 (the block in cache, one launch), as the
// elementwise ops after it otherwise.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, Size2 stride = {1, 1},
              Size2 padding = {0, 0}, Size2 dilation = {1, 1}, int64_t groups = 1, Activation act = Activation::none,
              const Tensor& residual = {});
// act(x) as its elementwise op: relu, clamp to [0, 6], hardswish, silu.
Tensor activation(const Tensor& x, Activation act);
// The maximum of each kernel window of x (N, C, H, W) → (N, C, OH, OW), sizes as conv2d's
// (ceil_mode rounds up, as torch). Padding (at most half the kernel) is never the maximum.
Tensor max_pool2d(const Tensor& x, Size2 kernel, Size2 stride, Size2 padding = {0, 0}, Size2 dilation = {1, 1},
                  bool ceil_mode = false);
// max_pool2d and, as i64, where each maximum is in its input plane (h * W + w): torch's
// max_pool2d_with_indices.
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, Size2 kernel, Size2 stride, Size2 padding = {0, 0},
                                                  Size2 dilation = {1, 1}, bool ceil_mode = false);

// ---- shape and indexing ----
Tensor concat(const std::vector<Tensor>& xs, int64_t axis);
// Rows of `weight` (V, D) picked by integer `indices` (any shape) → indices.shape + (D).
Tensor embedding(const Tensor& weight, const Tensor& indices);
// nn.EmbeddingBag's max mode: bag b is the rows rows[starts[b] .. starts[b + 1]) of the f32
// weight (V, D); returns (out (B, D) f32, argmax (B, D) i64): each column's maximum over
// the bag and the row that first reached it (0 and 0 for an empty bag), as torch's CPU
// kernel. rows (K) and starts (B + 1, from 0 to K, non-decreasing) are i64.
std::pair<Tensor, Tensor> embedding_bag_max(const Tensor& weight, const Tensor& rows, const Tensor& starts);

}  // namespace opscope
