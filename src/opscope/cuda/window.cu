// Launchers of im2col and max_pool2d (window.cuh).
#include "opscope/cuda/check.h"
#include "opscope/cuda/launchers.h"
#include "opscope/cuda/window.cuh"

namespace opscope::cuda_impl {

namespace {

constexpr int kThreads = 256;

unsigned grid_for(int64_t work) { return cuda_impl::grid_for(work, kThreads); }

template <class T>
void im2col_t(void* cols, const void* x, const kernels::Window2d& g, cudaStream_t s) {
  int64_t total = g.n * g.c * g.kh * g.kw * g.oh * g.ow;
  dev::im2col_k<T><<<grid_for(total), kThreads, 0, s>>>(static_cast<T*>(cols), static_cast<const T*>(x), g, total);
  OPSCOPE_CUDA_CHECK_LAUNCH();
}

template <class T>
void max_pool2d_t(void* out, int64_t* idx, const void* x, const kernels::Window2d& g, cudaStream_t s) {
  int64_t total = g.n * g.c * g.oh * g.ow;
  dev::max_pool2d_k<T><<<grid_for(total), kThreads, 0, s>>>(static_cast<T*>(out), reinterpret_cast<long long*>(idx),
                                                          static_cast<const T*>(x), g, total);
  OPSCOPE_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_im2col(Dt dt, void* cols, const void* x, const kernels::Window2d& g, cudaStream_t s) {
  switch (dt) {
    case Dt::f32: return im2col_t<float>(cols, x, g, s);
    case Dt::bf16: return im2col_t<dev::bf16>(cols, x, g, s);
    case Dt::f16: return im2col_t<dev::f16>(cols, x, g, s);
    default: throw_cuda_error(cudaErrorInvalidValue, "im2col (integer dtype)");
  }
}

void launch_max_pool2d(Dt dt, void* out, int64_t* idx, const void* x, const kernels::Window2d& g, cudaStream_t s) {
  switch (dt) {
    case Dt::f32: return max_pool2d_t<float>(out, idx, x, g, s);
    case Dt::bf16: return max_pool2d_t<dev::bf16>(out, idx, x, g, s);
    case Dt::f16: return max_pool2d_t<dev::f16>(out, idx, x, g, s);
    default: throw_cuda_error(cudaErrorInvalidValue, "max_pool2d (integer dtype)");
  }
}

}  // namespace opscope::cuda_impl
