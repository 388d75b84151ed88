// conv2d: one fused launch on the CPU device (kernels/cpu/conv); on a CUDA device the
// columns are written by im2col and multiplied with cuBLAS through matmul.
#include <climits>
#include <vector>

#include "opscope/compiler/trace.h"
#include "opscope/core/error.h"
#include "opscope/kernels/dispatch.h"
#include "opscope/ops/ops.h"
#include "opscope/ops/window.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/runtime.h"

namespace opscope {

namespace {

using kernels::Window2d;

// A residual is added to the output element by element: the output's shape, x's dtype and device.
void check_residual(const Tensor& r, const Tensor& x, const Shape& out) {
  if (&r.device() != &x.device()) fail("conv2d", "residual is on {} but x is on {}", r.device().name(), x.device().name());
  if (r.dtype() != x.dtype())
    fail("conv2d", "residual has dtype {} but x has dtype {}", dtype_name(r.dtype()), dtype_name(x.dtype()));
  if (r.shape() != out) fail("conv2d", "residual has shape {}; it must be the output's, {}", r.shape().str(), out.str());
}

void check_operands(const Tensor& x, const Tensor& w, const Tensor& bias) {
  ops_detail::check_nchw("conv2d", x);
  if (!w.defined()) fail("conv2d", "weight is undefined (default-constructed)");
  for (const Tensor* t : {&w, &bias}) {
    if (!t->defined()) continue;
    const char* what = t == &w ? "weight" : "bias";
    if (&t->device() != &x.device()) fail("conv2d", "{} is on {} but x is on {}", what, t->device().name(), x.device().name());
    if (t->dtype() != x.dtype())
      fail("conv2d", "{} has dtype {} but x has dtype {} (convert with .to())", what, dtype_name(t->dtype()),
           dtype_name(x.dtype()));
  }
  if (w.ndim() != 4) fail("conv2d", "weight has shape {}; it must be (OC, C / groups, KH, KW)", w.shape().str());
}

Window2d geometry(const Tensor& x, const Tensor& w, const Tensor& bias, Size2 stride, Size2 padding, Size2 dilation,
                  int64_t groups) {
  Window2d g;
  g.n = x.shape()[0], g.c = x.shape()[1], g.h = x.shape()[2], g.w = x.shape()[3];
  g.oc = w.shape()[0], g.kh = w.shape()[2], g.kw = w.shape()[3];
  g.groups = groups;
  if (groups < 1) fail("conv2d", "groups is {}; it must be at least 1", groups);
  if (g.c % groups || g.oc % groups)
    fail("conv2d", "groups {} must divide x's {} channels and weight's {} output channels", groups, g.c, g.oc);
  if (w.shape()[1] != g.c / groups)
    fail("conv2d", "weight has shape {}: its dim 1 must be C / groups = {} / {} = {}", w.shape().str(), g.c, groups,
         g.c / groups);
  if (g.kh < 1 || g.kw < 1) fail("conv2d", "weight has shape {}: an empty kernel", w.shape().str());
  if (bias.defined() && (bias.ndim() != 1 || bias.shape()[0] != g.oc))
    fail("conv2d", "bias has shape {}; it must be ({}), one per output channel", bias.shape().str(), g.oc);
  ops_detail::set_window("conv2d", g, stride, padding, dilation);
  ops_detail::set_output_size("conv2d", g, false);
  if (g.k() > INT_MAX || g.pixels() > INT_MAX || g.oc > INT_MAX)
    fail("conv2d", "x {} and weight {}: a gemm dim exceeds BLAS's 32-bit sizes", x.shape().str(), w.shape().str());
  return g;
}

#if OPSCOPE_HAVE_CUDA
// The columns (N, groups, K, OH*OW) of x, then (groups, OCg, K) @ columns: one batched
// cuBLAS gemm, and the bias as a broadcast add.
Tensor conv2d_by_columns(const Tensor& x, const Tensor& w, const Tensor& bias, const Window2d& g) {
  Tensor cols = runtime::allocate({g.n, g.groups, g.k(), g.pixels()}, x.dtype(), x.device());
  if (cols.numel() > 0) runtime::launch(x.device(), kernels::im2col_spec(cols, x, g), {&x}, {&cols});
  Tensor y = matmul(w.reshape({g.groups, g.ocg(), g.k()}), cols).reshape({g.n, g.oc, g.oh, g.ow});
  return bias.defined() ? add(y, bias.reshape({g.oc, 1, 1})) : y;
}
#endif

}  // namespace

Tensor activation(const Tensor& x, Activation act) {
  switch (act) {
    case Activation::none: return x;
    case Activation::relu: return relu(x);
    case Activation::relu6: return clamp(x, 0.0, 6.0);
    case Activation::hardswish: return hardswish(x);
    case Activation::silu: return silu(x);
  }
  return x;
}

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Size2 stride, Size2 padding, Size2 dilation,
              int64_t groups, Activation act, const Tensor& residual) {
  OPSCOPE_OP("conv2d", &x, &weight, &bias);
  // ---- framework: validate, infer the output (before anything is launched) ----
  check_operands(x, weight, bias);
  Window2d g = geometry(x, weight, bias, stride, padding, dilation, groups);
  if (residual.defined()) check_residual(residual, x, Shape{g.n, g.oc, g.oh, g.ow});
  // The epilogue is the CPU kernel's, in f32. Elsewhere, and while the compiler traces (it
  // records conv2d, add and the activation as the ops they are), they are ops of their own.
  if ((act != Activation::none || residual.defined()) &&
      (compiler::tracing() || x.device().type() != DeviceType::cpu || x.dtype() != DType::f32)) {
    Tensor y = conv2d(x, weight, bias, stride, padding, dilation, groups);
    return activation(residual.defined() ? add(y, residual) : y, act);
  }

  // ---- runtime: contiguous operands, allocate, launch ----
  Tensor xc = x.contiguous(), wc = weight.contiguous(), bc = bias.defined() ? bias.contiguous() : Tensor();
  Tensor out;
#if OPSCOPE_HAVE_CUDA
  if (x.device().type() == DeviceType::cuda) out = conv2d_by_columns(xc, wc, bc, g);
#endif
  if (!out.defined()) {
    // The CPU kernels compute in f32: a bf16/f16 call converts its operands and rounds the result once.
    DType dt = x.dtype();
    if (dt != DType::f32) xc = xc.to(DType::f32), wc = wc.to(DType::f32), bc = bc.defined() ? bc.to(DType::f32) : bc;
    out = runtime::allocate({g.n, g.oc, g.oh, g.ow}, DType::f32, x.device());
    Tensor rc = residual.defined() ? residual.contiguous() : Tensor();
    if (out.numel() > 0 && g.k() == 0) {  // no input channels: an empty sum
      kernels::launch_fill(out, 0.0);
      if (bc.defined()) out = add(out, bc.reshape({g.oc, 1, 1}));
      out = activation(rc.defined() ? add(out, rc) : out, act);
    } else if (out.numel() > 0) {
      LaunchSpec spec =
          kernels::conv2d_spec(out, xc, wc, bc.defined() ? &bc : nullptr, g, act, rc.defined() ? &rc : nullptr);
      std::vector<const Tensor*> ins = {&xc, &wc};
      if (bc.defined()) ins.push_back(&bc);
      if (rc.defined()) ins.push_back(&rc);
      const Tensor* outs[] = {&out};
      runtime::launch(x.device(), std::move(spec), ins, outs);
    }
    out = out.to(dt);
  }
  if (compiler::tracing()) compiler::record("conv2d", {&x, &weight, &bias}, out);
  return out;
}

}  // namespace opscope
