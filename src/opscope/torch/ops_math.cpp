// Elementwise ops and reductions: aten's add/sub/mul/div/pow/maximum/minimum, the unary
// math and activations, sum/mean/amax/amin/argmax/var, on opscope's kernels.
#include <ATen/ExpandUtils.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/TypeProperties.h>
#include <ATen/ops/add_ops.h>
#include <ATen/ops/div_ops.h>
#include <ATen/ops/mul_ops.h>
#include <ATen/ops/sub_ops.h>

#include "opscope/core/error.h"
#include "opscope/ops/inplace.h"
#include "opscope/ops/ops.h"
#include "opscope/torch/kernels.h"

namespace opscope::torch_bridge {

namespace {

// tensor op tensor, or tensor op number (Y = double)
template <class Y>
Tensor apply(Binary b, const Tensor& x, const Y& y) {
  switch (b) {
    case Binary::add: return add(x, y);
    case Binary::sub: return sub(x, y);
    case Binary::mul: return mul(x, y);
    case Binary::div: return div(x, y);
    case Binary::pow: return pow(x, y);
    case Binary::maximum: return maximum(x, y);
    case Binary::minimum: return minimum(x, y);
    case Binary::remainder: return remainder(x, y);
  }
  return {};
}

// number op tensor, where opscope has it.
std::optional<Tensor> apply(Binary b, double x, const Tensor& y) {
  switch (b) {
    case Binary::add: return add(x, y);
    case Binary::sub: return sub(x, y);
    case Binary::mul: return mul(x, y);
    case Binary::div: return div(x, y);
    case Binary::maximum: return maximum(y, x);
    case Binary::minimum: return minimum(y, x);
    case Binary::remainder: return remainder(x, y);
    case Binary::pow: return std::nullopt;
  }
  return std::nullopt;
}

bool has_alpha(Binary b) { return b == Binary::add || b == Binary::sub; }

// The kernels an in-place form writes self with (ops/inplace.h); none for the others.
std::optional<cpu_kernels::UnaryOp> kernel_op(Unary u) {
  using K = cpu_kernels::UnaryOp;
  switch (u) {
    case Unary::relu: return K::relu;
    case Unary::silu: return K::silu;
    case Unary::sigmoid: return K::sigmoid;
    case Unary::tanh: return K::tanh;
    case Unary::hardswish: return K::hardswish;
    case Unary::hardsigmoid: return K::hardsigmoid;
    case Unary::exp: return K::exp;
    case Unary::neg: return K::neg;
    case Unary::abs: return K::abs;
    case Unary::sqrt: return K::sqrt;
    case Unary::rsqrt: return K::rsqrt;
    default: return std::nullopt;
  }
}
std::optional<cpu_kernels::BinaryOp> kernel_op(Binary b) {
  using K = cpu_kernels::BinaryOp;
  switch (b) {
    case Binary::add: return K::add;
    case Binary::sub: return K::sub;
    case Binary::mul: return K::mul;
    case Binary::div: return K::div;
    default: return std::nullopt;
  }
}

// An in-place form run by writing self (ops/inplace.h), where self and other allow it;
// returns whether it answered the call, with self or with the error.
template <class Write>
bool run_in_place(Call& c, const at::Tensor* other, Write&& write) {
  try {
    Tensor x = from_torch(c.tensor(0), c.name());
    Tensor y = other ? from_torch(*other, c.name()) : Tensor();
    if (!(other ? can_write_in_place(x, y) : can_write_in_place(x))) return false;
    AtenScope scope(c.name(), {&x, &y});
    write(x, y);
    c.ret(c.tensor(0));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
  return true;
}

Tensor apply(Unary u, const Tensor& x) {
  switch (u) {
    case Unary::neg: return neg(x);
    case Unary::abs: return abs(x);
    case Unary::exp: return exp(x);
    case Unary::log: return log(x);
    case Unary::sqrt: return sqrt(x);
    case Unary::rsqrt: return rsqrt(x);
    case Unary::sin: return sin(x);
    case Unary::cos: return cos(x);
    case Unary::tanh: return tanh(x);
    case Unary::sigmoid: return sigmoid(x);
    case Unary::silu: return silu(x);
    case Unary::gelu: return gelu(x);
    case Unary::relu: return relu(x);
    case Unary::hardswish: return hardswish(x);
    case Unary::hardsigmoid: return hardsigmoid(x);
    case Unary::floor: return floor(x);
    case Unary::ceil: return ceil(x);
    case Unary::round: return round(x);
    case Unary::trunc: return trunc(x);
    case Unary::sign: return sign(x);
    case Unary::log2: return log2(x);
    case Unary::reciprocal: return reciprocal(x);
    case Unary::erf: return erf(x);
    case Unary::expm1: return expm1(x);
    case Unary::log1p: return log1p(x);
    case Unary::tan: return tan(x);
    case Unary::atan: return atan(x);
    case Unary::asin: return asin(x);
    case Unary::acos: return acos(x);
    case Unary::sinh: return sinh(x);
    case Unary::cosh: return cosh(x);
    case Unary::erfinv: return erfinv(x);
  }
  return {};
}

// Torch computes these in floating point even for integer inputs; the others keep
// integers (rounding and sign return them unchanged).
constexpr bool floating_result(Unary u) {
  switch (u) {
    case Unary::neg:
    case Unary::abs:
    case Unary::relu:
    case Unary::floor:
    case Unary::ceil:
    case Unary::round:
    case Unary::trunc:
    case Unary::sign: return false;
    default: return true;
  }
}

// Of those, the ones torch takes integers (and bools) for, computing on their values as
// f32; silu, gelu and the hard activations refuse them.
constexpr bool promotes_integers(Unary u) {
  switch (u) {
    case Unary::silu:
    case Unary::gelu:
    case Unary::hardswish:
    case Unary::hardsigmoid: return false;
    default: return floating_result(u);
  }
}

}  // namespace

// The value of a 0-dim CPU tensor, read directly: item() is a dispatcher call of its own.
double cpu_scalar_value(const at::Tensor& t) {
  const void* p = t.data_ptr();
  switch (t.scalar_type()) {
    case at::kDouble: return *static_cast<const double*>(p);
    case at::kFloat: return *static_cast<const float*>(p);
    case at::kLong: return double(*static_cast<const int64_t*>(p));
    case at::kInt: return *static_cast<const int32_t*>(p);
    case at::kBool: return *static_cast<const bool*>(p);
    default: return t.item().toDouble();
  }
}

Operand operand(const c10::IValue& v) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (is_cpu_scalar(t)) return {t, cpu_scalar_value(t), true};
    return {t, 0, false};
  }
  return {at::Tensor(), v.toScalar().toDouble(), true};
}

at::ScalarType result_type(const c10::IValue& a, const c10::IValue& b) {
  if (a.isTensor() && b.isTensor()) {
    const at::Tensor &x = a.toTensor(), &y = b.toTensor();
    // Two dimensioned tensors of one dtype (the common case): that dtype, without
    // at::result_type's full promotion walk.
    if (x.scalar_type() == y.scalar_type() && !x.unsafeGetTensorImpl()->is_wrapped_number() &&
        !y.unsafeGetTensorImpl()->is_wrapped_number())
      return x.scalar_type();
  }
  // torch's promotion rules without a trip through the dispatcher (which a profile would
  // record as an aten::result_type op inside every binary op).
  at::native::ResultTypeState st{};
  st = a.isTensor() ? at::native::update_result_type_state(a.toTensor(), st)
                    : at::native::update_result_type_state(a.toScalar(), st);  // remainder.Scalar_Tensor
  st = b.isTensor() ? at::native::update_result_type_state(b.toTensor(), st)
                    : at::native::update_result_type_state(b.toScalar(), st);
  return at::native::result_type(st);
}

std::vector<int64_t> int_list(const c10::IValue& v) {
  if (v.isNone()) return {};
  auto l = v.toIntList();
  return {l.begin(), l.end()};
}

template <Binary B, Form F>
void binary_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  Operand a = operand(c.arg(0)), b = operand(c.arg(1));
  double alpha = has_alpha(B) ? c.number(2) : 1.0;
  if (a.is_number && b.is_number) return c.fall_back();  // two CPU scalars: torch's CPU op
  // Torch's own error for a CPU tensor with more than 0 dims in a device op.
  if (!a.is_number && !b.is_number && on_device(a.t) != on_device(b.t)) two_devices(c.name(), a.t, b.t);
  at::ScalarType rt = result_type(c.arg(0), c.arg(1));
  auto dt = to_dtype(rt);
  bool integral_div = (B == Binary::div || B == Binary::pow) && dt && !is_floating(*dt);
  at::Tensor none;
  if (!dt || integral_div || !has_kernels({a.is_number ? &none : &a.t, b.is_number ? &none : &b.t}, false))
    return c.fall_back();
  if constexpr (F == Form::inplace) {
    auto k = kernel_op(B);
    if (k && !a.is_number && !b.is_number && alpha == 1.0 && a.t.scalar_type() == rt && b.t.scalar_type() == rt &&
        run_in_place(c, &b.t, [&](const Tensor& x, const Tensor& y) { binary_inplace(c.name(), *k, x, y); }))
      return;
  }
  try {
    Tensor x = a.is_number ? Tensor() : from_torch(a.t, c.name());
    Tensor y = b.is_number ? Tensor() : from_torch(b.t, c.name());
    AtenScope scope(c.name(), {&x, &y});
    Tensor r;
    if (a.is_number) {
      Tensor yy = as_dtype(y, *dt);
      if (alpha != 1.0) yy = mul(yy, alpha);
      auto v = apply(B, a.value, yy);
      if (!v) return c.fall_back();
      r = *v;
    } else if (b.is_number) {
      r = apply(B, as_dtype(x, *dt), b.value * alpha);
    } else {
      Tensor yy = as_dtype(y, *dt);
      if (alpha != 1.0) yy = mul(yy, alpha);
      r = apply(B, as_dtype(x, *dt), yy);
    }
    if constexpr (F == Form::functional) c.ret(deliver(F, r, at::Tensor(), c.name()));  // self may be a number
    else c.ret(deliver(F, r, F == Form::out ? c.out() : c.tensor(0), c.name()));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

template <Form F, bool kFloorDivide>
void div_mode_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  RoundingMode mode = RoundingMode::floor;
  if constexpr (!kFloorDivide) {
    if (c.arg(2).isNone()) return c.fall_back();  // true division spelled with rounding_mode=None
    const std::string& m = c.arg(2).toStringRef();
    if (m != "trunc" && m != "floor") return c.fall_back();  // torch's own error for a bad value
    mode = m == "trunc" ? RoundingMode::trunc : RoundingMode::floor;
  }
  Operand a = operand(c.arg(0)), b = operand(c.arg(1));
  if (a.is_number) return c.fall_back();  // a 0-dim CPU self: torch's CPU op
  if (!b.is_number && on_device(a.t) != on_device(b.t)) two_devices(c.name(), a.t, b.t);
  auto dt = to_dtype(result_type(c.arg(0), c.arg(1)));
  at::Tensor none;
  if (!dt || *dt == DType::b8 || !has_kernels({&a.t, b.is_number ? &none : &b.t}, false)) return c.fall_back();
  try {
    Tensor x = as_dtype(from_torch(a.t, c.name()), *dt);
    Tensor y = b.is_number ? Tensor() : from_torch(b.t, c.name());
    AtenScope scope(c.name(), {&x, &y});
    Tensor r = b.is_number ? div(x, b.value, mode) : div(x, as_dtype(y, *dt), mode);
    c.ret(deliver(F, r, F == Form::out ? c.out() : c.tensor(0), c.name()));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

template <Unary U, Form F>
void unary_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) {
    // abs and relu have no Meta kernel in torch 1.13 (FakeTensor would come back here
    // without end): their result's shape, strides and dtype are the input's.
    if constexpr ((U == Unary::abs || U == Unary::relu) && F == Form::functional) {
      const at::Tensor& self = c.tensor(0);
      return c.ret(at::empty_like(self, self.options().device(at::kMeta)));
    }
    return c.fall_back();
  }
  const at::Tensor& self = c.tensor(0);
  // torch.exp(ints) is f32, as the op on their values as f32; in place on an int tensor
  // torch refuses (its own error, from the fallback).
  constexpr bool kPromotes = promotes_integers(U) && F != Form::inplace;
  if (!has_kernels({&self}, floating_result(U) && !kPromotes)) return c.fall_back();
  if constexpr (F == Form::out && floating_result(U)) {
    if (!at::isFloatingType(c.out().scalar_type())) return c.fall_back();  // torch's error: a float result into ints
  }
  if constexpr (kPromotes) {
    if (!at::isFloatingType(self.scalar_type()))
      return run_unary<F>(c, [](const Tensor& x) { return apply(U, x.to(DType::f32)); });
  }
  if constexpr (U == Unary::gelu) {
    const std::string& approximate = c.arg(1).toStringRef();
    if (approximate == "tanh") return run_unary<F>(c, [](const Tensor& x) { return gelu_tanh(x); });
    if (approximate != "none") return c.fall_back();  // torch's own error for a bad value
  }
  if constexpr (F == Form::inplace) {
    if (auto k = kernel_op(U);
        k && run_in_place(c, nullptr, [&](const Tensor& x, const Tensor&) { unary_inplace(c.name(), *k, x); }))
      return;
  }
  run_unary<F>(c, [](const Tensor& x) { return apply(U, x); });
}

template <ParamUnary P, Form F>
void param_unary_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  if (!has_kernels({&self}, true)) return c.fall_back();
  if constexpr (F == Form::out) {
    if (!at::isFloatingType(c.out().scalar_type())) return c.fall_back();  // torch's error
  }
  run_unary<F>(c, [&](const Tensor& x) {
    switch (P) {
      case ParamUnary::leaky_relu: return leaky_relu(x, c.number(1));
      case ParamUnary::elu: return elu(x, c.number(1), c.number(2), c.number(3));
      case ParamUnary::softplus: return softplus(x, c.number(1), c.number(2));
      case ParamUnary::mish: return mish(x);
      case ParamUnary::log10: return log10(x);
      case ParamUnary::exp2: return exp2(x);
      case ParamUnary::atanh: return atanh(x);
      case ParamUnary::frac: return frac(x);
    }
    return Tensor();
  });
}

template <Binary B, class Op, class... Alpha>
at::Tensor binary_fast(const at::Tensor& a, const at::Tensor& b, const Alpha&... alpha) {
  at::ScalarType st = a.scalar_type();
  bool floating_a = on_device(a) && a.dim() <= kMaxDims && (st == at::kFloat || st == at::kBFloat16 || st == at::kHalf);
  // A floating tensor keeps its dtype with a tensor of that dtype or a 0-dim CPU number.
  bool same = on_device(b) && b.scalar_type() == st && b.dim() <= kMaxDims;
  bool number = is_cpu_scalar(b) && !b.is_complex();
  if (floating_a && (same || number) && ((alpha.equal(1)) && ...) && !meta_mode()) {
    try {
      Tensor x = from_torch(a, Op::name);
      if (number) {
        AtenScope scope(Op::name, {&x});
        return to_torch(apply(B, x, cpu_scalar_value(b)));
      }
      Tensor y = from_torch(b, Op::name);
      AtenScope scope(Op::name, {&x, &y});
      return to_torch(apply(B, x, y));
    } catch (const opscope::Error& e) {
      if (is_out_of_memory(e.what())) out_of_memory(Op::name, e.what());
    }
  }
  // Everything else: the general boxed kernel (which may fall back to torch's CPU kernel).
  static const c10::OperatorHandle handle = c10::Dispatcher::singleton().findSchemaOrThrow(Op::name, Op::overload_name);
  return c10::impl::BoxedKernelWrapper<typename Op::schema>::call(
      c10::BoxedKernel::makeFromFunction<&binary_kernel<B, Form::functional>>(), handle, c10::DispatchKeySet(), a, b,
      alpha...);
}

// sum/mean(self, dtype?), sum/mean.dim(self, dim?, keepdim, dtype?), amax/amin(self, dim[], keepdim)
template <Reduce R, Form F>
void reduce_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  size_t nargs = op.schema().arguments().size() - (F == Form::out ? 1 : 0);
  bool full = nargs == 2 && (R == Reduce::sum || R == Reduce::mean);  // sum(self, dtype)
  std::vector<int64_t> dims = full ? std::vector<int64_t>{} : int_list(c.arg(1));
  bool keepdim = full ? false : c.arg(2).toBool();
  c10::optional<at::ScalarType> dtype;
  if (R == Reduce::sum || R == Reduce::mean) dtype = c.arg(full ? 1 : 3).toOptional<at::ScalarType>();
  if (!has_kernels({&self}, R == Reduce::mean) || (dtype && !to_dtype(*dtype))) return c.fall_back();
  if ((R == Reduce::amax || R == Reduce::amin) && self.numel() == 0) return c.fall_back();
  run_unary<F>(c, [&](const Tensor& in) {
    Tensor x = dtype ? as_dtype(in, *to_dtype(*dtype)) : in;
    switch (R) {
      case Reduce::sum: return sum(x, dims, keepdim);
      case Reduce::mean: return mean(x, dims, keepdim);
      case Reduce::amax: return max(x, dims, keepdim);
      case Reduce::amin: return min(x, dims, keepdim);
    }
    return Tensor();
  });
}

// argmax(self, dim?, keepdim)
template <Form F>
void argmax_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  if (!has_kernels({&self}, false) || self.numel() == 0) return c.fall_back();
  run_unary<F>(c, [&](const Tensor& x) {
    if (!c.arg(1).isNone()) return argmax(x, c.arg(1).toInt(), c.arg(2).toBool());
    Tensor r = argmax(x.reshape({x.numel()}), 0, false);  // over all elements
    if (!c.arg(2).toBool()) return r;
    Shape ones;
    ones.resize(x.ndim(), 1);
    return r.reshape(ones);
  });
}

// var.correction(self, dim?, correction?, keepdim)
template <Form F>
void var_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  if (!has_kernels({&self})) return c.fall_back();
  int64_t corr = c.arg(2).isNone() ? 1 : c.arg(2).toInt();
  run_unary<F>(c, [&](const Tensor& x) { return var(x, int_list(c.arg(1)), c.arg(3).toBool(), corr); });
}

// The instances native_functions.cpp registers.
#define OPSCOPE_FORMS(KERNEL, KIND)                      \
  template void KERNEL<KIND, Form::functional>(const c10::OperatorHandle&, Stack*); \
  template void KERNEL<KIND, Form::inplace>(const c10::OperatorHandle&, Stack*);    \
  template void KERNEL<KIND, Form::out>(const c10::OperatorHandle&, Stack*);
OPSCOPE_FORMS(binary_kernel, Binary::add)
OPSCOPE_FORMS(binary_kernel, Binary::sub)
OPSCOPE_FORMS(binary_kernel, Binary::mul)
OPSCOPE_FORMS(binary_kernel, Binary::div)
OPSCOPE_FORMS(binary_kernel, Binary::pow)
OPSCOPE_FORMS(binary_kernel, Binary::maximum)
OPSCOPE_FORMS(binary_kernel, Binary::minimum)
OPSCOPE_FORMS(binary_kernel, Binary::remainder)
OPSCOPE_FORMS(param_unary_kernel, ParamUnary::leaky_relu)
OPSCOPE_FORMS(param_unary_kernel, ParamUnary::elu)
OPSCOPE_FORMS(param_unary_kernel, ParamUnary::softplus)
OPSCOPE_FORMS(param_unary_kernel, ParamUnary::mish)
OPSCOPE_FORMS(param_unary_kernel, ParamUnary::log10)
OPSCOPE_FORMS(param_unary_kernel, ParamUnary::exp2)
OPSCOPE_FORMS(param_unary_kernel, ParamUnary::atanh)
OPSCOPE_FORMS(param_unary_kernel, ParamUnary::frac)
OPSCOPE_FORMS(unary_kernel, Unary::neg)
OPSCOPE_FORMS(unary_kernel, Unary::abs)
OPSCOPE_FORMS(unary_kernel, Unary::exp)
OPSCOPE_FORMS(unary_kernel, Unary::log)
OPSCOPE_FORMS(unary_kernel, Unary::sqrt)
OPSCOPE_FORMS(unary_kernel, Unary::rsqrt)
OPSCOPE_FORMS(unary_kernel, Unary::sin)
OPSCOPE_FORMS(unary_kernel, Unary::cos)
OPSCOPE_FORMS(unary_kernel, Unary::tanh)
OPSCOPE_FORMS(unary_kernel, Unary::sigmoid)
OPSCOPE_FORMS(unary_kernel, Unary::silu)
OPSCOPE_FORMS(unary_kernel, Unary::gelu)
OPSCOPE_FORMS(unary_kernel, Unary::relu)
OPSCOPE_FORMS(unary_kernel, Unary::hardswish)
OPSCOPE_FORMS(unary_kernel, Unary::hardsigmoid)
OPSCOPE_FORMS(unary_kernel, Unary::floor)
OPSCOPE_FORMS(unary_kernel, Unary::ceil)
OPSCOPE_FORMS(unary_kernel, Unary::round)
OPSCOPE_FORMS(unary_kernel, Unary::trunc)
OPSCOPE_FORMS(unary_kernel, Unary::sign)
OPSCOPE_FORMS(unary_kernel, Unary::log2)
OPSCOPE_FORMS(unary_kernel, Unary::reciprocal)
OPSCOPE_FORMS(unary_kernel, Unary::erf)
OPSCOPE_FORMS(unary_kernel, Unary::expm1)
OPSCOPE_FORMS(unary_kernel, Unary::log1p)
OPSCOPE_FORMS(unary_kernel, Unary::tan)
OPSCOPE_FORMS(unary_kernel, Unary::atan)
OPSCOPE_FORMS(unary_kernel, Unary::asin)
OPSCOPE_FORMS(unary_kernel, Unary::acos)
OPSCOPE_FORMS(unary_kernel, Unary::sinh)
OPSCOPE_FORMS(unary_kernel, Unary::cosh)
OPSCOPE_FORMS(unary_kernel, Unary::erfinv)
OPSCOPE_FORMS(reduce_kernel, Reduce::sum)
OPSCOPE_FORMS(reduce_kernel, Reduce::mean)
OPSCOPE_FORMS(reduce_kernel, Reduce::amax)
OPSCOPE_FORMS(reduce_kernel, Reduce::amin)
#undef OPSCOPE_FORMS
template at::Tensor binary_fast<Binary::add, at::_ops::add_Tensor>(const at::Tensor&, const at::Tensor&,
                                                                   const at::Scalar&);
template at::Tensor binary_fast<Binary::sub, at::_ops::sub_Tensor>(const at::Tensor&, const at::Tensor&,
                                                                   const at::Scalar&);
template at::Tensor binary_fast<Binary::mul, at::_ops::mul_Tensor>(const at::Tensor&, const at::Tensor&);
template at::Tensor binary_fast<Binary::div, at::_ops::div_Tensor>(const at::Tensor&, const at::Tensor&);
template void div_mode_kernel<Form::functional, false>(const c10::OperatorHandle&, Stack*);
template void div_mode_kernel<Form::inplace, false>(const c10::OperatorHandle&, Stack*);
template void div_mode_kernel<Form::out, false>(const c10::OperatorHandle&, Stack*);
template void div_mode_kernel<Form::functional, true>(const c10::OperatorHandle&, Stack*);
template void div_mode_kernel<Form::inplace, true>(const c10::OperatorHandle&, Stack*);
template void div_mode_kernel<Form::out, true>(const c10::OperatorHandle&, Stack*);
template void argmax_kernel<Form::functional>(const c10::OperatorHandle&, Stack*);
template void argmax_kernel<Form::out>(const c10::OperatorHandle&, Stack*);
template void var_kernel<Form::functional>(const c10::OperatorHandle&, Stack*);
template void var_kernel<Form::out>(const c10::OperatorHandle&, Stack*);

}  // namespace opscope::torch_bridge
