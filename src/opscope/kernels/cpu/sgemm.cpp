#include "opscope/kernels/cpu/sgemm.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>

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
