// Launcher of embedding (index.cuh).
#include <algorithm>

#include "opscope/cuda/check.h"
#include "opscope/cuda/index.cuh"
#include "opscope/cuda/launchers.h"

namespace opscope::cuda_impl {

namespace {

template <class T, class I>
void embedding_t(void* out, const void* w, const void* idx, int64_t n, int64_t D, int64_t V, int64_t ws,
                 KernelError* err, cudaStream_t s) {
  unsigned grid = unsigned(std::min<int64_t>(n, 1 << 20));
  bool vec = dev::embedding_vec_ok<T>(out, w, D, ws);
  auto* o = static_cast<T*>(out);
  auto* wp = static_cast<const T*>(w);
  auto* ip = static_cast<const I*>(idx);
  if (vec) dev::embedding_k<T, I, true><<<grid, 128, 0, s>>>(o, wp, ip, n, D, V, ws, err);
  else dev::embedding_k<T, I, false><<<grid, 128, 0, s>>>(o, wp, ip, n, D, V, ws, err);
  OPSCOPE_CUDA_CHECK_LAUNCH();
}

template <class T>
void embedding_i(int idx_bytes, void* out, const void* w, const void* idx, int64_t n, int64_t D, int64_t V,
                 int64_t ws, KernelError* err, cudaStream_t s) {
  if (idx_bytes == 4) embedding_t<T, int32_t>(out, w, idx, n, D, V, ws, err, s);
  else embedding_t<T, long long>(out, w, idx, n, D, V, ws, err, s);
}

}  // namespace

void launch_embedding(Dt dt, void* out, const void* w, const void* idx, int idx_bytes, int64_t n, int64_t D,
                      int64_t V, int64_t w_row_stride, KernelError* err, cudaStream_t s) {
  if (n == 0 || D == 0) return;
  switch (dt) {
    case Dt::f32: return embedding_i<float>(idx_bytes, out, w, idx, n, D, V, w_row_stride, err, s);
    case Dt::bf16: return embedding_i<dev::bf16>(idx_bytes, out, w, idx, n, D, V, w_row_stride, err, s);
    case Dt::f16: return embedding_i<dev::f16>(idx_bytes, out, w, idx, n, D, V, w_row_stride, err, s);
    default: throw_cuda_error(cudaErrorInvalidValue, "embedding (integer table)");
  }
}

}  // namespace opscope::cuda_impl
