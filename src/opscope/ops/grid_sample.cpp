// grid_sample: torch's grid_sampler_2d as one launch, a work unit per row of output points
// (kernels/cpu/grid_sample).
#include "opscope/core/error.h"
#include "opscope/kernels/cpu/grid_sample.h"
#include "opscope/kernels/dispatch.h"
#include "opscope/ops/spatial.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/runtime.h"

namespace opscope {

Tensor grid_sample(const Tensor& x, const Tensor& grid, GridSampleMode mode, GridSamplePadding padding,
                   bool align_corners) {
  OPSCOPE_OP("grid_sample", &x, &grid);
  if (!x.defined() || !grid.defined()) fail("grid_sample", "x or grid is undefined (default-constructed)");
  if (x.ndim() != 4 || grid.ndim() != 4 || grid.shape()[3] != 2 || grid.shape()[0] != x.shape()[0])
    fail("grid_sample", "x must be (N, C, H, W) and grid (N, Ho, Wo, 2) with the same N; got {} and {}",
         x.shape().str(), grid.shape().str());
  if (!is_floating(x.dtype()) || x.dtype() != grid.dtype())
    fail("grid_sample", "x and grid must share a floating dtype; got {} and {}", dtype_name(x.dtype()),
         dtype_name(grid.dtype()));
  if (&x.device() != &grid.device())
    fail("grid_sample", "x is on {} but grid is on {}", x.device().name(), grid.device().name());
  if (x.shape()[2] < 1 || x.shape()[3] < 1) fail("grid_sample", "x {} has an empty spatial axis", x.shape().str());
  ops_detail::cpu_only("grid_sample", x.device());
  Tensor xc = x.contiguous(), gc = grid.contiguous();
  Tensor out = runtime::allocate({x.shape()[0], x.shape()[1], grid.shape()[1], grid.shape()[2]}, x.dtype(), x.device());
  auto m = mode == GridSampleMode::nearest ? cpu_kernels::GridInterp::nearest : cpu_kernels::GridInterp::bilinear;
  auto p = padding == GridSamplePadding::border       ? cpu_kernels::GridPadding::border
           : padding == GridSamplePadding::reflection ? cpu_kernels::GridPadding::reflection
                                                      : cpu_kernels::GridPadding::zeros;
  if (out.numel()) runtime::launch(x.device(), cpu_kernels::grid_sample_spec(out, xc, gc, m, p, align_corners), {&xc, &gc}, {&out});
  return out;
}

}  // namespace opscope
