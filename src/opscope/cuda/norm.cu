// Launchers of the fused row kernels (norm.cuh): warp per row up to 1024 columns, the
// row in a block's registers above (rms_norm, layer_norm: 128-bit path, rows of up to
// 4096 packs), else a block per row; 128-bit loads when x and y are 16-byte aligned and
// rows split in packs.
#include <algorithm>

#include "opscope/cuda/check.h"
#include "opscope/cuda/launchers.h"
#include "opscope/cuda/norm.cuh"

namespace opscope::cuda_impl {

namespace {

constexpr int64_t kMaxGrid = 1 << 20;  // grid-stride beyond this

template <class T>
bool vec_ok(const void* y, const void* x, int64_t cols) {
  return cols % dev::Pack<T>::N == 0 && (reinterpret_cast<uintptr_t>(y) & 15) == 0 &&
         (reinterpret_cast<uintptr_t>(x) & 15) == 0;
}

unsigned warp_grid(int64_t rows) {
  return unsigned(std::min<int64_t>((rows + dev::kRowWarpsPerBlock - 1) / dev::kRowWarpsPerBlock, kMaxGrid));
}
unsigned block_grid(int64_t rows) { return unsigned(std::min<int64_t>(rows, kMaxGrid)); }

// The register-row kernels for K chunks a thread (dev::reg_row_chunks: 1, 2, 4, 8 or 16).
template <class T>
void rms_norm_regs_t(int k, T* y, const T* x, const T* w, int64_t rows, int64_t cols, float eps, cudaStream_t s) {
  unsigned g = block_grid(rows);
  constexpr int B = dev::kRegRowBlock;
  switch (k) {
    case 1: dev::rms_norm_regs<T, 1><<<g, B, 0, s>>>(y, x, w, rows, cols, eps); break;
    case 2: dev::rms_norm_regs<T, 2><<<g, B, 0, s>>>(y, x, w, rows, cols, eps); break;
    case 4: dev::rms_norm_regs<T, 4><<<g, B, 0, s>>>(y, x, w, rows, cols, eps); break;
    case 8: dev::rms_norm_regs<T, 8><<<g, B, 0, s>>>(y, x, w, rows, cols, eps); break;
    default: dev::rms_norm_regs<T, 16><<<g, B, 0, s>>>(y, x, w, rows, cols, eps); break;
  }
}

template <class T>
void layer_norm_regs_t(int k, T* y, const T* x, const T* w, const T* b, int64_t rows, int64_t cols, float eps,
                       cudaStream_t s) {
  unsigned g = block_grid(rows);
  constexpr int B = dev::kRegRowBlock;
  switch (k) {
    case 1: dev::layer_norm_regs<T, 1><<<g, B, 0, s>>>(y, x, w, b, rows, cols, eps); break;
    case 2: dev::layer_norm_regs<T, 2><<<g, B, 0, s>>>(y, x, w, b, rows, cols, eps); break;
    case 4: dev::layer_norm_regs<T, 4><<<g, B, 0, s>>>(y, x, w, b, rows, cols, eps); break;
    case 8: dev::layer_norm_regs<T, 8><<<g, B, 0, s>>>(y, x, w, b, rows, cols, eps); break;
    default: dev::layer_norm_regs<T, 16><<<g, B, 0, s>>>(y, x, w, b, rows, cols, eps); break;
  }
}

template <class T>
void rms_norm_t(void* y, const void* x, const void* w, int64_t rows, int64_t cols, float eps, cudaStream_t s) {
  T* yp = static_cast<T*>(y);
  const T* xp = static_cast<const T*>(x);
  const T* wp = static_cast<const T*>(w);
  bool vec = vec_ok<T>(y, x, cols);
  bool w_vec = !w || (reinterpret_cast<uintptr_t>(w) & 15) == 0;
  if (int k = vec && w_vec ? dev::reg_row_chunks(cols, int(sizeof(T))) : 0) {
    rms_norm_regs_t<T>(k, yp, xp, wp, rows, cols, eps, s);
  } else if (cols <= dev::kWarpRowMax) {
    if (vec) dev::rms_norm_warp<T, true><<<warp_grid(rows), 256, 0, s>>>(yp, xp, wp, rows, cols, eps);
    else dev::rms_norm_warp<T, false><<<warp_grid(rows), 256, 0, s>>>(yp, xp, wp, rows, cols, eps);
  } else {
    if (vec) dev::rms_norm_block<T, true><<<block_grid(rows), dev::kRowBlock, 0, s>>>(yp, xp, wp, rows, cols, eps);
    else dev::rms_norm_block<T, false><<<block_grid(rows), dev::kRowBlock, 0, s>>>(yp, xp, wp, rows, cols, eps);
  }
  OPSCOPE_CUDA_CHECK_LAUNCH();
}

template <class T>
void layer_norm_t(void* y, const void* x, const void* w, const void* b, int64_t rows, int64_t cols, float eps,
                  cudaStream_t s) {
  T* yp = static_cast<T*>(y);
  const T* xp = static_cast<const T*>(x);
  const T* wp = static_cast<const T*>(w);
  const T* bp = static_cast<const T*>(b);
  bool vec = vec_ok<T>(y, x, cols);
  if (int k = vec ? dev::reg_row_chunks(cols, int(sizeof(T))) : 0) {
    layer_norm_regs_t<T>(k, yp, xp, wp, bp, rows, cols, eps, s);
  } else if (cols <= dev::kWarpRowMax) {
    if (vec) dev::layer_norm_warp<T, true><<<warp_grid(rows), 256, 0, s>>>(yp, xp, wp, bp, rows, cols, eps);
    else dev::layer_norm_warp<T, false><<<warp_grid(rows), 256, 0, s>>>(yp, xp, wp, bp, rows, cols, eps);
  } else {
    if (vec)
      dev::layer_norm_block<T, true><<<block_grid(rows), dev::kRowBlock, 0, s>>>(yp, xp, wp, bp, rows, cols, eps);
    else
      dev::layer_norm_block<T, false><<<block_grid(rows), dev::kRowBlock, 0, s>>>(yp, xp, wp, bp, rows, cols, eps);
  }
  OPSCOPE_CUDA_CHECK_LAUNCH();
}

template <class T>
void softmax_t(void* y, const void* x, int64_t outer, int64_t len, int64_t inner, cudaStream_t s) {
  T* yp = static_cast<T*>(y);
  const T* xp = static_cast<const T*>(x);
  if (inner == 1) {
    if (len <= dev::kWarpRowMax) {
      if (vec_ok<T>(y, x, len)) dev::softmax_warp<T, true><<<warp_grid(outer), 256, 0, s>>>(yp, xp, outer, len);
      else dev::softmax_warp<T, false><<<warp_grid(outer), 256, 0, s>>>(yp, xp, outer, len);
    } else {
      dev::softmax_block<T><<<block_grid(outer), dev::kRowBlock, 0, s>>>(yp, xp, outer, len);
    }
  } else {
    int64_t cols = outer * inner;
    dev::softmax_inner<T><<<unsigned(std::min<int64_t>((cols + 255) / 256, kMaxGrid)), 256, 0, s>>>(yp, xp, outer, len,
                                                                                                  inner);
  }
  OPSCOPE_CUDA_CHECK_LAUNCH();
}

}  // namespace

#define OPSCOPE_CUDA_FLOAT_SWITCH(DT, ...)                 \
  switch (DT) {                                            \
    case Dt::f32: { using T = float; __VA_ARGS__; break; } \
    case Dt::bf16: { using T = dev::bf16; __VA_ARGS__; break; } \
    case Dt::f16: { using T = dev::f16; __VA_ARGS__; break; } \
    default: throw_cuda_error(cudaErrorInvalidValue, "dtype switch (integer dtype)"); \
  }

void launch_rms_norm(Dt dt, void* y, const void* x, const void* w, int64_t rows, int64_t cols, float eps,
                     cudaStream_t s) {
  OPSCOPE_CUDA_FLOAT_SWITCH(dt, rms_norm_t<T>(y, x, w, rows, cols, eps, s));
}

void launch_layer_norm(Dt dt, void* y, const void* x, const void* w, const void* b, int64_t rows, int64_t cols,
                       float eps, cudaStream_t s) {
  OPSCOPE_CUDA_FLOAT_SWITCH(dt, layer_norm_t<T>(y, x, w, b, rows, cols, eps, s));
}

void launch_softmax(Dt dt, void* y, const void* x, int64_t outer, int64_t len, int64_t inner, cudaStream_t s) {
  OPSCOPE_CUDA_FLOAT_SWITCH(dt, softmax_t<T>(y, x, outer, len, inner, s));
}

}  // namespace opscope::cuda_impl
