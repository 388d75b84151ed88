// The host-side launchers of the CUDA kernels (in the .cu files), called by the launch
// bodies that cuda_kernels::*_spec build. Plain C++17 types only, so nvcc compiles the
// .cu files without the rest of opscope's headers. Each enqueues on `stream` and checks
// the launch; none synchronizes.
#pragma once
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>

#include "opscope/cuda/layout.h"
#include "opscope/kernels/window2d.h"

namespace opscope::cuda_impl {

// Blocks of `threads` for a grid-stride loop over `work` items: enough to fill the GPU
// (H200: 132 SMs x 8 blocks of 256), fewer for small work.
inline unsigned grid_for(int64_t work, int threads) {
  return unsigned(std::max<int64_t>(1, std::min<int64_t>((work + threads - 1) / threads, 132 * 16)));
}

// Op codes: the values of cpu_kernels::UnaryOp / BinaryOp / ReduceKind.
// Unary: neg abs exp log sqrt rsqrt sin cos tanh sigmoid silu gelu relu gelu_tanh hardswish
// hardsigmoid floor ceil round trunc sign log2 reciprocal erf expm1 log1p tan atan asin acos sinh
// cosh erfinv.
// Binary: add sub mul div pow maximum minimum div_trunc div_floor remainder.
// Reduce: sum mean max min var argmax.

// out = op(x), n elements. `layout` null: out and x contiguous (vectorized when aligned).
void launch_unary(int op, Dt dt, void* out, const void* x, int64_t n, const Layout* layout, cudaStream_t s);
// out = op(a, b); `layout` null: all contiguous, same shape.
void launch_binary(int op, Dt dt, void* out, const void* a, const void* b, int64_t n, const Layout* layout,
                   cudaStream_t s);
// out = op(x, c) or op(c, x).
void launch_binary_scalar(int op, Dt dt, void* out, const void* x, float c, bool scalar_first, int64_t n,
                          const Layout* layout, cudaStream_t s);

// dst (strides layout.stride[0]) = src (layout.stride[1]) converted between f32/bf16/f16;
// between equal integer types, a plain copy.
void launch_copy(Dt dst_dt, Dt src_dt, void* dst, const void* src, const Layout& layout, cudaStream_t s);
// n elements of `bytes` (1, 2, 4, 8) each set to the bit pattern `bits`.
void launch_fill(int bytes, void* dst, uint64_t bits, int64_t n, cudaStream_t s);

// Row kernels over contiguous rows of `cols` elements: a warp per row for rows of up to
// 1024 elements, a block per row above; f32 accumulation.
void launch_rms_norm(Dt dt, void* y, const void* x, const void* w, int64_t rows, int64_t cols, float eps,
                     cudaStream_t s);
void launch_layer_norm(Dt dt, void* y, const void* x, const void* w, const void* b, int64_t rows, int64_t cols,
                       float eps, cudaStream_t s);
// Softmax of contiguous x viewed as (outer, len, inner) over the middle axis.
void launch_softmax(Dt dt, void* y, const void* x, int64_t outer, int64_t len, int64_t inner, cudaStream_t s);

// Reduction of x, viewed as (outer, len) rows with unit-stride columns, over the last
// axis: out[outer] (argmax: i64). correction: var's divisor is len - correction.
void launch_reduce_rows(int kind, Dt dt, void* out, const void* x, int64_t outer, int64_t len, int64_t correction,
                        cudaStream_t s);
// The general case: out element o (row-major over the kept dims `kept`, with x strides
// kept.stride[1]) reduces over the reduced dims `red` (x strides red.stride[1]).
void launch_reduce_strided(int kind, Dt dt, void* out, const void* x, const Layout& kept, const Layout& red,
                           int64_t correction, cudaStream_t s);

// out (n, D) = w[idx[i], :] with w rows `w_row_stride` apart; idx i32 (idx_bytes 4) or
// i64 (8). An index outside [0, V) sets `err` and writes zeros for that row.
void launch_embedding(Dt dt, void* out, const void* w, const void* idx, int idx_bytes, int64_t n, int64_t D,
                      int64_t V, int64_t w_row_stride, KernelError* err, cudaStream_t s);

// cols (n, c * kh * kw, oh * ow), contiguous = the im2col columns of the contiguous x
// (n, c, h, w): conv2d's operand for cuBLAS.
void launch_im2col(Dt dt, void* cols, const void* x, const kernels::Window2d& g, cudaStream_t s);
// out (n, c, oh, ow) = max over each window of the contiguous x; idx (i64, may be null)
// the position of each maximum in its input plane.
void launch_max_pool2d(Dt dt, void* out, int64_t* idx, const void* x, const kernels::Window2d& g, cudaStream_t s);

}  // namespace opscope::cuda_impl
