// matmul and batched matmul through cuBLAS. cuBLAS is column-major: a row-major C = A B
// is the column-major C^T = B^T A^T, so the operands go in swapped, each with op N when
// its rows are unit-stride (row-major) and op T when its columns are (a transpose).
// f32 computes in f32 (no TF32: results match the CPU device's); bf16/f16 in f32.
// One strided-batched call when the batch dims step uniformly (broadcast: stride 0),
// else one call per matrix.
#include <fmt/format.h>

#include <algorithm>
#include <climits>

#include "opscope/core/error.h"
#include "opscope/cuda/check.h"
#include "opscope/cuda/cuda_device.h"
#include "opscope/cuda/kernels.h"
#include "opscope/runtime/op_scope.h"

namespace opscope::cuda_kernels {

namespace {

struct MatLayout {
  bool ok = false;
  cublasOperation_t op = CUBLAS_OP_N;  // as the swapped (column-major) operand
  int64_t ld = 0;
};

// A (rows x cols) row-major matrix with strides (s0, s1) as a cuBLAS operand of the
// swapped product.
MatLayout mat_layout(int64_t rows, int64_t cols, int64_t s0, int64_t s1) {
  MatLayout m;
  if (cols <= 1 || s1 == 1) {  // row-major: column-major (cols x rows), ld >= cols
    m.ok = s0 >= std::max<int64_t>(cols, 1) || rows <= 1;
    m.op = CUBLAS_OP_N;
    m.ld = std::max<int64_t>({s0, cols, 1});
    if (m.ok) return m;
  }
  if (rows <= 1 || s0 == 1) {  // column-major (rows x cols): its transpose
    m.ok = s1 >= std::max<int64_t>(rows, 1) || cols <= 1;
    m.op = CUBLAS_OP_T;
    m.ld = std::max<int64_t>({s1, rows, 1});
  }
  return m;
}

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f32: return CUDA_R_32F;
    case DType::bf16: return CUDA_R_16BF;
    case DType::f16: return CUDA_R_16F;
    default: fail(OpScope::current(), "no CUDA matmul for dtype {}", dtype_name(t));
  }
}

// The uniform stride of the flattened batch dims, if there is one.
bool batch_stride(const Shape& batch, const Strides& st, int64_t& stride) {
  stride = 0;
  int64_t expect = -1;
  for (int d = batch.size() - 1; d >= 0; --d) {
    if (batch[d] == 1) continue;
    if (expect < 0) {
      stride = st[d];
      expect = st[d] * batch[d];
    } else if (st[d] != expect) {
      return false;
    } else {
      expect = st[d] * batch[d];
    }
  }
  return true;
}

}  // namespace

LaunchSpec matmul_spec(const Tensor& out, const Tensor& a, const Tensor& b) {
  const char* op = OpScope::current()[0] ? OpScope::current() : "matmul";
  int nd = out.ndim(), bd = nd - 2;
  int64_t M = out.shape()[nd - 2], N = out.shape()[nd - 1], K = a.shape()[nd - 1];
  Shape batch;
  for (int d = 0; d < bd; ++d) batch.push_back(out.shape()[d]);
  int64_t B = batch.numel();
  MatLayout la = mat_layout(M, K, a.strides()[nd - 2], a.strides()[nd - 1]);
  MatLayout lb = mat_layout(K, N, b.strides()[nd - 2], b.strides()[nd - 1]);
  if (!la.ok || !lb.ok)
    fail(op, "operands {} (strides {}) and {} (strides {}) are not cuBLAS layouts; make them contiguous",
         a.shape().str(), a.strides().str(), b.shape().str(), b.strides().str());
  if (la.ld > INT_MAX || lb.ld > INT_MAX || M > INT_MAX || N > INT_MAX || K > INT_MAX)
    fail(op, "shapes {} and {}: a dim exceeds cuBLAS's 32-bit sizes", a.shape().str(), b.shape().str());
  Strides ab_st, bb_st;
  for (int d = 0; d < bd; ++d) ab_st.push_back(a.strides()[d]), bb_st.push_back(b.strides()[d]);
  int64_t sa = 0, sb = 0;
  bool uniform = batch_stride(batch, ab_st, sa) && batch_stride(batch, bb_st, sb);
  // Offsets of each matrix when the batch is not uniform.
  std::vector<std::pair<int64_t, int64_t>> offsets;
  if (!uniform) {
    for (int64_t i = 0; i < B; ++i) {
      int64_t rem = i, oa = 0, ob = 0;
      for (int d = bd - 1; d >= 0; --d) {
        int64_t idx = rem % batch[d];
        rem /= batch[d];
        oa += idx * ab_st[d];
        ob += idx * bb_st[d];
      }
      offsets.emplace_back(oa, ob);
    }
  }
  LaunchSpec spec;
  spec.name = fmt::format("matmul_{}", dtype_name(out.dtype()));
  spec.bytes = a.nbytes() + b.nbytes() + out.nbytes();
  spec.flops = 2 * B * M * N * K;
  cudaDataType_t type = cuda_type(out.dtype());
  size_t isz = out.itemsize();
  const char* ap = static_cast<const char*>(a.data_ptr());
  const char* bp = static_cast<const char*>(b.data_ptr());
  char* cp = static_cast<char*>(out.data_ptr());
  auto offs = std::make_shared<const std::vector<std::pair<int64_t, int64_t>>>(std::move(offsets));
  spec.body = [=](int64_t, int64_t) {
    cublasHandle_t h = cuda_impl::current_blas();
    float alpha = 1.0f, beta = 0.0f;
    // C^T (N x M, ld N) = op(B) (N x K) * op(A) (K x M)
    if (uniform && B > 1) {
      OPSCOPE_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
          h, lb.op, la.op, int(N), int(M), int(K), &alpha, bp, type, int(lb.ld), sb, ap, type, int(la.ld), sa, &beta,
          cp, type, int(N), M * N, int(B), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      return;
    }
    for (int64_t i = 0; i < B; ++i) {
      int64_t oa = uniform ? 0 : (*offs)[i].first, ob = uniform ? 0 : (*offs)[i].second;
      OPSCOPE_CUBLAS_CHECK(cublasGemmEx(h, lb.op, la.op, int(N), int(M), int(K), &alpha, bp + ob * int64_t(isz), type,
                                        int(lb.ld), ap + oa * int64_t(isz), type, int(la.ld), &beta,
                                        cp + i * M * N * int64_t(isz), type, int(N), CUBLAS_COMPUTE_32F,
                                        CUBLAS_GEMM_DEFAULT));
    }
  };
  return spec;
}

}  // namespace opscope::cuda_kernels
