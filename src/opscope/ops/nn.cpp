// Fused normalization ops: softmax, rms_norm, layer_norm. Each is one kernel launch
// (kernels/cpu/norm); a non-contiguous input is first made contiguous, which shows as
// its own copy kernel.
#include "opscope/compiler/trace.h"
#include "opscope/core/error.h"
#include "opscope/kernels/dispatch.h"
#include "opscope/ops/ops.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/runtime.h"

namespace opscope {

namespace {

void check_float_input(const char* op, const Tensor& x) {
  if (!x.defined()) fail(op, "x is undefined (default-constructed)");
  if (!is_floating(x.dtype())) fail(op, "x has dtype {}, not a floating type", dtype_name(x.dtype()));
}

// A per-feature parameter (weight, bias) of x's last axis; undefined means "none".
void check_param(const char* op, const char* what, const Tensor& p, const Tensor& x) {
  if (!p.defined()) return;
  if (&p.device() != &x.device())
    fail(op, "{} is on {} but x is on {}", what, p.device().name(), x.device().name());
  if (p.dtype() != x.dtype())
    fail(op, "{} has dtype {} but x has dtype {}", what, dtype_name(p.dtype()), dtype_name(x.dtype()));
  if (p.ndim() != 1 || p.shape()[0] != x.shape().back())
    fail(op, "{} has shape {} but x's last axis is {}", what, p.shape().str(), x.shape().back());
}

void check_last_axis(const char* op, const Tensor& x) {
  if (x.ndim() == 0) fail(op, "x is a scalar (shape ()); it needs a last axis to normalize over");
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t axis) {
  OPSCOPE_OP("softmax", &x);
  // framework
  check_float_input("softmax", x);
  int a = x.ndim() ? normalize_axis(axis, x.ndim(), "softmax") : normalize_axis(axis, 1, "softmax");
  // runtime
  Tensor xc = x.contiguous();
  Tensor out = runtime::allocate(x.shape(), x.dtype(), x.device());
  if (out.numel() == 0) return out;
  runtime::launch(x.device(), kernels::softmax_spec(out, xc, a), {&xc}, {&out});
  if (compiler::tracing()) compiler::record("softmax", {&x}, out, compiler::TraceAttrs::at_axis(axis));
  return out;
}

Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps) {
  OPSCOPE_OP("rms_norm", &x, &weight);
  // framework
  check_float_input("rms_norm", x);
  check_last_axis("rms_norm", x);
  check_param("rms_norm", "weight", weight, x);
  // runtime
  Tensor xc = x.contiguous();
  Tensor wc = weight.defined() ? weight.contiguous() : Tensor();
  Tensor out = runtime::allocate(x.shape(), x.dtype(), x.device());
  if (out.numel() == 0) return out;
  LaunchSpec spec = kernels::rms_norm_spec(out, xc, wc.defined() ? &wc : nullptr, float(eps));
  if (wc.defined()) runtime::launch(x.device(), std::move(spec), {&xc, &wc}, {&out});
  else runtime::launch(x.device(), std::move(spec), {&xc}, {&out});
  if (compiler::tracing()) compiler::record("rms_norm", {&x, &weight}, out, compiler::TraceAttrs::eps(eps));
  return out;
}

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  OPSCOPE_OP("layer_norm", &x, &weight, &bias);
  // framework
  check_float_input("layer_norm", x);
  check_last_axis("layer_norm", x);
  check_param("layer_norm", "weight", weight, x);
  check_param("layer_norm", "bias", bias, x);
  // runtime
  Tensor xc = x.contiguous();
  Tensor wc = weight.defined() ? weight.contiguous() : Tensor();
  Tensor bc = bias.defined() ? bias.contiguous() : Tensor();
  Tensor out = runtime::allocate(x.shape(), x.dtype(), x.device());
  if (out.numel() == 0) return out;
  LaunchSpec spec = kernels::layer_norm_spec(out, xc, wc.defined() ? &wc : nullptr,
                                                 bc.defined() ? &bc : nullptr, float(eps));
  // Undefined parameters are not read; list x in their place (reads may repeat).
  const Tensor& w_read = wc.defined() ? wc : xc;
  const Tensor& b_read = bc.defined() ? bc : xc;
  runtime::launch(x.device(), std::move(spec), {&xc, &w_read, &b_read}, {&out});
  if (compiler::tracing()) compiler::record("layer_norm", {&x, &weight, &bias}, out, compiler::TraceAttrs::eps(eps));
  return out;
}

}  // namespace opscope
