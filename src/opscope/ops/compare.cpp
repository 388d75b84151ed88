// Comparisons, logic and selection: eq/ne/lt/le/gt/ge, logical_*, where, masked_fill,
// clamp, addcmul. Masks are bool (DType::b8). CPU kernels only (kernels/cpu/compare);
// on another device each op says so.
#include <cmath>

#include "opscope/core/error.h"
#include "opscope/kernels/cpu/compare.h"
#include "opscope/kernels/dispatch.h"
#include "opscope/ops/ops.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/runtime.h"

namespace opscope {

namespace {

using cpu_kernels::CompareOp;
using cpu_kernels::LogicalOp;

void check_same(const char* op, const Tensor& a, const char* an, const Tensor& b, const char* bn) {
  if (!a.defined()) fail(op, "{} is undefined (a default-constructed Tensor)", an);
  if (!b.defined()) fail(op, "{} is undefined (a default-constructed Tensor)", bn);
  if (&a.device() != &b.device())
    fail(op, "{} is on {} but {} is on {}", an, a.device().name(), bn, b.device().name());
}

void check_dtype_equal(const char* op, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    fail(op, "dtypes {} and {} differ (shapes {} and {}); convert one with .to()", dtype_name(a.dtype()),
         dtype_name(b.dtype()), a.shape().str(), b.shape().str());
}

void check_bool(const char* op, const Tensor& t, const char* name) {
  if (t.dtype() != DType::b8)
    fail(op, "{} has dtype {} (shape {}); it must be bool", name, dtype_name(t.dtype()), t.shape().str());
}

// A number as a value of dtype t, as torch rounds a Python number for a tensor op.
double round_to(DType t, double s) {
  switch (t) {
    case DType::f32: return double(float(s));
    case DType::bf16: return double(bf16_to_f32(f32_to_bf16(float(s))));
    case DType::f16: return double(f16_to_f32(f32_to_f16(float(s))));
    case DType::b8: return s != 0 ? 1 : 0;
    default: return std::trunc(s);
  }
}

Tensor compare(const char* op, CompareOp kind, const Tensor& a, const Tensor& b) {
  check_same(op, a, "a", b, "b");
  check_dtype_equal(op, a, b);
  Shape shape = broadcast_shapes(a.shape(), b.shape(), op);
  ops_detail::cpu_only(op, a.device());
  Tensor out = runtime::allocate(shape, DType::b8, a.device());
  if (out.numel()) runtime::launch(a.device(), cpu_kernels::compare_spec(kind, out, a, b), {&a, &b}, {&out});
  return out;
}

Tensor compare(const char* op, CompareOp kind, const Tensor& x, double s) {
  if (!x.defined()) fail(op, "x is undefined (a default-constructed Tensor)");
  ops_detail::cpu_only(op, x.device());
  Tensor out = runtime::allocate(x.shape(), DType::b8, x.device());
  if (out.numel())
    runtime::launch(x.device(), cpu_kernels::compare_scalar_spec(kind, out, x, round_to(x.dtype(), s)), {&x}, {&out});
  return out;
}

Tensor logical(const char* op, LogicalOp kind, const Tensor& a, const Tensor& b) {
  check_same(op, a, "a", b, "b");
  check_bool(op, a, "a");
  check_bool(op, b, "b");
  Shape shape = broadcast_shapes(a.shape(), b.shape(), op);
  ops_detail::cpu_only(op, a.device());
  Tensor out = runtime::allocate(shape, DType::b8, a.device());
  if (out.numel()) runtime::launch(a.device(), cpu_kernels::logical_spec(kind, out, a, b), {&a, &b}, {&out});
  return out;
}

}  // namespace

#define OPSCOPE_COMPARE(name)                                                                      \
  Tensor name(const Tensor& a, const Tensor& b) {                                                  \
    OPSCOPE_OP(#name, &a, &b);                                                                     \
    return compare(#name, CompareOp::name, a, b);                                                  \
  }                                                                                                \
  Tensor name(const Tensor& x, double s) {                                                         \
    OPSCOPE_OP(#name, &x);                                                                         \
    return compare(#name, CompareOp::name, x, s);                                                  \
  }
OPSCOPE_COMPARE(eq)
OPSCOPE_COMPARE(ne)
OPSCOPE_COMPARE(lt)
OPSCOPE_COMPARE(le)
OPSCOPE_COMPARE(gt)
OPSCOPE_COMPARE(ge)
#undef OPSCOPE_COMPARE

Tensor logical_and(const Tensor& a, const Tensor& b) {
  OPSCOPE_OP("logical_and", &a, &b);
  return logical("logical_and", LogicalOp::and_, a, b);
}
Tensor logical_or(const Tensor& a, const Tensor& b) {
  OPSCOPE_OP("logical_or", &a, &b);
  return logical("logical_or", LogicalOp::or_, a, b);
}
Tensor logical_xor(const Tensor& a, const Tensor& b) {
  OPSCOPE_OP("logical_xor", &a, &b);
  return logical("logical_xor", LogicalOp::xor_, a, b);
}

Tensor logical_not(const Tensor& x) {
  OPSCOPE_OP("logical_not", &x);
  if (!x.defined()) fail("logical_not", "x is undefined (a default-constructed Tensor)");
  check_bool("logical_not", x, "x");
  ops_detail::cpu_only("logical_not", x.device());
  Tensor out = runtime::allocate(x.shape(), DType::b8, x.device());
  if (out.numel()) runtime::launch(x.device(), cpu_kernels::logical_not_spec(out, x), {&x}, {&out});
  return out;
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  OPSCOPE_OP("where", &cond, &a, &b);
  check_same("where", cond, "cond", a, "a");
  check_same("where", a, "a", b, "b");
  check_bool("where", cond, "cond");
  check_dtype_equal("where", a, b);
  Shape shape = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  ops_detail::cpu_only("where", a.device());
  Tensor out = runtime::allocate(shape, a.dtype(), a.device());
  if (out.numel()) runtime::launch(a.device(), cpu_kernels::where_spec(out, cond, a, b), {&cond, &a, &b}, {&out});
  return out;
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  OPSCOPE_OP("masked_fill", &x, &mask);
  check_same("masked_fill", x, "x", mask, "mask");
  check_bool("masked_fill", mask, "mask");
  if (broadcast_shapes(x.shape(), mask.shape(), "masked_fill") != x.shape())
    fail("masked_fill", "mask of shape {} does not broadcast to x's shape {}", mask.shape().str(), x.shape().str());
  ops_detail::cpu_only("masked_fill", x.device());
  Tensor out = runtime::allocate(x.shape(), x.dtype(), x.device());
  if (out.numel())
    runtime::launch(x.device(), cpu_kernels::masked_fill_spec(out, x, mask, round_to(x.dtype(), value)), {&x, &mask},
                    {&out});
  return out;
}

Tensor clamp(const Tensor& x, std::optional<double> lo, std::optional<double> hi) {
  OPSCOPE_OP("clamp", &x);
  if (!x.defined()) fail("clamp", "x is undefined (a default-constructed Tensor)");
  if (x.dtype() == DType::b8) fail("clamp", "x has dtype bool (shape {}); convert with .to() first", x.shape().str());
  if (!lo && !hi) fail("clamp", "at least one of the bounds must be given");
  ops_detail::cpu_only("clamp", x.device());
  Tensor out = runtime::allocate(x.shape(), x.dtype(), x.device());
  if (out.numel()) runtime::launch(x.device(), cpu_kernels::clamp_spec(out, x, lo, hi), {&x}, {&out});
  return out;
}

Tensor addcmul(const Tensor& x, const Tensor& a, const Tensor& b, double value) {
  OPSCOPE_OP("addcmul", &x, &a, &b);
  check_same("addcmul", x, "x", a, "a");
  check_same("addcmul", a, "a", b, "b");
  check_dtype_equal("addcmul", x, a);
  check_dtype_equal("addcmul", a, b);
  if (!is_floating(x.dtype()))
    fail("addcmul", "dtype {} is not a floating type (f32, bf16, f16)", dtype_name(x.dtype()));
  Shape shape = broadcast_shapes(broadcast_shapes(x.shape(), a.shape(), "addcmul"), b.shape(), "addcmul");
  ops_detail::cpu_only("addcmul", x.device());
  Tensor out = runtime::allocate(shape, x.dtype(), x.device());
  if (out.numel()) runtime::launch(x.device(), cpu_kernels::addcmul_spec(out, x, a, b, value), {&x, &a, &b}, {&out});
  return out;
}

}  // namespace opscope
