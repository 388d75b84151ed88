// Elementwise ops: unary math and broadcasting binary ops. The framework step validates
// the operands and infers the output (the broadcast shape, the common dtype); the
// runtime allocates it and launches the kernel that kernels/cpu/elementwise builds.
#include <cmath>

#include "opscope/compiler/trace.h"
#include "opscope/core/error.h"
#include "opscope/kernels/dispatch.h"
#include "opscope/ops/ops.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/runtime.h"

namespace opscope {

namespace {

using cpu_kernels::BinaryOp;
using cpu_kernels::UnaryOp;

void check_defined(const char* op, const Tensor& t, const char* arg) {
  if (!t.defined()) fail(op, "{} is undefined (a default-constructed Tensor)", arg);
}

template <class Kind>
void check_dtype(const char* op, Kind kind, const Tensor& t) {
  if (t.dtype() == DType::b8)
    fail(op, "dtype bool is not supported (shape {}); convert with .to() first", t.shape().str());
  if (!is_floating(t.dtype()) && !cpu_kernels::supports_integers(kind))
    fail(op, "dtype {} is not supported (shape {}); {} takes f32, bf16 or f16, convert with .to()",
         dtype_name(t.dtype()), t.shape().str(), op);
}

Tensor unary(const char* op, UnaryOp kind, const Tensor& x) {
  // framework: validate, infer
  check_defined(op, x, "x");
  check_dtype(op, kind, x);
  // runtime: allocate, launch
  Tensor out = runtime::allocate(x.shape(), x.dtype(), x.device());
  if (out.numel()) runtime::launch(x.device(), kernels::unary_spec(kind, out, x), {&x}, {&out});
  if (compiler::tracing()) compiler::record(op, {&x}, out);
  return out;
}

Tensor binary(const char* op, BinaryOp kind, const Tensor& a, const Tensor& b) {
  check_defined(op, a, "a");
  check_defined(op, b, "b");
  if (&a.device() != &b.device())
    fail(op, "a is on {} but b is on {} (shapes {} and {})", a.device().name(), b.device().name(), a.shape().str(),
         b.shape().str());
  if (a.dtype() != b.dtype())
    fail(op, "dtypes {} and {} differ (shapes {} and {}); convert one with .to()", dtype_name(a.dtype()),
         dtype_name(b.dtype()), a.shape().str(), b.shape().str());
  check_dtype(op, kind, a);
  Shape shape = broadcast_shapes(a.shape(), b.shape(), op);
  Tensor out = runtime::allocate(shape, a.dtype(), a.device());
  if (out.numel()) runtime::launch(a.device(), kernels::binary_spec(kind, out, a, b), {&a, &b}, {&out});
  if (compiler::tracing()) compiler::record(op, {&a, &b}, out);
  return out;
}

// A double operand is a value of x's dtype: for i32/i64 it must be an integer in range.
Tensor binary_scalar(const char* op, BinaryOp kind, const Tensor& x, double s, bool scalar_first) {
  check_defined(op, x, "x");
  check_dtype(op, kind, x);
  if (!is_floating(x.dtype())) {
    double lim = x.dtype() == DType::i32 ? 2147483648.0 : 9223372036854775808.0;
    if (std::trunc(s) != s || s < -lim || s >= lim)
      fail(op, "the scalar {} is not a value of x's dtype {} (shape {})", s, dtype_name(x.dtype()), x.shape().str());
  }
  Tensor out = runtime::allocate(x.shape(), x.dtype(), x.device());
  if (out.numel())
    runtime::launch(x.device(), kernels::binary_scalar_spec(kind, out, x, s, scalar_first), {&x}, {&out});
  if (compiler::tracing()) compiler::record(op, {&x}, out, scalar_first ? compiler::TraceAttrs::lhs(s) : compiler::TraceAttrs::rhs(s));
  return out;
}

}  // namespace

// ---- unary ----
Tensor neg(const Tensor& x) { OPSCOPE_OP("neg", &x); return unary("neg", UnaryOp::neg, x); }
Tensor abs(const Tensor& x) { OPSCOPE_OP("abs", &x); return unary("abs", UnaryOp::abs, x); }
Tensor exp(const Tensor& x) { OPSCOPE_OP("exp", &x); return unary("exp", UnaryOp::exp, x); }
Tensor log(const Tensor& x) { OPSCOPE_OP("log", &x); return unary("log", UnaryOp::log, x); }
Tensor sqrt(const Tensor& x) { OPSCOPE_OP("sqrt", &x); return unary("sqrt", UnaryOp::sqrt, x); }
Tensor rsqrt(const Tensor& x) { OPSCOPE_OP("rsqrt", &x); return unary("rsqrt", UnaryOp::rsqrt, x); }
Tensor sin(const Tensor& x) { OPSCOPE_OP("sin", &x); return unary("sin", UnaryOp::sin, x); }
Tensor cos(const Tensor& x) { OPSCOPE_OP("cos", &x); return unary("cos", UnaryOp::cos, x); }
Tensor tanh(const Tensor& x) { OPSCOPE_OP("tanh", &x); return unary("tanh", UnaryOp::tanh, x); }
Tensor sigmoid(const Tensor& x) { OPSCOPE_OP("sigmoid", &x); return unary("sigmoid", UnaryOp::sigmoid, x); }
Tensor silu(const Tensor& x) { OPSCOPE_OP("silu", &x); return unary("silu", UnaryOp::silu, x); }
Tensor gelu(const Tensor& x) { OPSCOPE_OP("gelu", &x); return unary("gelu", UnaryOp::gelu, x); }
Tensor relu(const Tensor& x) { OPSCOPE_OP("relu", &x); return unary("relu", UnaryOp::relu, x); }
Tensor gelu_tanh(const Tensor& x) { OPSCOPE_OP("gelu_tanh", &x); return unary("gelu_tanh", UnaryOp::gelu_tanh, x); }
Tensor hardswish(const Tensor& x) { OPSCOPE_OP("hardswish", &x); return unary("hardswish", UnaryOp::hardswish, x); }
Tensor hardsigmoid(const Tensor& x) {
  OPSCOPE_OP("hardsigmoid", &x);
  return unary("hardsigmoid", UnaryOp::hardsigmoid, x);
}

#define OPSCOPE_UNARY_OP(name)                     \
  Tensor name(const Tensor& x) {                   \
    OPSCOPE_OP(#name, &x);                         \
    return unary(#name, UnaryOp::name, x);         \
  }
OPSCOPE_UNARY_OP(floor)
OPSCOPE_UNARY_OP(ceil)
OPSCOPE_UNARY_OP(round)
OPSCOPE_UNARY_OP(trunc)
OPSCOPE_UNARY_OP(sign)
OPSCOPE_UNARY_OP(log2)
OPSCOPE_UNARY_OP(reciprocal)
OPSCOPE_UNARY_OP(erf)
OPSCOPE_UNARY_OP(expm1)
OPSCOPE_UNARY_OP(log1p)
OPSCOPE_UNARY_OP(tan)
OPSCOPE_UNARY_OP(atan)
OPSCOPE_UNARY_OP(asin)
OPSCOPE_UNARY_OP(acos)
OPSCOPE_UNARY_OP(sinh)
OPSCOPE_UNARY_OP(cosh)
OPSCOPE_UNARY_OP(erfinv)
#undef OPSCOPE_UNARY_OP

// ---- unary with parameters: CPU kernels only ----
namespace {
using cpu_kernels::ParamUnaryOp;
using cpu_kernels::UnaryParams;

Tensor unary_param(const char* op, ParamUnaryOp kind, const Tensor& x, UnaryParams p = {}) {
  check_defined(op, x, "x");
  if (!is_floating(x.dtype()))
    fail(op, "dtype {} is not supported (shape {}); {} takes f32, bf16 or f16, convert with .to()",
         dtype_name(x.dtype()), x.shape().str(), op);
  ops_detail::cpu_only(op, x.device());
  Tensor out = runtime::allocate(x.shape(), x.dtype(), x.device());
  if (out.numel()) runtime::launch(x.device(), cpu_kernels::unary_param_spec(kind, out, x, p), {&x}, {&out});
  return out;
}
}  // namespace

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  OPSCOPE_OP("leaky_relu", &x);
  return unary_param("leaky_relu", ParamUnaryOp::leaky_relu, x, {float(negative_slope)});
}
Tensor elu(const Tensor& x, double alpha, double scale, double input_scale) {
  OPSCOPE_OP("elu", &x);
  return unary_param("elu", ParamUnaryOp::elu, x, {float(alpha), float(scale), float(input_scale)});
}
Tensor softplus(const Tensor& x, double beta, double threshold) {
  OPSCOPE_OP("softplus", &x);
  return unary_param("softplus", ParamUnaryOp::softplus, x, {float(beta), float(threshold)});
}
Tensor mish(const Tensor& x) { OPSCOPE_OP("mish", &x); return unary_param("mish", ParamUnaryOp::mish, x); }
Tensor log10(const Tensor& x) { OPSCOPE_OP("log10", &x); return unary_param("log10", ParamUnaryOp::log10, x); }
Tensor exp2(const Tensor& x) { OPSCOPE_OP("exp2", &x); return unary_param("exp2", ParamUnaryOp::exp2, x); }
Tensor log_sigmoid(const Tensor& x) {
  OPSCOPE_OP("log_sigmoid", &x);
  return unary_param("log_sigmoid", ParamUnaryOp::log_sigmoid, x);
}
Tensor atanh(const Tensor& x) { OPSCOPE_OP("atanh", &x); return unary_param("atanh", ParamUnaryOp::atanh, x); }
Tensor frac(const Tensor& x) { OPSCOPE_OP("frac", &x); return unary_param("frac", ParamUnaryOp::frac, x); }
Tensor lgamma(const Tensor& x) { OPSCOPE_OP("lgamma", &x); return unary_param("lgamma", ParamUnaryOp::lgamma, x); }

// ---- binary ----
Tensor add(const Tensor& a, const Tensor& b) { OPSCOPE_OP("add", &a, &b); return binary("add", BinaryOp::add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { OPSCOPE_OP("sub", &a, &b); return binary("sub", BinaryOp::sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { OPSCOPE_OP("mul", &a, &b); return binary("mul", BinaryOp::mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { OPSCOPE_OP("div", &a, &b); return binary("div", BinaryOp::div, a, b); }
Tensor pow(const Tensor& a, const Tensor& b) { OPSCOPE_OP("pow", &a, &b); return binary("pow", BinaryOp::pow, a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) {
  OPSCOPE_OP("maximum", &a, &b);
  return binary("maximum", BinaryOp::maximum, a, b);
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  OPSCOPE_OP("minimum", &a, &b);
  return binary("minimum", BinaryOp::minimum, a, b);
}

// ---- tensor op scalar ----
Tensor add(const Tensor& a, double b) { OPSCOPE_OP("add", &a); return binary_scalar("add", BinaryOp::add, a, b, false); }
Tensor sub(const Tensor& a, double b) { OPSCOPE_OP("sub", &a); return binary_scalar("sub", BinaryOp::sub, a, b, false); }
Tensor mul(const Tensor& a, double b) { OPSCOPE_OP("mul", &a); return binary_scalar("mul", BinaryOp::mul, a, b, false); }
Tensor div(const Tensor& a, double b) { OPSCOPE_OP("div", &a); return binary_scalar("div", BinaryOp::div, a, b, false); }
Tensor pow(const Tensor& a, double b) { OPSCOPE_OP("pow", &a); return binary_scalar("pow", BinaryOp::pow, a, b, false); }
Tensor maximum(const Tensor& a, double b) {
  OPSCOPE_OP("maximum", &a);
  return binary_scalar("maximum", BinaryOp::maximum, a, b, false);
}
Tensor minimum(const Tensor& a, double b) {
  OPSCOPE_OP("minimum", &a);
  return binary_scalar("minimum", BinaryOp::minimum, a, b, false);
}

// ---- scalar op tensor ----
Tensor add(double a, const Tensor& b) { OPSCOPE_OP("add", &b); return binary_scalar("add", BinaryOp::add, b, a, true); }
Tensor sub(double a, const Tensor& b) { OPSCOPE_OP("sub", &b); return binary_scalar("sub", BinaryOp::sub, b, a, true); }
Tensor mul(double a, const Tensor& b) { OPSCOPE_OP("mul", &b); return binary_scalar("mul", BinaryOp::mul, b, a, true); }
Tensor div(double a, const Tensor& b) { OPSCOPE_OP("div", &b); return binary_scalar("div", BinaryOp::div, b, a, true); }
// Named div_trunc / div_floor below the framework op: the compiler's "div" is true
// division, so a traced graph must not take these for it (they stay untraced, eager).
Tensor div(const Tensor& a, const Tensor& b, RoundingMode mode) {
  OPSCOPE_OP("div", &a, &b);
  if (mode == RoundingMode::trunc) return binary("div_trunc", BinaryOp::div_trunc, a, b);
  return binary("div_floor", BinaryOp::div_floor, a, b);
}
Tensor div(const Tensor& a, double b, RoundingMode mode) {
  OPSCOPE_OP("div", &a);
  if (mode == RoundingMode::trunc) return binary_scalar("div_trunc", BinaryOp::div_trunc, a, b, false);
  return binary_scalar("div_floor", BinaryOp::div_floor, a, b, false);
}
Tensor remainder(const Tensor& a, const Tensor& b) {
  OPSCOPE_OP("remainder", &a, &b);
  return binary("remainder", BinaryOp::remainder, a, b);
}
Tensor remainder(const Tensor& a, double b) {
  OPSCOPE_OP("remainder", &a);
  return binary_scalar("remainder", BinaryOp::remainder, a, b, false);
}
Tensor remainder(double a, const Tensor& b) {
  OPSCOPE_OP("remainder", &b);
  return binary_scalar("remainder", BinaryOp::remainder, b, a, true);
}

}  // namespace opscope
