// interpolate: torch's upsample_{nearest,nearest_exact,linear,bilinear,trilinear,bicubic}
// as one launch, a work unit per (n, c) plane (kernels/cpu/interpolate).
#include "opscope/core/error.h"
#include "opscope/kernels/cpu/interpolate.h"
#include "opscope/kernels/dispatch.h"
#include "opscope/ops/spatial.h"
#include "opscope/ops/spatial_args.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/runtime.h"

namespace opscope {

namespace {

cpu_kernels::InterpMode kernel_mode(Interpolation m) {
  switch (m) {
    case Interpolation::nearest: return cpu_kernels::InterpMode::nearest;
    case Interpolation::nearest_exact: return cpu_kernels::InterpMode::nearest_exact;
    case Interpolation::linear: return cpu_kernels::InterpMode::linear;
    case Interpolation::cubic: return cpu_kernels::InterpMode::cubic;
  }
  return cpu_kernels::InterpMode::nearest;
}

}  // namespace

Tensor interpolate(const Tensor& x, const Sizes& output_size, Interpolation mode, bool align_corners,
                   const std::vector<std::optional<double>>& scales) {
  OPSCOPE_OP("interpolate", &x);
  int k = ops_detail::spatial_axes("interpolate", x);
  if (mode == Interpolation::cubic && k != 2)
    fail("interpolate", "cubic interpolation takes 2 spatial axes (N, C, H, W); x has shape {}", x.shape().str());
  if (!scales.empty() && scales.size() != size_t(k))
    fail("interpolate", "{} scales given for {} spatial axes", scales.size(), k);
  cpu_kernels::InterpGeometry g;
  g.planes = x.shape()[0] * x.shape()[1];
  g.axes = k;
  g.align_corners = align_corners;
  g.out = ops_detail::output_axes("interpolate", output_size, k);
  for (int a = 0; a < k; ++a) {
    size_t i = size_t(3 - k + a);
    g.in[i] = x.shape()[2 + a];
    if (g.in[i] < 1 || g.out[i] < 1)
      fail("interpolate", "input {} and output {} sizes must be greater than 0", x.shape().str(),
           ops_detail::str(output_size));
    if (!scales.empty()) g.scales[i] = scales[size_t(a)];
  }
  ops_detail::cpu_only("interpolate", x.device());
  Tensor xc = x.contiguous();
  Shape shape{x.shape()[0], x.shape()[1]};
  for (int a = 0; a < k; ++a) shape.push_back(g.out[size_t(3 - k + a)]);
  Tensor out = runtime::allocate(shape, x.dtype(), x.device());
  if (out.numel()) runtime::launch(x.device(), cpu_kernels::interpolate_spec(kernel_mode(mode), out, xc, g), {&xc}, {&out});
  return out;
}

}  // namespace opscope
