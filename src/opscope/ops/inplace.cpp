#include "opscope/ops/inplace.h"

#include "opscope/compiler/trace.h"
#include "opscope/core/error.h"
#include "opscope/kernels/dispatch.h"
#include "opscope/runtime/device.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/runtime.h"

namespace opscope {

bool can_write_in_place(const Tensor& x) {
  return x.defined() && is_floating(x.dtype()) && x.device().type() == DeviceType::cpu && x.is_contiguous() &&
         !compiler::tracing();
}

bool can_write_in_place(const Tensor& x, const Tensor& other) {
  if (!can_write_in_place(x) || !other.defined() || other.dtype() != x.dtype() || &other.device() != &x.device() ||
      other.ndim() > x.ndim())
    return false;
  for (int d = 1; d <= other.ndim(); ++d) {
    const int64_t o = other.shape()[other.ndim() - d];
    if (o != 1 && o != x.shape()[x.ndim() - d]) return false;
  }
  if (other.storage() != x.storage()) return true;
  return other.data_ptr() == x.data_ptr() && other.shape() == x.shape() && other.strides() == x.strides();
}

void unary_inplace(const char* op, cpu_kernels::UnaryOp kind, const Tensor& x) {
  OPSCOPE_OP(op, &x);
  if (!can_write_in_place(x))
    fail(op, "x (shape {}, dtype {}) cannot be written in place: it must be contiguous and floating, on the CPU device",
         x.defined() ? x.shape().str() : "undefined", x.defined() ? dtype_name(x.dtype()) : "none");
  if (x.numel()) runtime::launch(x.device(), kernels::unary_spec(kind, x, x), {&x}, {&x});
}

void binary_inplace(const char* op, cpu_kernels::BinaryOp kind, const Tensor& x, const Tensor& other) {
  OPSCOPE_OP(op, &x, &other);
  if (!can_write_in_place(x, other))
    fail(op, "x (shape {}) cannot be written in place with other (shape {}): contiguous floating x on the CPU device, "
         "other of its dtype, broadcastable to it and not a different view of its memory",
         x.defined() ? x.shape().str() : "undefined", other.defined() ? other.shape().str() : "undefined");
  if (x.numel()) runtime::launch(x.device(), kernels::binary_spec(kind, x, x, other), {&x, &other}, {&x});
}

}  // namespace opscope
