// How a row-major matmul out (batch..., M, N) = a (batch..., M, K) @ b (batch..., K, N)
// becomes cuBLAS calls. cuBLAS is column-major, so the row-major C = A B goes in as the
// column-major C^T = B^T A^T: cuBLAS's A is our b and its B is our a, each with op N
// when its rows are unit-stride and op T when its columns are (a transpose view).
// One strided-batched call when the batch dims step uniformly (broadcast: stride 0),
// else one call per matrix at its offsets. Plain host code without CUDA headers, so
// tests/cuda_blas_layout_test.cpp checks it in every build against a reference of
// cuBLAS's documented column-major semantics.
#pragma once
#include <algorithm>
#include <climits>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace opscope::cuda_impl {

// The parameters of cublasGemmEx / cublasGemmStridedBatchedEx, in cuBLAS's names.
// Strides and offsets count elements; C is out (contiguous), ldc = N.
struct GemmCall {
  bool ok = false;
  std::string error;  // why not, when !ok ("operands ... are not cuBLAS layouts")
  bool transa = false, transb = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t batch = 1;
  // True: one (strided-batched when batch > 1) call, matrix i at i * stride_*.
  // False: one call per matrix, at offset_a[i], offset_b[i], offset_c[i].
  bool uniform = true;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  std::vector<int64_t> offset_a, offset_b, offset_c;
};

namespace gemm_detail {

// A row-major (rows x cols) matrix with element strides (s0, s1) as a column-major
// cuBLAS operand: its op and leading dimension.
struct Operand {
  bool ok = false;
  bool trans = false;
  int64_t ld = 0;
};

inline Operand operand(int64_t rows, int64_t cols, int64_t s0, int64_t s1) {
  // Size-1 dims have meaningless strides (0, or huge after a slice); ld then only has
  // to meet cuBLAS's lower bound.
  if ((cols <= 1 || s1 == 1) && (rows <= 1 || s0 >= std::max<int64_t>(cols, 1)))
    return {true, false, rows <= 1 ? std::max<int64_t>(cols, 1) : s0};  // column-major (cols x rows)
  if ((rows <= 1 || s0 == 1) && (cols <= 1 || s1 >= std::max<int64_t>(rows, 1)))
    return {true, true, cols <= 1 ? std::max<int64_t>(rows, 1) : s1};  // column-major (rows x cols): op T
  return {};
}

// The uniform step of the flattened batch dims (row-major over `batch`), if there is one.
inline bool batch_stride(std::span<const int64_t> batch, std::span<const int64_t> st, int64_t& stride) {
  stride = 0;
  int64_t expect = -1;
  for (int d = int(batch.size()) - 1; d >= 0; --d) {
    if (batch[d] == 1) continue;
    if (expect >= 0 && st[d] != expect) return false;
    if (expect < 0) stride = st[d];
    expect = st[d] * batch[d];
  }
  return true;
}

}  // namespace gemm_detail

// out_shape: (batch..., M, N); a_strides / b_strides: the strides of a (batch..., M, K)
// and b (batch..., K, N) with the batch dims already broadcast to out's (stride 0).
inline GemmCall plan_gemm(std::span<const int64_t> out_shape, int64_t K, std::span<const int64_t> a_strides,
                          std::span<const int64_t> b_strides) {
  GemmCall g;
  int nd = int(out_shape.size()), bd = nd - 2;
  int64_t M = out_shape[nd - 2], N = out_shape[nd - 1];
  gemm_detail::Operand la = gemm_detail::operand(M, K, a_strides[nd - 2], a_strides[nd - 1]);
  gemm_detail::Operand lb = gemm_detail::operand(K, N, b_strides[nd - 2], b_strides[nd - 1]);
  if (!la.ok || !lb.ok) {
    g.error = "not cuBLAS layouts (each matrix needs a unit stride along its rows or its columns)";
    return g;
  }
  g.transa = lb.trans;
  g.transb = la.trans;
  g.m = N;
  g.n = M;
  g.k = K;
  g.lda = lb.ld;
  g.ldb = la.ld;
  g.ldc = std::max<int64_t>(N, 1);
  std::span<const int64_t> batch = out_shape.first(size_t(bd));
  g.batch = 1;
  for (int64_t d : batch) g.batch *= d;
  for (int64_t v : {g.m, g.n, g.k, g.lda, g.ldb, g.ldc, g.batch})
    if (v > INT_MAX) {
      g.error = "a dim exceeds cuBLAS's 32-bit sizes";
      return g;
    }
  g.stride_c = M * N;
  int64_t sa = 0, sb = 0;
  g.uniform = gemm_detail::batch_stride(batch, a_strides.first(size_t(bd)), sa) &&
              gemm_detail::batch_stride(batch, b_strides.first(size_t(bd)), sb);
  if (g.uniform) {
    g.stride_a = sb;  // cuBLAS's A is our b
    g.stride_b = sa;
  } else {
    for (int64_t i = 0; i < g.batch; ++i) {
      int64_t rem = i, oa = 0, ob = 0;
      for (int d = bd - 1; d >= 0; --d) {
        int64_t idx = rem % batch[d];
        rem /= batch[d];
        oa += idx * a_strides[d];
        ob += idx * b_strides[d];
      }
      g.offset_a.push_back(ob);
      g.offset_b.push_back(oa);
      g.offset_c.push_back(i * M * N);
    }
  }
  g.ok = true;
  return g;
}

}  // namespace opscope::cuda_impl
