// bf16 matrix products on one core with the CPU's bf16 dot products (AVX512-BF16's
// vdpbf16ps), through oneDNN's matmul (brgemm, or its jit bf16 gemm): f32 sums of the exact
// bf16 products, rounded once to bf16. Converting both operands to f32 for sgemm took 2.2-2.5x
// its time (docs/BENCHMARKS.md, "bf16 matmul").
#pragma once
#include <cstdint>

#include "opscope/core/dtype.h"

namespace opscope::cpu_kernels {

// C (m x n, row stride ldc) = A (m x k) @ B (k x n), A's element (i, p) at a[i * sam + p * sak]
// and B's (p, j) at b[p * sbk + j * sbn]. False where oneDNN has only a reference kernel for
// this CPU or layout: the caller converts to f32 and calls sgemm.
bool gemm_bf16(const bf16_t* a, int64_t sam, int64_t sak, const bf16_t* b, int64_t sbk, int64_t sbn, bf16_t* c,
               int64_t ldc, int64_t m, int64_t n, int64_t k);

}  // namespace opscope::cpu_kernels
