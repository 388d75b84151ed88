// Matrix multiply: each core calls sgemm (sgemm.h, on that core alone) on its slice of
// the rows of C (or of its columns when N > M), so the device's cores are the
// parallelism. bf16 slices go to oneDNN's bf16 matmul where the CPU has AVX512-BF16
// (gemm_bf16.h); f16 slices (and bf16 elsewhere) are converted to f32, multiplied, and
// converted back.
#pragma once
#include "opscope/runtime/launch.h"
#include "opscope/runtime/tensor.h"

namespace opscope::cpu_kernels {

// Whether the last two dims of an f32 tensor can go to sgemm as they are: a row-major
// matrix, possibly transposed, with a leading dimension (else: make it contiguous).
bool blas_compatible(const Tensor& m);

// out (batch..., M, N), contiguous = a (batch..., M, K) @ b (batch..., K, N), where a and
// b already have out's batch dims (broadcast ones with stride 0) and K > 0. f32 operands
// must be blas_compatible; bf16/f16 ones may have any strides.
// With `bias` (f32, shape (N), contiguous; f32 operands): out = a @ b + bias, each slice
// of out starting as the bias rows and sgemm adding onto them (or gemv adding it).
LaunchSpec matmul_spec(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor* bias = nullptr);

}  // namespace opscope::cpu_kernels
