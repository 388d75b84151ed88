// Single-precision gemm on the calling core, row-major: the CPU kernels' one way into a BLAS.
// oneDNN's jit sgemm, not OpenBLAS's: Debian's OpenBLAS (0.3.21) does not know AVX-512 AMD
// CPUs (Zen 4/5), takes them for Haswell and runs its AVX2 kernels, at about half the rate
// oneDNN's AVX-512 kernels reach on the same core (docs/BENCHMARKS.md, "sgemm").
#pragma once
#include <cstdint>
#include <optional>

namespace opscope::cpu_kernels {

// C (m x n, row stride ldc) = op(A) op(B) + beta C, where op(X) is X, or X transposed
// when trans_x: A is m x k as op(A) reads it (row stride lda as stored), B is k x n.
// Runs on this core alone: the device's cores are the parallelism. `op` names the kernel
// in the error a failed call raises.
void sgemm(const char* op, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// A plain (not transposed) b of k x n, rows ldb apart, as sgemm reads it well for an a of m
// rows: b itself, or where its rows lie a multiple of 1 KiB apart (which oneDNN's sgemm
// reads through aliasing cache sets) a copy with padded rows in this thread's buffer, valid
// until its next call; ldb becomes the copy's. The matmul op's f32 products take it.
const float* plain_b_for_sgemm(const float* b, int64_t& ldb, int64_t m, int64_t k, int64_t n);
// The row stride to give a plain b that a caller lays out itself, for n columns: n, or n
// padded where rows n floats apart would alias.
int64_t sgemm_plain_b_ld(int64_t n);

// How sgemm reads a (rows x cols) matrix whose element (i, j) is at i * row_stride +
// j * col_stride: transposed or not, and its row stride as stored. None where neither dim
// is dense or the rows overlap (the caller copies it first).
struct SgemmLayout {
  bool trans = false;
  int64_t ld = 1;
};
std::optional<SgemmLayout> sgemm_layout(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride);

}  // namespace opscope::cpu_kernels
