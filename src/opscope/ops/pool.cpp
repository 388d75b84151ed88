// max_pool2d and max_pool2d_with_indices: one launch, a work unit per output plane.
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

Window2d geometry(const Tensor& x, Size2 kernel, Size2 stride, Size2 padding, Size2 dilation, bool ceil_mode) {
  ops_detail::check_nchw("max_pool2d", x);
  Window2d g;
  g.n = x.shape()[0], g.c = x.shape()[1], g.h = x.shape()[2], g.w = x.shape()[3];
  g.oc = g.c;
  g.kh = kernel[0], g.kw = kernel[1];
  if (g.kh < 1 || g.kw < 1) fail("max_pool2d", "kernel ({}, {}) must be at least 1", g.kh, g.kw);
  ops_detail::set_window("max_pool2d", g, stride, padding, dilation);
  // torch's rule: a window always holds an input element.
  if (2 * g.ph > g.kh || 2 * g.pw > g.kw)
    fail("max_pool2d", "padding ({}, {}) must be at most half the kernel ({}, {})", g.ph, g.pw, g.kh, g.kw);
  ops_detail::set_output_size("max_pool2d", g, ceil_mode);
  return g;
}

// The pooled values and, when `with_indices`, their positions.
std::pair<Tensor, Tensor> pool(const Tensor& x, const Window2d& g, bool with_indices) {
  Tensor xc = x.contiguous();
  Shape shape{g.n, g.c, g.oh, g.ow};
  Tensor out = runtime::allocate(shape, x.dtype(), x.device());
  Tensor idx = with_indices ? runtime::allocate(shape, DType::i64, x.device()) : Tensor();
  if (out.numel() == 0) return {out, idx};
  LaunchSpec spec = kernels::max_pool2d_spec(out, with_indices ? &idx : nullptr, xc, g);
  if (with_indices) runtime::launch(x.device(), std::move(spec), {&xc}, {&out, &idx});
  else runtime::launch(x.device(), std::move(spec), {&xc}, {&out});
  return {out, idx};
}

}  // namespace

Tensor max_pool2d(const Tensor& x, Size2 kernel, Size2 stride, Size2 padding, Size2 dilation, bool ceil_mode) {
  OPSCOPE_OP("max_pool2d", &x);
  Window2d g = geometry(x, kernel, stride, padding, dilation, ceil_mode);
  Tensor out = pool(x, g, false).first;
  if (compiler::tracing()) compiler::record("max_pool2d", {&x}, out);
  return out;
}

std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, Size2 kernel, Size2 stride, Size2 padding,
                                                  Size2 dilation, bool ceil_mode) {
  OPSCOPE_OP("max_pool2d", &x);
  Window2d g = geometry(x, kernel, stride, padding, dilation, ceil_mode);
  auto r = pool(x, g, true);
  if (compiler::tracing()) compiler::record("max_pool2d", {&x}, r.first);
  return r;
}

}  // namespace opscope
