// LaunchSpecs of the NCHW window kernels (window.cu), with the CPU kernels' names.
#include <fmt/format.h>

#include "opscope/core/error.h"
#include "opscope/cuda/cuda_device.h"
#include "opscope/cuda/kernels.h"
#include "opscope/cuda/launchers.h"

namespace opscope::cuda_kernels {

LaunchSpec im2col_spec(const Tensor& cols, const Tensor& x, const kernels::Window2d& g) {
  LaunchSpec spec;
  spec.name = fmt::format("im2col_{}", dtype_name(x.dtype()));
  spec.bytes = x.nbytes() + cols.nbytes();
  void* c = cols.data_ptr();
  const void* xp = x.data_ptr();
  auto dt = cuda_impl::Dt(int(x.dtype()));
  spec.body = [=](int64_t, int64_t) { cuda_impl::launch_im2col(dt, c, xp, g, cuda_impl::current_stream()); };
  return spec;
}

LaunchSpec max_pool2d_spec(const Tensor& out, const Tensor* indices, const Tensor& x, const kernels::Window2d& g) {
  LaunchSpec spec;
  spec.name = fmt::format("max_pool2d_{}", dtype_name(x.dtype()));
  spec.bytes = x.nbytes() + out.nbytes() + (indices ? indices->nbytes() : 0);
  spec.flops = out.numel() * g.kh * g.kw;
  void* o = out.data_ptr();
  int64_t* idx = indices ? indices->data<int64_t>() : nullptr;
  const void* xp = x.data_ptr();
  auto dt = cuda_impl::Dt(int(x.dtype()));
  spec.body = [=](int64_t, int64_t) { cuda_impl::launch_max_pool2d(dt, o, idx, xp, g, cuda_impl::current_stream()); };
  return spec;
}

}  // namespace opscope::cuda_kernels
