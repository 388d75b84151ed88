// Reductions: sum, mean, max, min, var, argmax. Last-axis rows: a warp per row up to
// 1024 elements, a block per row above. Anything else: a thread per output element over
// the reduced dims (consecutive outputs read consecutive columns, so sums over outer
// axes stay coalesced). f32 accumulation; var in two passes; NaN wins max/min/argmax.
#pragma once
#include "opscope/cuda/common.cuh"
#include "opscope/cuda/layout.h"

namespace opscope::cuda_impl::dev {

enum : int { kSum, kMean, kMax, kMin, kVar, kArgmax };

// A running extreme with its index: NaN sticks, ties keep the smaller index.
struct Extreme {
  float v;
  long long i;
};
template <bool kMaxSide>
__device__ __forceinline__ Extreme pick(Extreme a, Extreme b) {
  if (a.v != a.v) return (b.v != b.v && b.i < a.i) ? b : a;
  if (b.v != b.v) return b;
  if (kMaxSide ? b.v > a.v : b.v < a.v) return b;
  if (b.v == a.v && b.i < a.i) return b;
  return a;
}
template <bool kMaxSide>
__device__ __forceinline__ Extreme warp_pick(Extreme e) {
  for (int o = kWarp / 2; o > 0; o /= 2) {
    Extreme other{__shfl_xor_sync(0xffffffffu, e.v, o), __shfl_xor_sync(0xffffffffu, e.i, o)};
    e = pick<kMaxSide>(e, other);
  }
  return e;
}

// The row (or strided) walk: `at(k)` gives element k of the reduced extent as f32.
// Lanes t = lane0, lane0 + step, ... of n; returns this thread's partial.
template <class At>
__device__ __forceinline__ float part_sum(At at, int64_t t, int64_t step, int64_t n) {
  float s = 0.0f;
  for (int64_t k = t; k < n; k += step) s += at(k);
  return s;
}
template <class At>
__device__ __forceinline__ float part_sqdev(At at, int64_t t, int64_t step, int64_t n, float mu) {
  float s = 0.0f;
  for (int64_t k = t; k < n; k += step) {
    float d = at(k) - mu;
    s += d * d;
  }
  return s;
}
template <bool kMaxSide, class At>
__device__ __forceinline__ Extreme part_extreme(At at, int64_t t, int64_t step, int64_t n) {
  Extreme e{kMaxSide ? -INFINITY : INFINITY, (long long)n};
  for (int64_t k = t; k < n; k += step) e = pick<kMaxSide>(e, Extreme{at(k), (long long)k});
  return e;
}

// Writes the result of one output: warp- or block-wide combining done by `combine_*`.
template <class T>
__device__ __forceinline__ void write_out(int kind, void* out, int64_t o, float v, long long idx) {
  if (kind == kArgmax) static_cast<long long*>(out)[o] = idx;
  else static_cast<T*>(out)[o] = from_f32<T>(v);
}

__device__ __forceinline__ float var_div(int64_t n, int64_t correction) {
  int64_t d = n - correction;
  return d > 0 ? float(d) : NAN;
}

// A warp per row of `len` contiguous elements.
template <class T>
__global__ void __launch_bounds__(256) reduce_rows_warp(int kind, void* out, const T* __restrict__ x, int64_t rows,
                                                        int64_t len, int64_t correction) {
  int lane = threadIdx.x % kWarp;
  for (int64_t r = int64_t(blockIdx.x) * 8 + threadIdx.x / kWarp; r < rows; r += int64_t(gridDim.x) * 8) {
    const T* xr = x + r * len;
    auto at = [&](int64_t k) { return to_f32(xr[k]); };
    float v = 0.0f;
    long long idx = 0;
    if (kind == kSum || kind == kMean || kind == kVar) {
      float s = warp_sum(part_sum(at, lane, kWarp, len));
      v = kind == kSum ? s : s / float(len);
      if (kind == kVar) v = warp_sum(part_sqdev(at, lane, kWarp, len, v)) / var_div(len, correction);
    } else if (kind == kMin) {
      Extreme e = warp_pick<false>(part_extreme<false>(at, lane, kWarp, len));
      v = e.v;
    } else {
      Extreme e = warp_pick<true>(part_extreme<true>(at, lane, kWarp, len));
      v = e.v;
      idx = e.i;
    }
    if (lane == 0) write_out<T>(kind, out, r, v, idx);
  }
}

// A block per row.
template <class T>
__global__ void __launch_bounds__(512) reduce_rows_block(int kind, void* out, const T* __restrict__ x, int64_t rows,
                                                         int64_t len, int64_t correction) {
  __shared__ float scratch[32];
  __shared__ Extreme ext[32];
  int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, nwarps = blockDim.x / kWarp;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * len;
    auto at = [&](int64_t k) { return to_f32(xr[k]); };
    float v = 0.0f;
    long long idx = 0;
    if (kind == kSum || kind == kMean || kind == kVar) {
      float s = block_reduce<false>(part_sum(at, threadIdx.x, blockDim.x, len), scratch);
      v = kind == kSum ? s : s / float(len);
      if (kind == kVar)
        v = block_reduce<false>(part_sqdev(at, threadIdx.x, blockDim.x, len, v), scratch) / var_div(len, correction);
    } else {
      bool mx = kind != kMin;
      Extreme e = mx ? warp_pick<true>(part_extreme<true>(at, threadIdx.x, blockDim.x, len))
                     : warp_pick<false>(part_extreme<false>(at, threadIdx.x, blockDim.x, len));
      __syncthreads();
      if (lane == 0) ext[warp] = e;
      __syncthreads();
      Extreme w = lane < nwarps ? ext[lane] : Extreme{mx ? -INFINITY : INFINITY, (long long)len};
      e = mx ? warp_pick<true>(w) : warp_pick<false>(w);
      v = e.v;
      idx = e.i;
    }
    if (threadIdx.x == 0) write_out<T>(kind, out, r, v, idx);
  }
}

// A thread per output element: kept (operand 1 strides: x) gives the output's base in
// x, red the reduced dims.
template <class T>
__global__ void reduce_strided_k(int kind, void* out, const T* __restrict__ x, int64_t nout, int64_t nred, Layout kept,
                                 Layout red, int64_t correction) {
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < nout; o += int64_t(gridDim.x) * blockDim.x) {
    int64_t base = 0, rem = o;
    for (int d = kept.ndim - 1; d >= 0; --d) {
      base += (rem % kept.shape[d]) * kept.stride[1][d];
      rem /= kept.shape[d];
    }
    auto at = [&](int64_t k) {
      int64_t off = base;
      for (int d = red.ndim - 1; d >= 0; --d) {
        off += (k % red.shape[d]) * red.stride[1][d];
        k /= red.shape[d];
      }
      return to_f32(x[off]);
    };
    float v = 0.0f;
    long long idx = 0;
    if (kind == kSum || kind == kMean || kind == kVar) {
      float s = part_sum(at, 0, 1, nred);
      v = kind == kSum ? s : s / float(nred);
      if (kind == kVar) v = part_sqdev(at, 0, 1, nred, v) / var_div(nred, correction);
    } else {
      Extreme e = kind == kMin ? part_extreme<false>(at, 0, 1, nred) : part_extreme<true>(at, 0, 1, nred);
      v = e.v;
      idx = e.i;
    }
    write_out<T>(kind, out, o, v, idx);
  }
}

}  // namespace opscope::cuda_impl::dev
