// Fused row kernels: rms_norm, layer_norm, softmax over contiguous rows of `cols`.
// Rows of up to kWarpRowMax elements: a warp per row, the row held in registers (one
// read of x); rows of up to kRegRowBlock * kRegRowMaxChunks packs (rms_norm and
// layer_norm, 128-bit path): a block per row, the row held in registers (`*_regs`);
// longer rows: a block per row, re-reading x from L1/L2 between passes.
// kVec: 128-bit loads and stores (the caller checked alignment and cols % Pack::N == 0).
// Math in f32 for every element type.
#pragma once
#include "opscope/cuda/common.cuh"

namespace opscope::cuda_impl::dev {

constexpr int kWarpRowMax = 1024;
constexpr int kRowWarpsPerBlock = 8;  // warp-per-row kernels: 256 threads, 8 rows
constexpr int kRowBlock = 512;        // block-per-row kernels
constexpr int kRegRowBlock = 256;     // register-row kernels: threads per row
constexpr int kRegRowMaxChunks = 16;  // 16-byte packs per thread at most (64 f32 registers)

// How many 16-byte chunks each of kRegRowBlock threads holds for a row of `cols`
// elements of `elem_bytes` (1, 2, 4, 8 or 16 chunks: templates are built for these), or 0 when the
// row is for another form: short enough for a warp, too long for registers, or not a
// whole number of packs. Host code, shared with the tests. On the H200 these rows ran at
// 0.83-0.97 of cudaMemcpy where the two-pass block kernel ran at 0.58-0.91.
inline int reg_row_chunks(int64_t cols, int elem_bytes) {
  int n = 16 / elem_bytes;
  if (cols <= kWarpRowMax || cols % n != 0) return 0;
  int64_t packs = cols / n;
  for (int k = 1; k <= kRegRowMaxChunks; k *= 2)
    if (packs <= int64_t(k) * kRegRowBlock) return k;
  return 0;
}

// This thread's chunks of a row into p (element (k * kRegRowBlock + thread) * N + j);
// chunks past the row's end are left as they are and never read.
template <class T, int K>
__device__ __forceinline__ void load_row_regs(const T* __restrict__ xr, int64_t cols, Pack<T>* p) {
  constexpr int N = Pack<T>::N;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    int64_t i = (int64_t(k) * kRegRowBlock + threadIdx.x) * N;
    if (i < cols) p[k] = load_once(xr + i);
  }
}

// Writes f(x value, column) for this thread's chunks of the row.
template <class T, int K, class F>
__device__ __forceinline__ void store_row_regs(T* __restrict__ yr, int64_t cols, const Pack<T>* p, F f) {
  constexpr int N = Pack<T>::N;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    int64_t i = (int64_t(k) * kRegRowBlock + threadIdx.x) * N;
    if (i >= cols) continue;
    Pack<T> o;
#pragma unroll
    for (int j = 0; j < N; ++j) o.v[j] = from_f32<T>(f(to_f32(p[k].v[j]), i + j));
    store_once(yr + i, o);
  }
}

// Writes f(x value, weight) with the weights read 16 bytes at a time (w 16-byte aligned):
// on the H200, rms_norm bf16 16384x8192 at 0.96 of cudaMemcpy, 0.93 reading w by element.
template <class T, int K, class F>
__device__ __forceinline__ void store_row_regs_w(T* __restrict__ yr, int64_t cols, const Pack<T>* p,
                                                 const T* __restrict__ w, F f) {
  constexpr int N = Pack<T>::N;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    int64_t i = (int64_t(k) * kRegRowBlock + threadIdx.x) * N;
    if (i >= cols) continue;
    Pack<T> wp = *reinterpret_cast<const Pack<T>*>(w + i), o;
#pragma unroll
    for (int j = 0; j < N; ++j) o.v[j] = from_f32<T>(f(to_f32(p[k].v[j]), to_f32(wp.v[j])));
    store_once(yr + i, o);
  }
}

// Sum over this thread's chunks of g(x value).
template <class T, int K, class G>
__device__ __forceinline__ float sum_row_regs(int64_t cols, const Pack<T>* p, G g) {
  constexpr int N = Pack<T>::N;
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    int64_t i = (int64_t(k) * kRegRowBlock + threadIdx.x) * N;
    if (i >= cols) continue;
#pragma unroll
    for (int j = 0; j < N; ++j) s += g(to_f32(p[k].v[j]));
  }
  return s;
}

// Loads this lane's part of a row (element c*32*N + lane*N + j for chunk c) into v as
// f32; missing elements are 0.
template <class T, bool kVec, int kChunks>
__device__ __forceinline__ void load_row(const T* __restrict__ x, int64_t cols, int lane, float* v) {
  constexpr int N = kVec ? Pack<T>::N : 1;
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    int64_t base = (int64_t(c) * kWarp + lane) * N;
    if (kVec) {
      if (base < cols) {
        Pack<T> p = *reinterpret_cast<const Pack<T>*>(x + base);
#pragma unroll
        for (int j = 0; j < N; ++j) v[c * N + j] = to_f32(p.v[j]);
      } else {
#pragma unroll
        for (int j = 0; j < N; ++j) v[c * N + j] = 0.0f;
      }
    } else {
      v[c] = base < cols ? to_f32(x[base]) : 0.0f;
    }
  }
}

// Writes f(value, column) for this lane's part of the row.
template <class T, bool kVec, int kChunks, class F>
__device__ __forceinline__ void store_row(T* __restrict__ y, int64_t cols, int lane, const float* v, F f) {
  constexpr int N = kVec ? Pack<T>::N : 1;
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    int64_t base = (int64_t(c) * kWarp + lane) * N;
    if (base >= cols) continue;
    if (kVec) {
      Pack<T> p;
#pragma unroll
      for (int j = 0; j < N; ++j) p.v[j] = from_f32<T>(f(v[c * N + j], base + j));
      *reinterpret_cast<Pack<T>*>(y + base) = p;
    } else {
      y[base] = from_f32<T>(f(v[c], base));
    }
  }
}

template <class T, bool kVec>
struct WarpRow {
  static constexpr int N = kVec ? Pack<T>::N : 1;
  static constexpr int kChunks = kWarpRowMax / (kWarp * N);
};

// ---- rms_norm: y = x * rsqrt(mean(x^2) + eps) * w (w may be null) ----
template <class T, bool kVec>
__global__ void __launch_bounds__(256) rms_norm_warp(T* __restrict__ y, const T* __restrict__ x,
                                                     const T* __restrict__ w, int64_t rows, int64_t cols, float eps) {
  constexpr int K = WarpRow<T, kVec>::kChunks, N = WarpRow<T, kVec>::N;
  int lane = threadIdx.x % kWarp;
  for (int64_t r = int64_t(blockIdx.x) * kRowWarpsPerBlock + threadIdx.x / kWarp; r < rows;
       r += int64_t(gridDim.x) * kRowWarpsPerBlock) {
    float v[K * N];
    load_row<T, kVec, K>(x + r * cols, cols, lane, v);
    float ss = 0.0f;
#pragma unroll
    for (int i = 0; i < K * N; ++i) ss += v[i] * v[i];
    float inv = rsqrtf(warp_sum(ss) / float(cols) + eps);
    store_row<T, kVec, K>(y + r * cols, cols, lane, v,
                          [&](float a, int64_t c) { return w ? a * inv * to_f32(w[c]) : a * inv; });
  }
}

template <class T, bool kVec>
__global__ void __launch_bounds__(kRowBlock) rms_norm_block(T* __restrict__ y, const T* __restrict__ x,
                                                            const T* __restrict__ w, int64_t rows, int64_t cols,
                                                            float eps) {
  __shared__ float scratch[32];
  constexpr int N = kVec ? Pack<T>::N : 1;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    float ss = 0.0f;
    for (int64_t i = int64_t(threadIdx.x) * N; i < cols; i += int64_t(blockDim.x) * N) {
      if (kVec) {
        Pack<T> p = *reinterpret_cast<const Pack<T>*>(xr + i);
#pragma unroll
        for (int j = 0; j < N; ++j) ss += to_f32(p.v[j]) * to_f32(p.v[j]);
      } else {
        float a = to_f32(xr[i]);
        ss += a * a;
      }
    }
    float inv = rsqrtf(block_reduce<false>(ss, scratch) / float(cols) + eps);
    for (int64_t i = int64_t(threadIdx.x) * N; i < cols; i += int64_t(blockDim.x) * N) {
      if (kVec) {
        Pack<T> p = *reinterpret_cast<const Pack<T>*>(xr + i), o;
#pragma unroll
        for (int j = 0; j < N; ++j) o.v[j] = from_f32<T>(to_f32(p.v[j]) * inv * (w ? to_f32(w[i + j]) : 1.0f));
        *reinterpret_cast<Pack<T>*>(yr + i) = o;
      } else {
        yr[i] = from_f32<T>(to_f32(xr[i]) * inv * (w ? to_f32(w[i]) : 1.0f));
      }
    }
  }
}

template <class T, int K>
__global__ void __launch_bounds__(kRegRowBlock) rms_norm_regs(T* __restrict__ y, const T* __restrict__ x,
                                                               const T* __restrict__ w, int64_t rows, int64_t cols,
                                                               float eps) {
  __shared__ float scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    Pack<T> p[K];
    load_row_regs<T, K>(x + r * cols, cols, p);
    float ss = sum_row_regs<T, K>(cols, p, [](float a) { return a * a; });
    float inv = rsqrtf(block_reduce<false>(ss, scratch) / float(cols) + eps);
    if (w) store_row_regs_w<T, K>(y + r * cols, cols, p, w, [&](float a, float wc) { return a * inv * wc; });
    else store_row_regs<T, K>(y + r * cols, cols, p, [&](float a, int64_t) { return a * inv; });
  }
}

// ---- layer_norm: y = (x - mean) * rsqrt(var + eps) * w + b (biased var; w, b may be null) ----
template <class T, bool kVec>
__global__ void __launch_bounds__(256) layer_norm_warp(T* __restrict__ y, const T* __restrict__ x,
                                                       const T* __restrict__ w, const T* __restrict__ b,
                                                       int64_t rows, int64_t cols, float eps) {
  constexpr int K = WarpRow<T, kVec>::kChunks, N = WarpRow<T, kVec>::N;
  int lane = threadIdx.x % kWarp;
  for (int64_t r = int64_t(blockIdx.x) * kRowWarpsPerBlock + threadIdx.x / kWarp; r < rows;
       r += int64_t(gridDim.x) * kRowWarpsPerBlock) {
    float v[K * N];
    load_row<T, kVec, K>(x + r * cols, cols, lane, v);
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < K * N; ++i) s += v[i];
    float mu = warp_sum(s) / float(cols);
    float sq = 0.0f;
#pragma unroll
    for (int c = 0; c < K; ++c)
#pragma unroll
      for (int j = 0; j < N; ++j)
        if ((int64_t(c) * kWarp + lane) * N + j < cols) sq += (v[c * N + j] - mu) * (v[c * N + j] - mu);
    float inv = rsqrtf(warp_sum(sq) / float(cols) + eps);
    store_row<T, kVec, K>(y + r * cols, cols, lane, v, [&](float a, int64_t c) {
      float o = (a - mu) * inv;
      if (w) o *= to_f32(w[c]);
      if (b) o += to_f32(b[c]);
      return o;
    });
  }
}

template <class T, bool kVec>
__global__ void __launch_bounds__(kRowBlock) layer_norm_block(T* __restrict__ y, const T* __restrict__ x,
                                                              const T* __restrict__ w, const T* __restrict__ b,
                                                              int64_t rows, int64_t cols, float eps) {
  __shared__ float scratch[32];
  constexpr int N = kVec ? Pack<T>::N : 1;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    float s = 0.0f;
    for (int64_t i = int64_t(threadIdx.x) * N; i < cols; i += int64_t(blockDim.x) * N) {
      if (kVec) {
        Pack<T> p = *reinterpret_cast<const Pack<T>*>(xr + i);
#pragma unroll
        for (int j = 0; j < N; ++j) s += to_f32(p.v[j]);
      } else {
        s += to_f32(xr[i]);
      }
    }
    float mu = block_reduce<false>(s, scratch) / float(cols);
    float sq = 0.0f;
    for (int64_t i = int64_t(threadIdx.x) * N; i < cols; i += int64_t(blockDim.x) * N) {
      if (kVec) {
        Pack<T> p = *reinterpret_cast<const Pack<T>*>(xr + i);
#pragma unroll
        for (int j = 0; j < N; ++j) sq += (to_f32(p.v[j]) - mu) * (to_f32(p.v[j]) - mu);
      } else {
        float d = to_f32(xr[i]) - mu;
        sq += d * d;
      }
    }
    float inv = rsqrtf(block_reduce<false>(sq, scratch) / float(cols) + eps);
    for (int64_t i = int64_t(threadIdx.x) * N; i < cols; i += int64_t(blockDim.x) * N) {
      if (kVec) {
        Pack<T> p = *reinterpret_cast<const Pack<T>*>(xr + i), o;
#pragma unroll
        for (int j = 0; j < N; ++j)
          o.v[j] = from_f32<T>((to_f32(p.v[j]) - mu) * inv * (w ? to_f32(w[i + j]) : 1.0f) + (b ? to_f32(b[i + j]) : 0.0f));
        *reinterpret_cast<Pack<T>*>(yr + i) = o;
      } else {
        yr[i] = from_f32<T>((to_f32(xr[i]) - mu) * inv * (w ? to_f32(w[i]) : 1.0f) + (b ? to_f32(b[i]) : 0.0f));
      }
    }
  }
}

template <class T, int K>
__global__ void __launch_bounds__(kRegRowBlock) layer_norm_regs(T* __restrict__ y, const T* __restrict__ x,
                                                                 const T* __restrict__ w, const T* __restrict__ b,
                                                                 int64_t rows, int64_t cols, float eps) {
  __shared__ float scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    Pack<T> p[K];
    load_row_regs<T, K>(x + r * cols, cols, p);
    float mu = block_reduce<false>(sum_row_regs<T, K>(cols, p, [](float a) { return a; }), scratch) / float(cols);
    float sq = sum_row_regs<T, K>(cols, p, [&](float a) { return (a - mu) * (a - mu); });
    float inv = rsqrtf(block_reduce<false>(sq, scratch) / float(cols) + eps);
    store_row_regs<T, K>(y + r * cols, cols, p, [&](float a, int64_t c) {
      float o = (a - mu) * inv;
      if (w) o *= to_f32(w[c]);
      if (b) o += to_f32(b[c]);
      return o;
    });
  }
}

// ---- softmax over the last axis: exp(x - max) / sum ----
template <class T, bool kVec>
__global__ void __launch_bounds__(256) softmax_warp(T* __restrict__ y, const T* __restrict__ x, int64_t rows,
                                                    int64_t cols) {
  constexpr int K = WarpRow<T, kVec>::kChunks, N = WarpRow<T, kVec>::N;
  int lane = threadIdx.x % kWarp;
  for (int64_t r = int64_t(blockIdx.x) * kRowWarpsPerBlock + threadIdx.x / kWarp; r < rows;
       r += int64_t(gridDim.x) * kRowWarpsPerBlock) {
    float v[K * N];
    load_row<T, kVec, K>(x + r * cols, cols, lane, v);
    float m = -INFINITY;
#pragma unroll
    for (int c = 0; c < K; ++c)
#pragma unroll
      for (int j = 0; j < N; ++j)
        if ((int64_t(c) * kWarp + lane) * N + j < cols) m = fmaxf(m, v[c * N + j]);
    m = warp_max(m);
    float s = 0.0f;
#pragma unroll
    for (int c = 0; c < K; ++c)
#pragma unroll
      for (int j = 0; j < N; ++j) {
        bool in = (int64_t(c) * kWarp + lane) * N + j < cols;
        v[c * N + j] = in ? expf(v[c * N + j] - m) : 0.0f;
        s += v[c * N + j];
      }
    float inv = 1.0f / warp_sum(s);
    store_row<T, kVec, K>(y + r * cols, cols, lane, v, [&](float e, int64_t) { return e * inv; });
  }
}

template <class T>
__global__ void __launch_bounds__(kRowBlock) softmax_block(T* __restrict__ y, const T* __restrict__ x, int64_t rows,
                                                           int64_t cols) {
  __shared__ float scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    float m = -INFINITY;
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) m = fmaxf(m, to_f32(xr[i]));
    m = block_reduce<true>(m, scratch);
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) s += expf(to_f32(xr[i]) - m);
    float inv = 1.0f / block_reduce<false>(s, scratch);
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) yr[i] = from_f32<T>(expf(to_f32(xr[i]) - m) * inv);
  }
}

// Softmax over a middle axis of (outer, len, inner): a thread per (outer, inner) column.
template <class T>
__global__ void softmax_inner(T* __restrict__ y, const T* __restrict__ x, int64_t outer, int64_t len, int64_t inner) {
  int64_t total = outer * inner;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    int64_t o = t / inner, i = t % inner;
    const T* xc = x + o * len * inner + i;
    T* yc = y + o * len * inner + i;
    float m = -INFINITY;
    for (int64_t k = 0; k < len; ++k) m = fmaxf(m, to_f32(xc[k * inner]));
    float s = 0.0f;
    for (int64_t k = 0; k < len; ++k) s += expf(to_f32(xc[k * inner]) - m);
    float inv = 1.0f / s;
    for (int64_t k = 0; k < len; ++k) yc[k * inner] = from_f32<T>(expf(to_f32(xc[k * inner]) - m) * inv);
  }
}

}  // namespace opscope::cuda_impl::dev
