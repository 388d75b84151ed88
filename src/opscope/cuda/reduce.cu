// Launchers of the reductions (reduce.cuh).
#include <algorithm>

#include "opscope/cuda/check.h"
#include "opscope/cuda/launchers.h"
#include "opscope/cuda/reduce.cuh"

namespace opscope::cuda_impl {

namespace {

constexpr int64_t kMaxGrid = 1 << 20;

template <class T>
void rows_t(int kind, void* out, const void* x, int64_t rows, int64_t len, int64_t correction, cudaStream_t s) {
  const T* xp = static_cast<const T*>(x);
  if (len <= 1024)
    dev::reduce_rows_warp<T><<<unsigned(std::min<int64_t>((rows + 7) / 8, kMaxGrid)), 256, 0, s>>>(kind, out, xp, rows,
                                                                                                   len, correction);
  else
    dev::reduce_rows_block<T><<<unsigned(std::min<int64_t>(rows, kMaxGrid)), 512, 0, s>>>(kind, out, xp, rows, len,
                                                                                        correction);
  OPSCOPE_CUDA_CHECK_LAUNCH();
}

template <class T>
void strided_t(int kind, void* out, const void* x, const Layout& kept, const Layout& red, int64_t correction,
               cudaStream_t s) {
  int64_t nout = 1, nred = 1;
  for (int d = 0; d < kept.ndim; ++d) nout *= kept.shape[d];
  for (int d = 0; d < red.ndim; ++d) nred *= red.shape[d];
  dev::reduce_strided_k<T><<<unsigned(std::min<int64_t>((nout + 255) / 256, kMaxGrid)), 256, 0, s>>>(
      kind, out, static_cast<const T*>(x), nout, nred, kept, red, correction);
  OPSCOPE_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_reduce_rows(int kind, Dt dt, void* out, const void* x, int64_t outer, int64_t len, int64_t correction,
                        cudaStream_t s) {
  switch (dt) {
    case Dt::f32: return rows_t<float>(kind, out, x, outer, len, correction, s);
    case Dt::bf16: return rows_t<dev::bf16>(kind, out, x, outer, len, correction, s);
    case Dt::f16: return rows_t<dev::f16>(kind, out, x, outer, len, correction, s);
    default: throw_cuda_error(cudaErrorInvalidValue, "reduction (integer dtype)");
  }
}

void launch_reduce_strided(int kind, Dt dt, void* out, const void* x, const Layout& kept, const Layout& red,
                           int64_t correction, cudaStream_t s) {
  switch (dt) {
    case Dt::f32: return strided_t<float>(kind, out, x, kept, red, correction, s);
    case Dt::bf16: return strided_t<dev::bf16>(kind, out, x, kept, red, correction, s);
    case Dt::f16: return strided_t<dev::f16>(kind, out, x, kept, red, correction, s);
    default: throw_cuda_error(cudaErrorInvalidValue, "reduction (integer dtype)");
  }
}

}  // namespace opscope::cuda_impl
