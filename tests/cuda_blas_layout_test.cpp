// The cuBLAS parameters of the CUDA device's matmul (src/opscope/cuda/gemm_call.h),
// without a GPU: a host reference of cuBLAS's documented column-major GEMM runs on the
// planned parameters (transa/transb, m n k, lda ldb ldc, batch strides or per-matrix
// offsets) and must give the row-major product of the views, computed plainly in double.
// Also checks cuBLAS's documented bounds on the leading dimensions. Builds in every
// configuration (no CUDA header).
#include <gtest/gtest.h>

#include <array>
#include <climits>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "opscope/cuda/gemm_call.h"

using opscope::cuda_impl::GemmCall;
using opscope::cuda_impl::plan_gemm;

namespace {

// A strided view into a storage of doubles.
struct View {
  std::vector<int64_t> shape, strides;
  int64_t offset = 0;
};

// Element offset of the row-major index i of `v`'s batch dims (the leading nd - 2).
int64_t batch_offset(const View& v, int64_t i) {
  int64_t off = v.offset;
  for (int d = int(v.shape.size()) - 3; d >= 0; --d) {
    off += (i % v.shape[d]) * v.strides[d];
    i /= v.shape[d];
  }
  return off;
}

// cuBLAS's cublasGemmEx on one matrix, as documented: column-major, C = op(A) op(B),
// op(A) m x k, op(B) k x n, C m x n with leading dimensions lda, ldb, ldc.
void ref_gemm(bool transa, bool transb, int64_t m, int64_t n, int64_t k, const double* A, int64_t lda, const double* B,
              int64_t ldb, double* C, int64_t ldc) {
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      double s = 0;
      for (int64_t l = 0; l < k; ++l) {
        double a = transa ? A[l + i * lda] : A[i + l * lda];
        double b = transb ? B[j + l * ldb] : B[l + j * ldb];
        s += a * b;
      }
      C[i + j * ldc] = s;
    }
}

// Runs `g` as the CUDA device would (one strided-batched call or one call per matrix).
void run_plan(const GemmCall& g, const double* A, const double* B, double* C) {
  for (int64_t p = 0; p < g.batch; ++p) {
    int64_t oa = g.uniform ? p * g.stride_a : g.offset_a[size_t(p)];
    int64_t ob = g.uniform ? p * g.stride_b : g.offset_b[size_t(p)];
    int64_t oc = g.uniform ? p * g.stride_c : g.offset_c[size_t(p)];
    ref_gemm(g.transa, g.transb, g.m, g.n, g.k, A + oa, g.lda, B + ob, g.ldb, C + oc, g.ldc);
  }
}

// cuBLAS's argument checks (CUBLAS_STATUS_INVALID_VALUE otherwise).
void expect_valid(const GemmCall& g, const std::string& what) {
  EXPECT_GE(g.lda, std::max<int64_t>(1, g.transa ? g.k : g.m)) << what;
  EXPECT_GE(g.ldb, std::max<int64_t>(1, g.transb ? g.n : g.k)) << what;
  EXPECT_GE(g.ldc, std::max<int64_t>(1, g.m)) << what;
  for (int64_t v : {g.m, g.n, g.k, g.lda, g.ldb, g.ldc, g.batch}) EXPECT_LE(v, INT_MAX) << what;
  if (g.uniform && g.batch > 1) {
    EXPECT_GE(g.stride_c, g.ldc * g.n) << what << ": C matrices overlap";
  }
  if (!g.uniform) {
    EXPECT_EQ(g.offset_a.size(), size_t(g.batch)) << what;
    EXPECT_EQ(g.offset_b.size(), size_t(g.batch)) << what;
    EXPECT_EQ(g.offset_c.size(), size_t(g.batch)) << what;
  }
}

// out = a @ b for views a (batch..., M, K) and b (batch..., K, N) (batch dims already
// broadcast: stride 0), through plan_gemm and the cuBLAS reference, against double.
void check(const View& a, const View& b, const std::vector<double>& sa, const std::vector<double>& sb,
           const std::string& what, bool expect_uniform) {
  int nd = int(a.shape.size());
  int64_t M = a.shape[nd - 2], K = a.shape[nd - 1], N = b.shape[nd - 1];
  std::vector<int64_t> out_shape(a.shape.begin(), a.shape.end() - 2);
  out_shape.push_back(M);
  out_shape.push_back(N);
  int64_t B = 1;
  for (int d = 0; d < nd - 2; ++d) B *= out_shape[d];
  GemmCall g = plan_gemm(out_shape, K, a.strides, b.strides);
  ASSERT_TRUE(g.ok) << what << ": " << g.error;
  expect_valid(g, what);
  EXPECT_EQ(g.uniform, expect_uniform) << what;
  EXPECT_EQ(g.batch, B) << what;
  std::vector<double> c(size_t(B * M * N), -777);
  // cuBLAS's A is our b, its B our a; the pointers are the views' first elements.
  run_plan(g, sb.data() + b.offset, sa.data() + a.offset, c.data());
  int bad = 0;
  for (int64_t p = 0; p < B && bad < 5; ++p) {
    int64_t oa = batch_offset(a, p), ob = batch_offset(b, p);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double want = 0;
        for (int64_t l = 0; l < K; ++l)
          want += sa[size_t(oa + i * a.strides[nd - 2] + l * a.strides[nd - 1])] *
                  sb[size_t(ob + l * b.strides[nd - 2] + j * b.strides[nd - 1])];
        double got = c[size_t(p * M * N + i * N + j)];
        if (std::abs(got - want) > 1e-9 * std::max(1.0, std::abs(want))) {
          ADD_FAILURE() << what << ": batch " << p << " element (" << i << ", " << j << ") is " << got << ", expected "
                        << want;
          if (++bad >= 5) break;
        }
      }
  }
}

std::vector<double> storage(size_t n, uint64_t seed) {
  std::mt19937_64 r(seed);
  std::uniform_real_distribution<double> d(-1, 1);
  std::vector<double> v(n);
  for (double& x : v) x = d(r);
  return v;
}

View contiguous(std::vector<int64_t> shape) {
  View v;
  v.shape = shape;
  v.strides.resize(shape.size());
  int64_t s = 1;
  for (int d = int(shape.size()) - 1; d >= 0; --d) v.strides[d] = s, s *= shape[d];
  return v;
}
// The last two dims of a contiguous (..., cols, rows) storage, swapped: x.t().
View transposed(std::vector<int64_t> shape) {
  int nd = int(shape.size());
  std::vector<int64_t> stored = shape;
  std::swap(stored[nd - 1], stored[nd - 2]);
  View v = contiguous(stored);
  std::swap(v.shape[nd - 1], v.shape[nd - 2]);
  std::swap(v.strides[nd - 1], v.strides[nd - 2]);
  return v;
}

TEST(CudaBlasLayout, TwoDimensionalAndTransposed) {
  std::vector<std::array<int64_t, 3>> sizes = {{3, 5, 7}, {1, 5, 7}, {3, 1, 7}, {3, 5, 1}, {1, 1, 1}, {1, 4, 1}, {6, 1, 1}};
  for (auto [M, K, N] : sizes) {
    std::string dims = " M=" + std::to_string(M) + " K=" + std::to_string(K) + " N=" + std::to_string(N);
    auto sa = storage(size_t(M * K), 1), sb = storage(size_t(K * N), 2);
    check(contiguous({M, K}), contiguous({K, N}), sa, sb, "contiguous" + dims, true);
    check(transposed({M, K}), contiguous({K, N}), sa, sb, "a.t()" + dims, true);
    check(contiguous({M, K}), transposed({K, N}), sa, sb, "b.t()" + dims, true);
    check(transposed({M, K}), transposed({K, N}), sa, sb, "a.t() and b.t()" + dims, true);
  }
}

TEST(CudaBlasLayout, SizeOneDimsWithOddStrides) {
  // A size-1 dim's stride means nothing (0 after expand, anything after a slice): the
  // leading dimension must still meet cuBLAS's bound and fit in 32 bits.
  auto sa = storage(64, 3), sb = storage(64, 4);
  View a{{1, 5}, {int64_t(1) << 40, 1}, 0};  // one row of a huge tensor
  View b{{5, 1}, {1, int64_t(1) << 40}, 0};  // one column
  check(a, b, sa, sb, "row @ column with huge size-1 strides", true);
  View a0{{1, 5}, {0, 1}, 0};
  View b0{{5, 3}, {3, 1}, 0};
  check(a0, b0, sa, sb, "row with stride 0", true);
  View c{{4, 1}, {1, 0}, 0};  // a column, its size-1 dim stride 0
  View d{{1, 3}, {0, 1}, 0};
  check(c, d, sa, sb, "outer product, K = 1", true);
}

TEST(CudaBlasLayout, SlicedViewsWithRowStrideAboveCols) {
  int64_t M = 4, K = 6, N = 5;
  auto sa = storage(size_t(M * (2 * K + 3)), 5), sb = storage(size_t(2 * K * (N + 5)), 6);
  View a{{M, K}, {2 * K + 3, 1}, 1};             // x[:, 1:K+1] of an (M, 2K+3) tensor
  View b{{K, N}, {2 * (N + 5), 1}, 2};           // y[::2, 2:N+2] of a (2K, N+5) tensor
  check(a, b, sa, sb, "sliced rows", true);
  View at{{M, K}, {1, M + 3}, 1};                // (K, M+3)[:, 1:M+1].t()
  View bt{{K, N}, {1, K + 2}, 0};                // (N, K+2)[:, :K].t()
  check(at, bt, sa, sb, "sliced transposes", true);
}

TEST(CudaBlasLayout, BatchedUniformAndBroadcast) {
  int64_t B = 3, M = 4, K = 5, N = 6;
  auto sa = storage(size_t(B * M * K), 7), sb = storage(size_t(B * K * N), 8);
  check(contiguous({B, M, K}), contiguous({B, K, N}), sa, sb, "bmm", true);
  check(transposed({B, M, K}), transposed({B, K, N}), sa, sb, "bmm of transposes", true);
  View b_bcast = contiguous({K, N});  // (K, N) expanded to (B, K, N)
  b_bcast.shape.insert(b_bcast.shape.begin(), B);
  b_bcast.strides.insert(b_bcast.strides.begin(), 0);
  check(contiguous({B, M, K}), b_bcast, sa, sb, "bmm with b broadcast (stride 0)", true);
  View a_bcast = transposed({M, K});
  a_bcast.shape.insert(a_bcast.shape.begin(), B);
  a_bcast.strides.insert(a_bcast.strides.begin(), 0);
  check(a_bcast, contiguous({B, K, N}), sa, sb, "bmm with a.t() broadcast", true);
  // 4-d batch (2, 3) stepping uniformly, and with a size-1 batch dim in between.
  auto sa4 = storage(size_t(6 * M * K), 9), sb4 = storage(size_t(6 * K * N), 10);
  check(contiguous({2, 3, M, K}), contiguous({2, 3, K, N}), sa4, sb4, "4-d batch", true);
  check(contiguous({2, 1, 3, M, K}), contiguous({2, 1, 3, K, N}), sa4, sb4, "5-d batch with a size-1 dim", true);
}

TEST(CudaBlasLayout, NonUniformBatchTakesOneCallPerMatrix) {
  int64_t B1 = 2, B2 = 3, M = 4, K = 5, N = 3;
  // a stored (B1, M, B2, K), permuted to (B1, B2, M, K): the batch does not step uniformly.
  View a{{B1, B2, M, K}, {M * B2 * K, K, B2 * K, 1}, 0};
  auto sa = storage(size_t(B1 * M * B2 * K), 11), sb = storage(size_t(B1 * B2 * K * N), 12);
  check(a, contiguous({B1, B2, K, N}), sa, sb, "permuted batch dim", false);
  // Broadcast batch (2, 1) x (1, 3): a (2, 3, M, K) strides (M*K, 0), b strides (0, K*N).
  View ab{{B1, B2, M, K}, {M * K, 0, K, 1}, 0};
  View bb{{B1, B2, K, N}, {0, K * N, N, 1}, 0};
  check(ab, bb, sa, sb, "batch (2, 1) @ (1, 3)", false);
}

TEST(CudaBlasLayout, RejectsLayoutsCublasCannotRead) {
  // Neither dim unit-stride: matmul makes such operands contiguous first.
  std::vector<int64_t> out{4, 3};
  GemmCall g = plan_gemm(out, 5, std::vector<int64_t>{10, 2}, std::vector<int64_t>{3, 1});
  EXPECT_FALSE(g.ok);
  EXPECT_NE(g.error.find("cuBLAS"), std::string::npos) << g.error;
  // Overlapping rows (row stride below the row length).
  g = plan_gemm(out, 5, std::vector<int64_t>{2, 1}, std::vector<int64_t>{3, 1});
  EXPECT_FALSE(g.ok);
  // A dim over cuBLAS's 32-bit sizes.
  std::vector<int64_t> wide{2, int64_t(1) << 31};
  g = plan_gemm(wide, 1, std::vector<int64_t>{1, 1}, std::vector<int64_t>{int64_t(1) << 31, 1});
  EXPECT_FALSE(g.ok);
  EXPECT_NE(g.error.find("32-bit"), std::string::npos) << g.error;
}

}  // namespace
