// conv: convolution over 1, 2 or 3 spatial axes, transposed or not. 2-d forward is conv2d
// (CPU and CUDA kernels); 1-d forward is conv2d over (N, C, 1, L); 3-d forward and every
// transposed convolution run kernels/cpu/conv_nd. bf16/f16 compute in f32, rounded once.
#include "opscope/core/error.h"
#include "opscope/kernels/cpu/conv_nd.h"
#include "opscope/kernels/dispatch.h"
#include "opscope/ops/ops.h"
#include "opscope/ops/spatial.h"
#include "opscope/ops/spatial_args.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/runtime.h"

namespace opscope {

namespace {

using cpu_kernels::ConvGeometry;

void check_operands(const Tensor& x, const Tensor& w, const Tensor& bias, int k) {
  if (!w.defined()) fail("conv", "weight is undefined (a default-constructed Tensor)");
  for (const Tensor* t : {&w, &bias}) {
    if (!t->defined()) continue;
    const char* what = t == &w ? "weight" : "bias";
    if (&t->device() != &x.device()) fail("conv", "{} is on {} but x is on {}", what, t->device().name(), x.device().name());
    if (t->dtype() != x.dtype())
      fail("conv", "{} has dtype {} but x has dtype {} (convert with .to())", what, dtype_name(t->dtype()),
           dtype_name(x.dtype()));
  }
  if (w.ndim() != k + 2)
    fail("conv", "weight has shape {}; for x of shape {} it must have {} dims", w.shape().str(), x.shape().str(), k + 2);
}

ConvGeometry geometry(const Tensor& x, const Tensor& w, const Tensor& bias, const Sizes& stride, const Sizes& padding,
                      const Sizes& dilation, int64_t groups, bool transposed, const Sizes& output_padding, int k) {
  Sizes st = ops_detail::per_axis("conv", "stride", stride, k), pd = ops_detail::per_axis("conv", "padding", padding, k);
  Sizes dl = ops_detail::per_axis("conv", "dilation", dilation, k);
  Sizes op = ops_detail::per_axis("conv", "output_padding", output_padding, k);
  ConvGeometry g;
  g.spatial = k;
  g.n = x.shape()[0], g.c = x.shape()[1], g.groups = groups;
  if (groups < 1) fail("conv", "groups is {}; it must be at least 1", groups);
  g.oc = transposed ? w.shape()[1] * groups : w.shape()[0];
  int64_t w_in = transposed ? w.shape()[0] : w.shape()[1] * groups;
  if (g.c % groups || g.oc % groups || w_in != g.c)
    fail("conv", "x {} and weight {} with groups {}: the weight's input channels must be C{}", x.shape().str(),
         w.shape().str(), groups, transposed ? " (dim 0)" : " / groups (dim 1)");
  if (bias.defined() && (bias.ndim() != 1 || bias.shape()[0] != g.oc))
    fail("conv", "bias has shape {}; it must be ({}), one per output channel", bias.shape().str(), g.oc);
  for (int a = 0; a < k; ++a) {
    size_t i = size_t(3 - k + a);
    int64_t in = x.shape()[2 + a], kn = w.shape()[2 + a];
    if (st[a] < 1 || dl[a] < 1 || pd[a] < 0 || op[a] < 0 || kn < 1)
      fail("conv", "stride {} and dilation {} must be positive, padding {} and output_padding {} not negative, the "
           "kernel {} not empty", ops_detail::str(st), ops_detail::str(dl), ops_detail::str(pd), ops_detail::str(op),
           w.shape().str());
    if (transposed && op[a] >= st[a] && op[a] >= dl[a])
      fail("conv", "output_padding {} must be smaller than either stride {} or dilation {}", ops_detail::str(op),
           ops_detail::str(st), ops_detail::str(dl));
    g.in[i] = in, g.kernel[i] = kn, g.stride[i] = st[a], g.pad[i] = pd[a], g.dilation[i] = dl[a];
    g.out[i] = transposed ? (in - 1) * st[a] - 2 * pd[a] + dl[a] * (kn - 1) + op[a] + 1
                          : (in + 2 * pd[a] - dl[a] * (kn - 1) - 1) / st[a] + 1;
    if (g.out[i] < 1 || (!transposed && in + 2 * pd[a] < dl[a] * (kn - 1) + 1))
      fail("conv", "x {} is too small for the kernel {} (padding {}, dilation {}): the output would be empty",
           x.shape().str(), w.shape().str(), ops_detail::str(pd), ops_detail::str(dl));
  }
  return g;
}

}  // namespace

Tensor conv(const Tensor& x, const Tensor& weight, const Tensor& bias, const Sizes& stride, const Sizes& padding,
            const Sizes& dilation, int64_t groups, bool transposed, const Sizes& output_padding) {
  OPSCOPE_OP("conv", &x, &weight, &bias);
  int k = ops_detail::spatial_axes("conv", x);
  check_operands(x, weight, bias, k);
  ConvGeometry g = geometry(x, weight, bias, stride, padding, dilation, groups, transposed, output_padding, k);
  if (!transposed && k == 2) {
    return conv2d(x, weight, bias, {g.stride[1], g.stride[2]}, {g.pad[1], g.pad[2]}, {g.dilation[1], g.dilation[2]},
                  groups);
  }
  if (!transposed && k == 1) {  // a 2-d convolution over (N, C, 1, L)
    Tensor b = bias.defined() ? bias : Tensor();
    return conv2d(x.unsqueeze(2), weight.unsqueeze(2), b, {1, g.stride[2]}, {0, g.pad[2]}, {1, g.dilation[2]}, groups)
        .squeeze(2);
  }
  ops_detail::cpu_only("conv", x.device());
  DType dt = x.dtype();
  Tensor xc = x.contiguous().to(DType::f32), wc = weight.contiguous().to(DType::f32);
  Tensor bc = bias.defined() ? bias.contiguous().to(DType::f32) : Tensor();
  Shape shape{g.n, g.oc};
  for (int a = 0; a < k; ++a) shape.push_back(g.out[size_t(3 - k + a)]);
  Tensor out = runtime::allocate(shape, DType::f32, x.device());
  if (out.numel() == 0) return out.to(dt);
  if (g.cg() == 0 || g.n == 0) {  // no input channels: an empty sum
    kernels::launch_fill(out, 0.0);
    if (bc.defined()) {
      Shape per_channel{g.oc};
      for (int a = 0; a < k; ++a) per_channel.push_back(1);
      out = add(out, bc.reshape(per_channel));
    }
    return out.to(dt);
  }
  LaunchSpec spec = transposed ? cpu_kernels::conv_transpose_spec(out, xc, wc, bc.defined() ? &bc : nullptr, g)
                               : cpu_kernels::conv3d_spec(out, xc, wc, bc.defined() ? &bc : nullptr, g);
  if (bc.defined()) runtime::launch(x.device(), std::move(spec), {&xc, &wc, &bc}, {&out});
  else runtime::launch(x.device(), std::move(spec), {&xc, &wc}, {&out});
  return out.to(dt);
}

}  // namespace opscope
