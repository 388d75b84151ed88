// NCHW window kernels: im2col (conv2d's columns, multiplied by cuBLAS afterwards) and
// max_pool2d. One thread per output element in a grid-stride loop; both read x through
// the window's index math only, so they are bound by memory.
#pragma once
#include "opscope/cuda/common.cuh"
#include "opscope/kernels/window2d.h"

namespace opscope::cuda_impl::dev {

using kernels::Window2d;

// cols (n, c * kh * kw, oh * ow) — the same memory as (n, groups, K, pixels), since the
// groups split the channels in order — with 0 where the window lies in the padding.
template <class T>
__global__ void im2col_k(T* __restrict__ cols, const T* __restrict__ x, Window2d g, int64_t total) {
  const int64_t P = g.oh * g.ow, taps = g.kh * g.kw;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    int64_t p = e % P, r = (e / P) % (g.c * taps), n = e / (P * g.c * taps);
    int64_t ci = r / taps, ki = (r % taps) / g.kw, kj = r % g.kw;
    int64_t iy = (p / g.ow) * g.sh - g.ph + ki * g.dh, ix = (p % g.ow) * g.sw - g.pw + kj * g.dw;
    bool in = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w;
    cols[e] = in ? x[((n * g.c + ci) * g.h + iy) * g.w + ix] : from_f32<T>(0.0f);
  }
}

// out (n, c, oh, ow) = the window's maximum (a NaN wins; the last NaN is reported);
// idx, when not null, its position iy * w + ix in the input plane, as torch's CPU kernel.
template <class T>
__global__ void max_pool2d_k(T* __restrict__ out, long long* __restrict__ idx, const T* __restrict__ x, Window2d g,
                             int64_t total) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    int64_t ox = e % g.ow, oy = (e / g.ow) % g.oh, plane = e / (g.ow * g.oh);
    const T* xp = x + plane * g.h * g.w;
    float best = -INFINITY;
    int64_t at = -1;
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      int64_t iy = oy * g.sh - g.ph + ki * g.dh;
      if (iy < 0 || iy >= g.h) continue;
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        int64_t ix = ox * g.sw - g.pw + kj * g.dw;
        if (ix < 0 || ix >= g.w) continue;
        float v = to_f32(xp[iy * g.w + ix]);
        if (at < 0) at = iy * g.w + ix;
        if (v > best || v != v) best = v, at = iy * g.w + ix;
      }
    }
    out[e] = at >= 0 ? xp[at] : from_f32<T>(best);
    if (idx) idx[e] = at;
  }
}

}  // namespace opscope::cuda_impl::dev
