// Elementwise ops on one f32 value: the formulas the fused code uses (codegen_cpu.cpp
// writes the same expressions), for constant folding and host references in tests.
#pragma once
#include <cmath>
#include <string>

#include "opscope/compiler/graph.h"
#include "opscope/kernels/cpu/elementwise.h"

namespace opscope::compiler {

// f32 rounded to `t`'s precision (bf16, f16), still as f32.
inline float round_to(DType t, float v) {
  switch (t) {
    case DType::bf16: return bf16_to_f32(f32_to_bf16(v));
    case DType::f16: return float(f16_t(v));
    default: return v;
  }
}

// pow(a, b) as the eager kernels compute it: torch's steps for its special exponents.
inline float pow_value(float a, float b) {
  switch (cpu_kernels::pow_steps(b)) {
    case cpu_kernels::PowSteps::square: return a * a;
    case cpu_kernels::PowSteps::cube: return a * a * a;
    case cpu_kernels::PowSteps::inverse_square: return 1.0f / (a * a);
    case cpu_kernels::PowSteps::inverse: return 1.0f / a;
    case cpu_kernels::PowSteps::sqrt: return std::sqrt(a);
    case cpu_kernels::PowSteps::inverse_sqrt: return 1.0f / std::sqrt(a);
    case cpu_kernels::PowSteps::none: break;
  }
  return std::pow(a, b);
}

// The fused code's expression of pow(x, s) for a constant s by those steps, with `sqrt` the
// target's square root function; empty where s is not one of them.
inline std::string pow_expr(const std::string& x, double s, const std::string& sqrt) {
  switch (cpu_kernels::pow_steps(s)) {
    case cpu_kernels::PowSteps::square: return x + " * " + x;
    case cpu_kernels::PowSteps::cube: return x + " * " + x + " * " + x;
    case cpu_kernels::PowSteps::inverse_square: return "1.0f / (" + x + " * " + x + ")";
    case cpu_kernels::PowSteps::inverse: return "1.0f / " + x;
    case cpu_kernels::PowSteps::sqrt: return sqrt + "(" + x + ")";
    case cpu_kernels::PowSteps::inverse_sqrt: return "1.0f / " + sqrt + "(" + x + ")";
    case cpu_kernels::PowSteps::none: break;
  }
  return "";
}

// Value of elementwise `k` (unary ops ignore b). cast rounds to `cast_to`.
inline float eval_elementwise(OpKind k, float a, float b = 0, DType cast_to = DType::f32) {
  switch (k) {
    case OpKind::neg: return -a;
    case OpKind::abs: return std::fabs(a);
    case OpKind::exp: return std::exp(a);
    case OpKind::log: return std::log(a);
    case OpKind::sqrt: return std::sqrt(a);
    case OpKind::rsqrt: return 1.0f / std::sqrt(a);
    case OpKind::sin: return std::sin(a);
    case OpKind::cos: return std::cos(a);
    case OpKind::tanh: return std::tanh(a);
    case OpKind::sigmoid: return 1.0f / (1.0f + std::exp(-a));
    case OpKind::silu: return a / (1.0f + std::exp(-a));
    case OpKind::gelu: return 0.5f * a * (1.0f + std::erf(a * 0.70710678118654752f));
    case OpKind::relu: return a < 0.0f ? 0.0f : a;  // NaN stays NaN
    case OpKind::add: return a + b;
    case OpKind::sub: return a - b;
    case OpKind::mul: return a * b;
    case OpKind::div: return a / b;
    case OpKind::pow: return pow_value(a, b);
    case OpKind::maximum: return (a > b || a != a) ? a : b;
    case OpKind::minimum: return (a < b || a != a) ? a : b;
    case OpKind::cast: return round_to(cast_to, a);
    case OpKind::contiguous:
    case OpKind::clone: return a;
    default: return a;
  }
}

}  // namespace opscope::compiler
