// The framework layer's eager ops. Each op validates its inputs and infers the output
// (framework), allocates it and launches one kernel (runtime), which the device's cores
// execute asynchronously. Errors name the op: "[add] shapes (2, 3) and (4) do not broadcast".
//
// Binary ops broadcast (numpy rules) and need equal dtypes (convert with .to()).
// Reductions take a list of axes (empty = all axes) and keepdim. Floating dtypes are
// computed in f32; bf16/f16 results are rounded once, at the end.
#pragma once
#include <cstdint>
#include <vector>

#include "opscope/runtime/tensor.h"

namespace opscope {

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

// ---- reductions ----
Tensor sum(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor max(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor min(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
// Variance with Bessel's correction by default (correction = 1), as torch.var.
Tensor var(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false, int64_t correction = 1);
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
// operands as in numpy. f32 through OpenBLAS; bf16/f16 converted to f32 and back.
Tensor matmul(const Tensor& a, const Tensor& b);

// ---- shape and indexing ----
Tensor concat(const std::vector<Tensor>& xs, int64_t axis);
// Rows of `weight` (V, D) picked by integer `indices` (any shape) → indices.shape + (D).
Tensor embedding(const Tensor& weight, const Tensor& indices);

}  // namespace opscope
