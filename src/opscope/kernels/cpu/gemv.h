// Matrix-vector products, the shape of decode at batch 1: y[j] = sum_k W[j, k] x[k] for
// rows j of W that lie contiguous along k (linear's weight, a transposed K cache). Each
// weight is read once, as stored, with no packing and no f32 copy: OpenBLAS's sgemm packs
// its B operand even when M is 1 (5632 x 2048 f32 on one core: 5.2 ms against 1.5 ms
// here), and the bf16/f16 matmul path converts the whole slice of W to f32 first.
#pragma once
#include <cstdint>

#include "opscope/core/dtype.h"

namespace opscope::cpu_kernels {

// y[j] (j < n) = dot(W row j, x), W row j at w + j * ldw, x[i] at x + i * incx; f32 sums,
// 16-bit rows converted in registers. `xf` holds k floats: x gathered (strided) or
// converted (16-bit) once per call.
void gemv_rows(const float* w, int64_t ldw, const float* x, int64_t incx, float* y, int64_t n, int64_t k, float* xf);
void gemv_rows(const bf16_t* w, int64_t ldw, const bf16_t* x, int64_t incx, bf16_t* y, int64_t n, int64_t k,
               float* xf);
void gemv_rows(const f16_t* w, int64_t ldw, const f16_t* x, int64_t incx, f16_t* y, int64_t n, int64_t k,
               float* xf);

}  // namespace opscope::cpu_kernels
