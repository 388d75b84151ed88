#include "opscope/kernels/cpu/sgemm.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "opscope/core/error.h"
#include "opscope/kernels/cpu/onednn.h"

namespace opscope::cpu_kernels {

std::optional<SgemmLayout> sgemm_layout(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  // Size-1 dims have meaningless strides; ld only has to satisfy BLAS's lower bound there.
  if ((cols == 1 || col_stride == 1) && (rows == 1 || row_stride >= std::max<int64_t>(cols, 1)))
    return SgemmLayout{false, rows == 1 ? std::max<int64_t>(cols, 1) : row_stride};
  if ((rows == 1 || row_stride == 1) && (cols == 1 || col_stride >= std::max<int64_t>(rows, 1)))
    return SgemmLayout{true, cols == 1 ? std::max<int64_t>(rows, 1) : col_stride};
  return std::nullopt;
}

namespace {

// oneDNN's sgemm reads a plain (not transposed) b whose rows lie a multiple of 1 KiB apart
// through aliasing cache sets: on one Zen 3 core a 128 x 256 x 2048 product with ldb 512
// ran 59 GFLOP/s, and 90 with b first copied to rows 272 apart (the copy counted); 197 x
// 384 x 3072 with ldb 768: 50 and 86 (docs/BENCHMARKS.md). A Linear's weight comes
// transposed and reads well; x @ w with a plain weight, and attention's att @ v, do not.
constexpr int64_t kAliasingLd = 256;  // floats
constexpr int64_t kPaddedLd = 16;     // added to the copy's rows
constexpr int64_t kMinRowsToCopy = 16;  // fewer rows of a: the copy would cost more than it saves

bool aliasing(int64_t ld) { return ld % kAliasingLd == 0; }

}  // namespace

int64_t sgemm_plain_b_ld(int64_t n) { return aliasing(n) ? n + kPaddedLd : n; }

const float* plain_b_for_sgemm(const float* b, int64_t& ldb, int64_t m, int64_t k, int64_t n) {
  if (!aliasing(ldb) || m < kMinRowsToCopy || n < 2 || k < 2) return b;
  thread_local std::vector<float> buf;  // kept: the device's cores run one gemm after another
  const int64_t ld = n + kPaddedLd;
  buf.resize(size_t(k * ld));
  for (int64_t r = 0; r < k; ++r) std::memcpy(buf.data() + r * ld, b + r * ldb, size_t(n) * sizeof(float));
  ldb = ld;
  return buf.data();
}

void sgemm(const char* op, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  onednn_on_this_core();
  dnnl_status_t s = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
  onednn_statics_made();
  if (s != dnnl_success)
    fail(op, "sgemm of {}x{} by {}x{} failed in oneDNN (status {}; lda {}, ldb {}, ldc {})", m, k, k, n, int(s), lda,
         ldb, ldc);
}

}  // namespace opscope::cpu_kernels
