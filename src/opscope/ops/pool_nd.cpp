// avg_pool, max_pool_with_indices (any rank), adaptive_avg_pool, adaptive_max_pool: one
// launch each, a work unit per (n, c) plane (kernels/cpu/pool_nd).
#include "opscope/core/error.h"
#include "opscope/kernels/cpu/pool_nd.h"
#include "opscope/kernels/dispatch.h"
#include "opscope/kernels/window2d.h"
#include "opscope/ops/spatial.h"
#include "opscope/ops/spatial_args.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/runtime.h"

namespace opscope {

namespace {

using cpu_kernels::Axes3;
using cpu_kernels::PoolGeometry;

// The window geometry as 3-d, the leading axes of a 1-d or 2-d op of size 1.
PoolGeometry geometry(const char* op, const Tensor& x, const Sizes& kernel, const Sizes& stride, const Sizes& padding,
                      const Sizes& dilation, bool ceil_mode) {
  int k = ops_detail::spatial_axes(op, x);
  Sizes kn = ops_detail::per_axis(op, "kernel", kernel, k), st = ops_detail::per_axis(op, "stride", stride, k);
  Sizes pd = ops_detail::per_axis(op, "padding", padding, k), dl = ops_detail::per_axis(op, "dilation", dilation, k);
  PoolGeometry g;
  g.planes = x.shape()[0] * x.shape()[1];
  for (int a = 0; a < k; ++a) {
    size_t i = size_t(3 - k + a);
    if (kn[a] < 1 || st[a] < 1 || dl[a] < 1 || pd[a] < 0)
      fail(op, "kernel {}, stride {}, dilation {} must be positive and padding {} not negative", ops_detail::str(kn),
           ops_detail::str(st), ops_detail::str(dl), ops_detail::str(pd));
    // torch's rule: the padding is at most half the (dilated) window, so no window lies in it.
    if (2 * pd[a] > dl[a] * (kn[a] - 1) + 1)
      fail(op, "padding {} must be at most half the kernel {}", ops_detail::str(pd), ops_detail::str(kn));
    g.in[i] = x.shape()[2 + a];
    g.kernel[i] = kn[a], g.stride[i] = st[a], g.pad[i] = pd[a], g.dilation[i] = dl[a];
    g.out[i] = kernels::window_out_size(g.in[i], kn[a], st[a], pd[a], dl[a], ceil_mode);
    if (g.out[i] < 1)
      fail(op, "the window {} (dilation {}) is larger than the padded input {} (padding {})", ops_detail::str(kn),
           ops_detail::str(dl), x.shape().str(), ops_detail::str(pd));
  }
  return g;
}

Shape out_shape(const Tensor& x, const Axes3& out) {
  Shape s{x.shape()[0], x.shape()[1]};
  int k = x.ndim() - 2;
  for (int a = 0; a < k; ++a) s.push_back(out[size_t(3 - k + a)]);
  return s;
}

Axes3 as_axes3(const Tensor& x) {
  Axes3 a{1, 1, 1};
  int k = x.ndim() - 2;
  for (int i = 0; i < k; ++i) a[size_t(3 - k + i)] = x.shape()[2 + i];
  return a;
}

}  // namespace

Tensor avg_pool(const Tensor& x, const Sizes& kernel, const Sizes& stride, const Sizes& padding, bool ceil_mode,
                bool count_include_pad, std::optional<int64_t> divisor_override) {
  OPSCOPE_OP("avg_pool", &x);
  PoolGeometry g = geometry("avg_pool", x, kernel, stride, padding, {1}, ceil_mode);
  if (divisor_override && *divisor_override == 0) fail("avg_pool", "divisor_override must not be 0");
  g.count_include_pad = count_include_pad;
  g.divisor = divisor_override.value_or(0);
  ops_detail::cpu_only("avg_pool", x.device());
  Tensor xc = x.contiguous();
  Tensor out = runtime::allocate(out_shape(x, g.out), x.dtype(), x.device());
  if (out.numel()) runtime::launch(x.device(), cpu_kernels::avg_pool_spec(out, xc, g), {&xc}, {&out});
  return out;
}

std::pair<Tensor, Tensor> max_pool_with_indices(const Tensor& x, const Sizes& kernel, const Sizes& stride,
                                                const Sizes& padding, const Sizes& dilation, bool ceil_mode) {
  OPSCOPE_OP("max_pool", &x);
  PoolGeometry g = geometry("max_pool", x, kernel, stride, padding, dilation, ceil_mode);
  ops_detail::cpu_only("max_pool", x.device());
  Tensor xc = x.contiguous();
  Shape shape = out_shape(x, g.out);
  Tensor out = runtime::allocate(shape, x.dtype(), x.device());
  Tensor idx = runtime::allocate(shape, DType::i64, x.device());
  if (out.numel()) runtime::launch(x.device(), cpu_kernels::max_pool_nd_spec(out, &idx, xc, g), {&xc}, {&out, &idx});
  return {out, idx};
}

Tensor adaptive_avg_pool(const Tensor& x, const Sizes& output_size) {
  OPSCOPE_OP("adaptive_avg_pool", &x);
  int k = ops_detail::spatial_axes("adaptive_avg_pool", x);
  Axes3 os = ops_detail::output_axes("adaptive_avg_pool", output_size, k), in = as_axes3(x);
  for (int a = 0; a < k; ++a)
    if (in[size_t(3 - k + a)] == 0 && os[size_t(3 - k + a)] > 0)
      fail("adaptive_avg_pool", "x has shape {}: an empty spatial axis cannot be pooled to {}", x.shape().str(),
           ops_detail::str(output_size));
  ops_detail::cpu_only("adaptive_avg_pool", x.device());
  Tensor xc = x.contiguous();
  Tensor out = runtime::allocate(out_shape(x, os), x.dtype(), x.device());
  if (out.numel())
    runtime::launch(x.device(), cpu_kernels::adaptive_avg_pool_spec(out, xc, x.shape()[0] * x.shape()[1], in, os),
                    {&xc}, {&out});
  return out;
}

std::pair<Tensor, Tensor> adaptive_max_pool(const Tensor& x, const Sizes& output_size) {
  OPSCOPE_OP("adaptive_max_pool", &x);
  int k = ops_detail::spatial_axes("adaptive_max_pool", x);
  Axes3 os = ops_detail::output_axes("adaptive_max_pool", output_size, k), in = as_axes3(x);
  for (int a = 0; a < k; ++a)
    if (in[size_t(3 - k + a)] == 0 && os[size_t(3 - k + a)] > 0)
      fail("adaptive_max_pool", "x has shape {}: an empty spatial axis cannot be pooled to {}", x.shape().str(),
           ops_detail::str(output_size));
  ops_detail::cpu_only("adaptive_max_pool", x.device());
  Tensor xc = x.contiguous();
  Shape shape = out_shape(x, os);
  Tensor out = runtime::allocate(shape, x.dtype(), x.device());
  Tensor idx = runtime::allocate(shape, DType::i64, x.device());
  if (out.numel())
    runtime::launch(x.device(),
                    cpu_kernels::adaptive_max_pool_spec(out, idx, xc, x.shape()[0] * x.shape()[1], in, os), {&xc},
                    {&out, &idx});
  return {out, idx};
}

}  // namespace opscope
