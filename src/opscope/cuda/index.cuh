// embedding: out row i = table row idx[i]. A block of 128 threads per output row (grid-
// stride over rows), 128-bit copies when the rows allow. An index outside [0, V) does
// not trap (that would poison the CUDA context): the row is zeroed and the index goes to
// the launch's error slot, which the scheduler reports at the next synchronize.
#pragma once
#include "opscope/cuda/common.cuh"
#include "opscope/cuda/layout.h"

namespace opscope::cuda_impl::dev {

// Whether embedding takes the 128-bit path (host code, shared with the tests): rows a
// whole number of packs long and apart, out and the table 16-byte aligned.
template <class T>
inline bool embedding_vec_ok(const void* out, const void* w, int64_t D, int64_t w_row_stride) {
  constexpr int N = Pack<T>::N;
  return D % N == 0 && w_row_stride % N == 0 && (reinterpret_cast<uintptr_t>(out) & 15) == 0 &&
         (reinterpret_cast<uintptr_t>(w) & 15) == 0;
}

template <class T, class I, bool kVec>
__global__ void embedding_k(T* __restrict__ out, const T* __restrict__ w, const I* __restrict__ idx, int64_t n,
                            int64_t D, int64_t V, int64_t w_row_stride, KernelError* err) {
  constexpr int N = kVec ? Pack<T>::N : 1;
  for (int64_t r = blockIdx.x; r < n; r += gridDim.x) {
    long long k = (long long)idx[r];
    T* o = out + r * D;
    if (k < 0 || k >= V) {
      if (threadIdx.x == 0) {  // plain stores (no atomics on host memory): any one bad index is reported
        err->a = k;
        err->b = V;
        __threadfence_system();
        err->code = 1;
      }
      for (int64_t j = threadIdx.x; j < D; j += blockDim.x) o[j] = from_f32<T>(0.0f);
      continue;
    }
    const T* src = w + k * w_row_stride;
    if (kVec) {
      for (int64_t j = int64_t(threadIdx.x) * N; j < D; j += int64_t(blockDim.x) * N)
        *reinterpret_cast<Pack<T>*>(o + j) = *reinterpret_cast<const Pack<T>*>(src + j);
    } else {
      for (int64_t j = threadIdx.x; j < D; j += blockDim.x) o[j] = src[j];
    }
  }
}

}  // namespace opscope::cuda_impl::dev
