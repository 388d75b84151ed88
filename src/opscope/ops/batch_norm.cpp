#include "opscope/ops/batch_norm.h"

#include <vector>

#include "opscope/compiler/trace.h"
#include "opscope/core/error.h"
#include "opscope/kernels/cpu/batch_norm.h"
#include "opscope/ops/ops.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/runtime.h"

namespace opscope {

namespace {

// A per-channel operand: (C) on x's device, any floating dtype; f32 for the kernel.
// Undefined stays undefined.
Tensor channel_param(const char* what, const Tensor& p, const Tensor& x, bool required) {
  if (!p.defined()) {
    if (required) fail("batch_norm", "{} is undefined; eval needs the running statistics", what);
    return p;
  }
  if (&p.device() != &x.device())
    fail("batch_norm", "{} is on {} but x is on {}", what, p.device().name(), x.device().name());
  if (!is_floating(p.dtype())) fail("batch_norm", "{} has dtype {}, not a floating type", what, dtype_name(p.dtype()));
  if (p.ndim() != 1 || p.shape()[0] != x.shape()[1])
    fail("batch_norm", "{} has shape {} but x {} has {} channels (axis 1)", what, p.shape().str(), x.shape().str(),
         x.shape()[1]);
  return p.dtype() == DType::f32 ? p.contiguous() : p.to(DType::f32);
}

// The same arithmetic as elementwise ops: what the compiler's trace records, and what
// runs on a device without the fused kernel.
Tensor batch_norm_by_ops(const Tensor& x, const Tensor& mean, const Tensor& var, const Tensor& w, const Tensor& b,
                         double eps) {
  Tensor scale = rsqrt(add(var, eps));
  if (w.defined()) scale = mul(scale, w);
  Tensor shift = neg(mul(mean, scale));
  if (b.defined()) shift = add(shift, b);
  Shape per_channel{x.shape()[1]};
  for (int i = 2; i < x.ndim(); ++i) per_channel.push_back(1);
  auto as_x = [&](const Tensor& t) { return (t.dtype() == x.dtype() ? t : t.to(x.dtype())).reshape(per_channel); };
  return add(mul(x, as_x(scale)), as_x(shift));
}

}  // namespace

Tensor batch_norm(const Tensor& x, const Tensor& mean, const Tensor& var, const Tensor& weight, const Tensor& bias,
                  double eps) {
  OPSCOPE_OP("batch_norm", &x, &mean, &var, &weight, &bias);
  // framework
  if (!x.defined()) fail("batch_norm", "x is undefined (default-constructed)");
  if (!is_floating(x.dtype())) fail("batch_norm", "x has dtype {}, not a floating type", dtype_name(x.dtype()));
  if (x.ndim() < 2) fail("batch_norm", "x has shape {}; it needs (N, C, ...)", x.shape().str());
  if (!(eps >= 0)) fail("batch_norm", "eps is {}; it must be a number >= 0", eps);
  Tensor m = channel_param("running_mean", mean, x, true), v = channel_param("running_var", var, x, true),
         w = channel_param("weight", weight, x, false), b = channel_param("bias", bias, x, false);
  if (compiler::tracing() || x.device().type() != DeviceType::cpu) return batch_norm_by_ops(x, m, v, w, b, eps);
  // runtime
  Tensor xc = x.contiguous();
  Tensor out = runtime::allocate(x.shape(), x.dtype(), x.device());
  if (out.numel() == 0) return out;
  LaunchSpec spec =
      cpu_kernels::batch_norm_spec(out, xc, m, v, w.defined() ? &w : nullptr, b.defined() ? &b : nullptr, eps);
  std::vector<const Tensor*> reads{&xc, &m, &v};
  for (const Tensor* p : {&w, &b})
    if (p->defined()) reads.push_back(p);
  const Tensor* writes[] = {&out};
  runtime::launch(x.device(), std::move(spec), reads, writes);
  return out;
}

}  // namespace opscope
