#include "opscope/kernels/cpu/matmul.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "opscope/core/error.h"
#include "opscope/kernels/cpu/gemm_bf16.h"
#include "opscope/kernels/cpu/gemv.h"
#include "opscope/kernels/cpu/half_rows.h"
#include "opscope/kernels/cpu/sgemm.h"
#include "opscope/kernels/cpu/strided.h"
#include "opscope/runtime/device.h"

namespace opscope::cpu_kernels {

namespace {

constexpr int64_t kSliceBlock = 64;                  // rows (or columns) of C per work unit
constexpr int64_t kMinFlopsPerCore = int64_t(1) << 21;  // below this a second core costs more than it helps
// gemv is bound by reading the weight (2 flops per element), so its share is in bytes: by
// flops a 1376x512 bf16 weight (1.4 MB, ~60 us on one core) stayed on one core.
constexpr int64_t kMinGemvBytesPerCore = int64_t(64) << 10;
// A gemm call packs its operands once per call: a chunk of one 64-column block repacks the
// same rows of A for each block (128x2048 by 2048x512 ran at 0.6x the rate of 256-column calls).
constexpr int64_t kMinBlocksPerCall = 4;

// How sgemm sees the last two dims of m.
std::optional<SgemmLayout> layout_of(const Tensor& m) {
  int n = m.ndim();
  return sgemm_layout(m.shape()[n - 2], m.shape()[n - 1], m.strides()[n - 2], m.strides()[n - 1]);
}

// One operand matrix: base pointer and element strides.
template <class T> struct Mat {
  const T* p;
  int64_t s_r, s_c;
};

// x (rows x cols) as f32 into out: row-major, or, when x is transposed (unit row stride,
// as linear's weight), as it lies (cols x rows, row-major), for sgemm to take transposed;
// returns whether it did the latter. Unit-stride rows convert as rows (half_rows.h: f16
// with the hardware's converts); loops over runtime strides do not vectorize.
// `ld`: the row stride of the latter (at least cols).
template <class T> bool to_f32_matrix(Mat<T> x, int64_t rows, int64_t cols, float* out, int64_t ld) {
  if (x.s_c != 1 && x.s_r == 1) {
    for (int64_t j = 0; j < cols; ++j) row_to_f32(x.p + j * x.s_c, out + j * rows, rows);
    return true;
  }
  for (int64_t i = 0; i < rows; ++i)
    if (x.s_c == 1) row_to_f32(x.p + i * x.s_r, out + i * ld, cols);
    else
      for (int64_t j = 0; j < cols; ++j) out[i * ld + j] = to_f32(x.p[i * x.s_r + j * x.s_c]);
  return false;
}

// C[m x n] (row stride ldc) = A[m x k] @ B[k x n] for 16-bit types: convert, sgemm, convert.
template <class T>
void gemm_lowp(Mat<T> a, Mat<T> b, T* c, int64_t ldc, int64_t m, int64_t n, int64_t k, std::vector<float>& buf) {
  const int64_t ldb = sgemm_plain_b_ld(n);  // b converted as it lies, if plain: rows sgemm reads well
  buf.resize(size_t(m * k + k * ldb + m * n));
  float* fa = buf.data();
  float* fb = fa + m * k;
  float* fc = fb + k * ldb;
  bool ta = to_f32_matrix(a, m, k, fa, k), tb = to_f32_matrix(b, k, n, fb, ldb);
  sgemm("matmul", ta, tb, m, n, k, fa, ta ? m : k, fb, tb ? k : ldb, 0.0f, fc, n);
  for (int64_t i = 0; i < m; ++i) row_from_f32(fc + i * n, c + i * ldc, n);
}

// Below this many multiply-adds a product converts to f32 for sgemm. oneDNN makes (jits) a
// kernel for each new shape, ~0.4 ms: decode's attention over a cache that grows a token a
// step is a new shape each step, and took 0.78 ms of a 7.8 ms bf16 token that way.
constexpr int64_t kMinNativeMacs = int64_t(1) << 18;

// C = A @ B in the 16-bit type itself, where the CPU multiplies it (bf16: gemm_bf16.h);
// false: the caller converts to f32.
template <class T> bool gemm_native(Mat<T>, Mat<T>, T*, int64_t, int64_t, int64_t, int64_t) { return false; }
bool gemm_native(Mat<bf16_t> a, Mat<bf16_t> b, bf16_t* c, int64_t ldc, int64_t m, int64_t n, int64_t k) {
  if (m * n * k < kMinNativeMacs) return false;
  return gemm_bf16(a.p, a.s_r, a.s_c, b.p, b.s_r, b.s_c, c, ldc, m, n, k);
}

// y[j] += bias[j]: gemv's outputs with a bias (f32 only: ops asks for no other).
inline void add_bias(float* y, const float* bias, int64_t n) {
  for (int64_t j = 0; j < n; ++j) y[j] += bias[j];
}
template <class T> void add_bias(T*, const float*, int64_t) {}

}  // namespace

bool blas_compatible(const Tensor& m) { return m.ndim() >= 2 && layout_of(m).has_value(); }

LaunchSpec matmul_spec(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor* bias) {
  if (bias && (out.dtype() != DType::f32 || bias->dtype() != DType::f32))
    fail("matmul", "internal: a bias in the launch needs f32 (got {} and {})", dtype_name(out.dtype()),
         dtype_name(bias->dtype()));
  const float* biasp = bias ? bias->data<float>() : nullptr;
  int nd = out.ndim(), bd = nd - 2;
  int64_t M = out.shape()[nd - 2], N = out.shape()[nd - 1], K = a.shape()[nd - 1];
  Shape batch = out.shape();
  Strides a_st = a.strides(), b_st = b.strides();
  int64_t B = 1;
  for (int d = 0; d < bd; ++d) B *= batch[d];
  // Slice the larger of M and N, so that a matrix-vector product still splits.
  bool by_rows = M >= N;
  int64_t extent = by_rows ? M : N, blocks = (extent + kSliceBlock - 1) / kSliceBlock;
  int64_t unit_flops = 2 * std::min(extent, kSliceBlock) * (by_rows ? N : M) * K;

  LaunchSpec spec;
  spec.name = fmt::format("matmul_{}", dtype_name(out.dtype()));
  spec.work = B * blocks;
  spec.grain = std::max<int64_t>(1, kMinFlopsPerCore / std::max<int64_t>(unit_flops, 1));
  spec.bytes = a.nbytes() + b.nbytes() + out.nbytes() + (bias ? bias->nbytes() : 0);
  spec.flops = 2 * B * M * N * K;
  // Runs of units within one batch become one gemm call: [lo, hi) rows (or columns).
  auto for_slices = [=](int64_t begin, int64_t end, auto&& gemm) {
    for (int64_t u = begin; u < end;) {
      int64_t bi = u / blocks, k0 = u % blocks, k1 = std::min(blocks, k0 + (end - u));
      int64_t lo = k0 * kSliceBlock, hi = std::min(extent, k1 * kSliceBlock);
      gemm(offset_of(bi, batch, a_st, bd), offset_of(bi, batch, b_st, bd), bi * M * N, lo, hi);
      u += k1 - k0;
    }
  };
  int64_t sam = a_st[nd - 2], sak = a_st[nd - 1], sbk = b_st[nd - 2], sbn = b_st[nd - 1];
  // One row of A (decode at batch 1): a matrix-vector product over B's columns, read once
  // as they lie (gemv.h). Columns of B contiguous along K are rows of a weight [N, K].
  const bool gemv_rows_of_b = M == 1 && (K == 1 || sbk == 1) && (N == 1 || sbn >= K);
  const int64_t ldw = N == 1 ? std::max<int64_t>(K, 1) : sbn;
  if (gemv_rows_of_b) {
    spec.name = fmt::format("gemv_{}", dtype_name(out.dtype()));
    const int64_t unit_bytes = std::min(extent, kSliceBlock) * K * int64_t(itemsize(out.dtype()));
    spec.grain = std::max<int64_t>(1, kMinGemvBytesPerCore / std::max<int64_t>(unit_bytes, 1));
    OPSCOPE_DISPATCH_FLOAT(out.dtype(), T, [&] {
      const T* ap = a.data<T>();
      const T* bp = b.data<T>();
      T* cp = out.data<T>();
      spec.body = [=](int64_t begin, int64_t end) {
        std::vector<float> xf(static_cast<size_t>(K));
        for_slices(begin, end, [&](int64_t ao, int64_t bo, int64_t co, int64_t lo, int64_t hi) {
          if (by_rows) lo = 0, hi = N;  // M = N = 1
          gemv_rows(bp + bo + lo * sbn, ldw, ap + ao, sak, cp + co + lo, hi - lo, K, xf.data());
          if (biasp) add_bias(cp + co + lo, biasp + lo, hi - lo);
        });
      };
    });
    return spec;
  }
  // Chunks of at least kMinBlocksPerCall blocks, while every core still gets one.
  const int64_t cores = std::max(1, out.device().num_cores());
  spec.grain = std::max(spec.grain, std::min(kMinBlocksPerCall, (spec.work + cores - 1) / cores));
  if (out.dtype() == DType::f32) {
    std::optional<SgemmLayout> oa = layout_of(a), ob = layout_of(b);
    if (!oa || !ob)
      fail("matmul", "internal: f32 operands with strides {} and {} that sgemm cannot read", a.strides().str(),
           b.strides().str());
    const SgemmLayout la = *oa, lb = *ob;
    const float* ap = a.data<float>();
    const float* bp = b.data<float>();
    float* cp = out.data<float>();
    spec.body = [=](int64_t begin, int64_t end) {
      for_slices(begin, end, [&](int64_t ao, int64_t bo, int64_t co, int64_t lo, int64_t hi) {
        const float* A = ap + ao;
        const float* Bm = bp + bo;
        float* C = cp + co;
        int64_t m = M, n = N;
        if (by_rows) A += lo * sam, C += lo * N, m = hi - lo;
        else Bm += lo * sbn, C += lo, n = hi - lo;
        if (biasp) {  // C starts as the bias; sgemm adds onto it (beta 1), while the slice is in cache
          const float* bias_cols = biasp + (by_rows ? 0 : lo);
          for (int64_t i = 0; i < m; ++i) std::memcpy(C + i * N, bias_cols, size_t(n) * sizeof(float));
        }
        int64_t ldb = lb.ld;
        if (!lb.trans) Bm = plain_b_for_sgemm(Bm, ldb, m, K, n);
        sgemm("matmul", la.trans, lb.trans, m, n, K, A, la.ld, Bm, ldb, biasp ? 1.0f : 0.0f, C, N);
      });
    };
    return spec;
  }
  OPSCOPE_DISPATCH_FLOAT(out.dtype(), T, [&] {
    const T* ap = a.data<T>();
    const T* bp = b.data<T>();
    T* cp = out.data<T>();
    spec.body = [=](int64_t begin, int64_t end) {
      std::vector<float> buf;
      for_slices(begin, end, [&](int64_t ao, int64_t bo, int64_t co, int64_t lo, int64_t hi) {
        Mat<T> A{ap + ao, sam, sak}, Bm{bp + bo, sbk, sbn};
        T* C = cp + co;
        int64_t m = M, n = N;
        if (by_rows) A.p += lo * sam, C += lo * N, m = hi - lo;
        else Bm.p += lo * sbn, C += lo, n = hi - lo;
        if (!gemm_native(A, Bm, C, N, m, n, K)) gemm_lowp(A, Bm, C, N, m, n, K, buf);
      });
    };
  });
  return spec;
}

}  // namespace opscope::cpu_kernels
