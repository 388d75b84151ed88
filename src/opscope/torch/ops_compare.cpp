// Comparisons, logic and selection: aten's eq/ne/lt/le/gt/ge, logical_* (and bitwise_*
// on bool), where, masked_fill, clamp (clamp_min, clamp_max, hardtanh) and addcmul, on
// opscope's kernels (ops/compare.cpp). Operands are promoted to torch's result dtype
// first; masks are bool tensors.
#include <ATen/native/TypeProperties.h>

#include "opscope/core/error.h"
#include "opscope/ops/ops.h"
#include "opscope/torch/kernels.h"

namespace opscope::torch_bridge {

namespace {

Tensor apply(Compare k, const Tensor& a, const Tensor& b) {
  switch (k) {
    case Compare::eq: return eq(a, b);
    case Compare::ne: return ne(a, b);
    case Compare::lt: return lt(a, b);
    case Compare::le: return le(a, b);
    case Compare::gt: return gt(a, b);
    case Compare::ge: return ge(a, b);
  }
  return {};
}

Tensor apply(Compare k, const Tensor& x, double s) {
  switch (k) {
    case Compare::eq: return eq(x, s);
    case Compare::ne: return ne(x, s);
    case Compare::lt: return lt(x, s);
    case Compare::le: return le(x, s);
    case Compare::gt: return gt(x, s);
    case Compare::ge: return ge(x, s);
  }
  return {};
}

// A tensor as bool: itself, or x != 0 (torch's logical ops take any dtype).
Tensor truth(const Tensor& x) { return x.dtype() == DType::b8 ? x : ne(x, 0.0); }

// A device tensor or a 0-dim CPU tensor (a wrapped number) as an opscope tensor of dtype d
// on `like`'s device: the number becomes a 0-dim device tensor.
Tensor tensor_operand(const at::Tensor& t, DType d, const Tensor& like, const char* op) {
  if (is_cpu_scalar(t)) return full(Shape{}, cpu_scalar_value(t), d, &like.device());
  return as_dtype(from_torch(t, op), d);
}

}  // namespace

// eq/ne/lt/le/gt/ge .Tensor/.Scalar (self, other), their out (..., out) and in-place forms.
template <Compare C, Form F>
void compare_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  Operand a = operand(c.arg(0)), b = operand(c.arg(1));
  if (a.is_number) return c.fall_back();  // a CPU 0-dim self: torch's CPU op
  if (!b.is_number && on_device(a.t) != on_device(b.t)) two_devices(c.name(), a.t, b.t);
  auto dt = to_dtype(result_type(c.arg(0), c.arg(1)));
  if (!dt || !has_kernels({&a.t}, false) || (!b.is_number && !has_kernels({&b.t}, false))) return c.fall_back();
  try {
    Tensor x = from_torch(a.t, c.name());
    Tensor y = b.is_number ? Tensor() : from_torch(b.t, c.name());
    AtenScope scope(c.name(), {&x, &y});
    Tensor r = b.is_number ? apply(C, as_dtype(x, *dt), b.value) : apply(C, as_dtype(x, *dt), as_dtype(y, *dt));
    c.ret(deliver(F, r, F == Form::out ? c.out() : a.t, c.name()));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

// logical_and/or/xor(self, other) and bitwise_and/or/xor.Tensor on bool operands.
template <Logical L, Form F>
void logical_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor &a = c.tensor(0), &b = c.tensor(1);
  if (on_device(a) != on_device(b) && !is_cpu_scalar(b)) two_devices(c.name(), a, b);
  bool bitwise = std::string_view(c.name()).starts_with("aten::bitwise");
  if (bitwise && (a.scalar_type() != at::kBool || b.scalar_type() != at::kBool)) return c.fall_back();  // integers
  if (!has_kernels({&a}, false) || (!is_cpu_scalar(b) && !has_kernels({&b}, false))) return c.fall_back();
  try {
    Tensor x = from_torch(a, c.name());
    AtenScope scope(c.name(), {&x});
    Tensor y = truth(tensor_operand(b, is_cpu_scalar(b) ? DType::f32 : *to_dtype(b.scalar_type()), x, c.name()));
    x = truth(x);
    Tensor r = L == Logical::and_ ? logical_and(x, y) : L == Logical::or_ ? logical_or(x, y) : logical_xor(x, y);
    c.ret(deliver(F, r, F == Form::out ? c.out() : a, c.name()));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

// logical_not(self) and bitwise_not on bool.
template <Form F>
void logical_not_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  bool bitwise = std::string_view(c.name()).starts_with("aten::bitwise");
  if (!has_kernels({&self}, false) || (bitwise && self.scalar_type() != at::kBool)) return c.fall_back();
  run_unary<F>(c, [](const Tensor& x) { return logical_not(truth(x)); });
}

// where.self(condition, self, other) and where.self_out: condition bool, self and other
// promoted (either may be a wrapped number).
template <Form F>
void where_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor &cond = c.tensor(0), &a = c.tensor(1), &b = c.tensor(2);
  for (const at::Tensor* t : {&a, &b})
    if (!on_device(*t) && !is_cpu_scalar(*t)) two_devices(c.name(), cond, *t);
  if (cond.scalar_type() != at::kBool || !has_kernels({&cond}, false)) return c.fall_back();
  for (const at::Tensor* t : {&a, &b})
    if (on_device(*t) && !has_kernels({t}, false)) return c.fall_back();
  auto dt = to_dtype(result_type(c.arg(1), c.arg(2)));
  if (!dt) return c.fall_back();
  try {
    Tensor m = from_torch(cond, c.name());
    AtenScope scope(c.name(), {&m});
    Tensor x = tensor_operand(a, *dt, m, c.name()), y = tensor_operand(b, *dt, m, c.name());
    c.ret(deliver(F, where(m, x, y), F == Form::out ? c.out() : a, c.name()));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

// masked_fill(self, mask, value) .Scalar / .Tensor (a 0-dim value), functional and in-place.
template <Form F>
void masked_fill_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor &self = c.tensor(0), &mask = c.tensor(1);
  if (on_device(self) != on_device(mask)) two_devices(c.name(), self, mask);
  double value;
  if (c.arg(2).isTensor()) {
    const at::Tensor& v = c.arg(2).toTensor();
    if (v.dim() != 0 || !(is_cpu_scalar(v) || on_device(v))) return c.fall_back();  // torch's error
    value = is_cpu_scalar(v) ? cpu_scalar_value(v) : v.item().toDouble();
  } else {
    value = c.number(2);
  }
  if (mask.scalar_type() != at::kBool || !has_kernels({&self, &mask}, false)) return c.fall_back();
  // Torch refuses a fractional value for an integer self; so does its CPU kernel's path.
  if (!at::isFloatingType(self.scalar_type()) && value != double(int64_t(value))) return c.fall_back();
  try {
    Tensor x = from_torch(self, c.name()), m = from_torch(mask, c.name());
    AtenScope scope(c.name(), {&x, &m});
    c.ret(deliver(F, masked_fill(x, m, value), self, c.name()));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

// clamp(self, min?, max?), clamp_min(self, min), clamp_max(self, max), hardtanh(self,
// min_val, max_val), with their in-place and out forms; Scalar bounds.
template <Clamp K, Form F>
void clamp_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  auto bound = [&](size_t i) -> std::optional<double> {
    const c10::IValue& v = c.arg(i);
    if (v.isNone()) return std::nullopt;
    if (!v.isScalar()) throw std::invalid_argument("tensor bound");
    return v.toScalar().toDouble();
  };
  std::optional<double> lo, hi;
  try {
    if (K == Clamp::both || K == Clamp::hardtanh) lo = bound(1), hi = bound(2);
    else if (K == Clamp::min) lo = bound(1);
    else hi = bound(1);
  } catch (const std::invalid_argument&) {
    return c.fall_back();  // clamp.Tensor's tensor bounds
  }
  if (!has_kernels({&self}, false) || self.scalar_type() == at::kBool || (!lo && !hi)) return c.fall_back();
  // An integer self with a fractional bound promotes to floating in torch: its kernel decides.
  bool integral = !at::isFloatingType(self.scalar_type());
  for (auto b : {lo, hi})
    if (integral && b && *b != double(int64_t(*b))) return c.fall_back();
  run_unary<F>(c, [&](const Tensor& x) { return clamp(x, lo, hi); });
}

// clamp.Tensor / clamp_min.Tensor / clamp_max.Tensor: bounds that are tensors (broadcast
// with self, of self's dtype) as maximum then minimum, NaN in any of the three giving NaN
// as torch's kernel.
template <Clamp K, Form F>
void clamp_tensor_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  c10::optional<at::Tensor> lo, hi;
  if (K == Clamp::both) lo = c.opt_tensor(1), hi = c.opt_tensor(2);
  else if (K == Clamp::min) lo = c.tensor(1);
  else hi = c.tensor(1);
  at::Tensor lt = lo ? *lo : at::Tensor(), ht = hi ? *hi : at::Tensor();
  if (!has_kernels({&self, &lt, &ht}, false) || self.scalar_type() == at::kBool || (!lo && !hi)) return c.fall_back();
  for (const at::Tensor* b : {&lt, &ht})
    if (b->defined() && (b->scalar_type() != self.scalar_type() || !on_device(*b))) return c.fall_back();  // promotion
  run_unary<F>(c, [&](const Tensor& x) {
    Tensor r = lt.defined() ? maximum(x, from_torch(lt, c.name())) : x;
    return ht.defined() ? minimum(r, from_torch(ht, c.name())) : r;
  });
}

// addcmul(self, tensor1, tensor2, value): self + value * tensor1 * tensor2.
template <Form F>
void addcmul_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor &self = c.tensor(0), &a = c.tensor(1), &b = c.tensor(2);
  if (on_device(self) != on_device(a)) two_devices(c.name(), self, a);
  if (on_device(a) != on_device(b)) two_devices(c.name(), a, b);
  if (!has_kernels({&self, &a, &b}) || a.scalar_type() != self.scalar_type() || b.scalar_type() != self.scalar_type())
    return c.fall_back();
  try {
    Tensor x = from_torch(self, c.name()), p = from_torch(a, c.name()), q = from_torch(b, c.name());
    AtenScope scope(c.name(), {&x, &p, &q});
    c.ret(deliver(F, addcmul(x, p, q, c.number(3)), F == Form::out ? c.out() : self, c.name()));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

#define OPSCOPE_FORMS(KERNEL, ...)                                                                  \
  template void KERNEL<__VA_ARGS__ __VA_OPT__(, ) Form::functional>(const c10::OperatorHandle&, Stack*); \
  template void KERNEL<__VA_ARGS__ __VA_OPT__(, ) Form::inplace>(const c10::OperatorHandle&, Stack*);    \
  template void KERNEL<__VA_ARGS__ __VA_OPT__(, ) Form::out>(const c10::OperatorHandle&, Stack*);
OPSCOPE_FORMS(compare_kernel, Compare::eq)
OPSCOPE_FORMS(compare_kernel, Compare::ne)
OPSCOPE_FORMS(compare_kernel, Compare::lt)
OPSCOPE_FORMS(compare_kernel, Compare::le)
OPSCOPE_FORMS(compare_kernel, Compare::gt)
OPSCOPE_FORMS(compare_kernel, Compare::ge)
OPSCOPE_FORMS(logical_kernel, Logical::and_)
OPSCOPE_FORMS(logical_kernel, Logical::or_)
OPSCOPE_FORMS(logical_kernel, Logical::xor_)
OPSCOPE_FORMS(logical_not_kernel)
OPSCOPE_FORMS(where_kernel)
OPSCOPE_FORMS(masked_fill_kernel)
OPSCOPE_FORMS(clamp_kernel, Clamp::both)
OPSCOPE_FORMS(clamp_kernel, Clamp::min)
OPSCOPE_FORMS(clamp_kernel, Clamp::max)
OPSCOPE_FORMS(clamp_kernel, Clamp::hardtanh)
OPSCOPE_FORMS(clamp_tensor_kernel, Clamp::both)
OPSCOPE_FORMS(clamp_tensor_kernel, Clamp::min)
OPSCOPE_FORMS(clamp_tensor_kernel, Clamp::max)
OPSCOPE_FORMS(addcmul_kernel)
#undef OPSCOPE_FORMS

}  // namespace opscope::torch_bridge
