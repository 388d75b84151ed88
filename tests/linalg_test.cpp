// matmul against a naive triple loop in double: 2-d, batched with broadcast batch dims,
// 1-d operands, transposed and strided inputs, 16-bit dtypes, bad input.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "opscope/core/error.h"
#include "opscope/kernels/cpu/gemm_bf16.h"
#include "opscope/kernels/cpu/matmul.h"
#include "opscope/kernels/cpu/sgemm.h"
#include "opscope/ops/ops.h"
#include "opscope/runtime/device.h"

using namespace opscope;

namespace {

// Naive reference for contiguous (batch, M, K) @ (batch, K, N) values, where the batch
// index of each operand comes from `a_of(b)` / `b_of(b)`.
template <class FA, class FB>
std::vector<double> naive(const std::vector<float>& a, const std::vector<float>& b, int64_t batches, int64_t M,
                          int64_t K, int64_t N, FA a_of, FB b_of) {
  std::vector<double> c(size_t(batches * M * N), 0.0);
  for (int64_t bi = 0; bi < batches; ++bi) {
    const float* A = &a[size_t(a_of(bi) * M * K)];
    const float* B = &b[size_t(b_of(bi) * K * N)];
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t p = 0; p < K; ++p) s += double(A[i * K + p]) * B[p * N + j];
        c[size_t((bi * M + i) * N + j)] = s;
      }
  }
  return c;
}

std::vector<double> naive2d(const Tensor& a, const Tensor& b) {
  int64_t M = a.shape()[0], K = a.shape()[1], N = b.shape()[1];
  auto same = [](int64_t) { return int64_t(0); };
  return naive(a.to_float_vector(), b.to_float_vector(), 1, M, K, N, same, same);
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, double rtol, double atol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 10; ++i) {
    bool ok = std::abs(got[i] - want[i]) <= atol + rtol * std::abs(want[i]);
    if (!ok) ++bad;
    EXPECT_TRUE(ok) << what << " at " << i << ": got " << got[i] << ", want " << want[i];
  }
}

template <class F> void expect_error(F&& f, const std::string& expected, bool exact = false) {
  try {
    f();
    ADD_FAILURE() << "no error; expected " << expected;
  } catch (const Error& e) {
    std::string msg = e.what();
    if (exact) EXPECT_EQ(msg, expected);
    else EXPECT_EQ(msg.rfind(expected, 0), 0u) << msg;
  }
}

}  // namespace

TEST(Matmul, TwoDimOddSizes) {
  struct Case { int64_t M, K, N; };
  for (Case c : {Case{1, 1, 1}, Case{3, 5, 4}, Case{33, 65, 17}, Case{1, 4097, 3}, Case{300, 64, 200}, Case{2, 64, 1000}}) {
    Tensor a = randn({c.M, c.K}, uint64_t(c.M * 7 + c.K)), b = randn({c.K, c.N}, uint64_t(c.N * 3 + c.K));
    Tensor y = matmul(a, b);
    ASSERT_EQ(y.shape(), (Shape{c.M, c.N}));
    expect_close(y.to_float_vector(), naive2d(a, b), 1e-4, 1e-4 * std::sqrt(double(c.K)),
                 fmt::format("({}, {}) @ ({}, {})", c.M, c.K, c.K, c.N));
  }
}

TEST(Matmul, BatchedWithBroadcast) {
  // (2, 3, 4, 5) @ (5, 6): b broadcast over both batch dims.
  Tensor a = randn({2, 3, 4, 5}, 60), b = randn({5, 6}, 61);
  Tensor y = matmul(a, b);
  ASSERT_EQ(y.shape(), (Shape{2, 3, 4, 6}));
  expect_close(y.to_float_vector(),
               naive(a.to_float_vector(), b.to_float_vector(), 6, 4, 5, 6, [](int64_t i) { return i; },
                     [](int64_t) { return int64_t(0); }),
               1e-5, 1e-5, "(2, 3, 4, 5) @ (5, 6)");
  // (2, 1, 4, 5) @ (3, 5, 6) -> (2, 3, 4, 6): each operand broadcast along a different dim.
  Tensor c = randn({2, 1, 4, 5}, 62), d = randn({3, 5, 6}, 63);
  Tensor z = matmul(c, d);
  ASSERT_EQ(z.shape(), (Shape{2, 3, 4, 6}));
  expect_close(z.to_float_vector(),
               naive(c.to_float_vector(), d.to_float_vector(), 6, 4, 5, 6, [](int64_t i) { return i / 3; },
                     [](int64_t i) { return i % 3; }),
               1e-5, 1e-5, "(2, 1, 4, 5) @ (3, 5, 6)");
  // Many small matrices: the work splits over batches.
  Tensor e = randn({64, 9, 7}, 64), f = randn({64, 7, 11}, 65);
  auto id = [](int64_t i) { return i; };
  expect_close(matmul(e, f).to_float_vector(), naive(e.to_float_vector(), f.to_float_vector(), 64, 9, 7, 11, id, id),
               1e-5, 1e-5, "64 batches");
}

TEST(Matmul, OneDimOperands) {
  Tensor v = randn({5}, 66), w = randn({5}, 67), m = randn({5, 3}, 68), n = randn({4, 5}, 69), bn = randn({2, 4, 5}, 70);
  auto zero = [](int64_t) { return int64_t(0); };
  auto id = [](int64_t i) { return i; };
  Tensor dot = matmul(v, w);
  EXPECT_EQ(dot.shape(), Shape{});
  expect_close(dot.to_float_vector(), naive(v.to_float_vector(), w.to_float_vector(), 1, 1, 5, 1, zero, zero), 1e-5,
               1e-5, "(5) @ (5)");
  Tensor vm = matmul(v, m);
  EXPECT_EQ(vm.shape(), Shape{3});
  expect_close(vm.to_float_vector(), naive(v.to_float_vector(), m.to_float_vector(), 1, 1, 5, 3, zero, zero), 1e-5,
               1e-5, "(5) @ (5, 3)");
  Tensor mv = matmul(n, v);
  EXPECT_EQ(mv.shape(), Shape{4});
  expect_close(mv.to_float_vector(), naive(n.to_float_vector(), v.to_float_vector(), 1, 4, 5, 1, zero, zero), 1e-5,
               1e-5, "(4, 5) @ (5)");
  Tensor bmv = matmul(bn, v);
  EXPECT_EQ(bmv.shape(), (Shape{2, 4}));
  expect_close(bmv.to_float_vector(), naive(bn.to_float_vector(), v.to_float_vector(), 2, 4, 5, 1, id, zero), 1e-5,
               1e-5, "(2, 4, 5) @ (5)");
}

TEST(Matmul, TransposedAndStridedInputs) {
  Tensor at = randn({65, 33}, 71).transpose(0, 1);  // (33, 65), passed as CblasTrans
  Tensor bt = randn({17, 65}, 72).transpose(0, 1);  // (65, 17)
  Tensor a = at.contiguous(), b = bt.contiguous();
  std::vector<double> want = naive2d(a, b);
  expect_close(matmul(at, b).to_float_vector(), want, 1e-4, 1e-4, "a transposed");
  expect_close(matmul(a, bt).to_float_vector(), want, 1e-4, 1e-4, "b transposed");
  expect_close(matmul(at, bt).to_float_vector(), want, 1e-4, 1e-4, "both transposed");
  // Rows with a leading dimension larger than the row: a column slice.
  Tensor wide = randn({33, 100}, 73);
  Tensor as = wide.slice(1, 10, 75);  // (33, 65), row stride 100
  expect_close(matmul(as, b).to_float_vector(), naive2d(as.contiguous(), b), 1e-4, 1e-4, "sliced columns");
  // b's rows 1 KiB apart (a multiple of 256 floats), as x @ w with a plain weight or
  // attention's att @ v: sgemm reads a padded copy of b; whole and as a column slice.
  Tensor a20 = randn({20, 65}, 78), b256 = randn({65, 256}, 79), b512 = randn({65, 512}, 80);
  expect_close(matmul(a20, b256).to_float_vector(), naive2d(a20, b256), 1e-4, 1e-4, "b rows 1 KiB apart");
  Tensor bs = b512.slice(1, 3, 300);
  expect_close(matmul(a20, bs).to_float_vector(), naive2d(a20, bs.contiguous()), 1e-4, 1e-4, "b rows 2 KiB apart");
  // A layout sgemm cannot take (step along the last dim) is copied first.
  Tensor stepped = randn({33, 130}, 74).slice(1, 0, 130, 2);
  expect_close(matmul(stepped, b).to_float_vector(), naive2d(stepped.contiguous(), b), 1e-4, 1e-4, "stepped columns");
  // Batched transposed: (B, N, K) viewed as (B, K, N), as in attention's q @ k^T.
  Tensor q = randn({3, 8, 16}, 75), k = randn({3, 10, 16}, 76);
  Tensor kt = k.transpose(1, 2);
  auto id = [](int64_t i) { return i; };
  expect_close(matmul(q, kt).to_float_vector(),
               naive(q.to_float_vector(), kt.contiguous().to_float_vector(), 3, 8, 16, 10, id, id), 1e-5, 1e-5,
               "batched q @ k^T");
  // An expanded (stride-0) batch operand.
  Tensor one = randn({1, 16, 10}, 77);
  Tensor ex = one.expand({3, 16, 10});
  expect_close(matmul(q, ex).to_float_vector(),
               naive(q.to_float_vector(), one.to_float_vector(), 3, 8, 16, 10, id, [](int64_t) { return int64_t(0); }),
               1e-5, 1e-5, "expanded batch");
}

TEST(Matmul, SixteenBitTypes) {
  for (DType dt : {DType::bf16, DType::f16}) {
    Tensor a = randn({37, 70}, 78, dt), b = randn({70, 29}, 79, dt);
    Tensor y = matmul(a, b);
    EXPECT_EQ(y.dtype(), dt);
    double rtol = dt == DType::bf16 ? 1e-2 : 2e-3;
    // The reference sees the same rounded inputs; only the output rounding differs.
    expect_close(y.to_float_vector(), naive2d(a, b), rtol, 0.05, std::string(dtype_name(dt)));
    Tensor at = a.transpose(0, 1).contiguous().transpose(0, 1);  // same values, transposed layout
    expect_close(matmul(at, b).to_float_vector(), naive2d(a, b), rtol, 0.05, std::string(dtype_name(dt)) + " transposed");
    // Transposed operands are converted as they lie and passed to sgemm transposed.
    Tensor bt = b.transpose(0, 1).contiguous().transpose(0, 1);
    expect_close(matmul(a, bt).to_float_vector(), naive2d(a, b), rtol, 0.05, std::string(dtype_name(dt)) + " b transposed");
    expect_close(matmul(at, bt).to_float_vector(), naive2d(a, b), rtol, 0.05, std::string(dtype_name(dt)) + " both");
    // linear's layout, x @ w^T, with N > M so that the launch splits by columns of w^T.
    Tensor x = randn({8, 70}, 82, dt), w = randn({300, 70}, 83, dt);
    expect_close(matmul(x, w.transpose(0, 1)).to_float_vector(), naive2d(x, w.transpose(0, 1).contiguous()), rtol, 0.05,
                 std::string(dtype_name(dt)) + " x @ w^T");
    // A plain b whose rows, converted, would lie 1 KiB apart: converted to padded rows.
    Tensor w512 = randn({70, 512}, 84, dt);
    expect_close(matmul(x, w512).to_float_vector(), naive2d(x, w512), rtol, 0.05,
                 std::string(dtype_name(dt)) + " x @ w, 512 columns");
    Tensor ab = randn({2, 1, 6, 5}, 80, dt), bb = randn({3, 5, 4}, 81, dt);
    expect_close(matmul(ab, bb).to_float_vector(),
                 naive(ab.to_float_vector(), bb.to_float_vector(), 6, 6, 5, 4, [](int64_t i) { return i / 3; },
                       [](int64_t i) { return i % 3; }),
                 rtol, 0.05, std::string(dtype_name(dt)) + " batched");
  }
}

// One row of A against a weight's rows (decode at batch 1: x @ w^T, q @ k^T): a
// matrix-vector product that reads each weight once (kernels/cpu/gemv), in every dtype,
// with the vector's tail (K not a multiple of 16), strided x, and a weight whose rows are
// longer than K. Other layouts stay sgemm calls.
TEST(Matmul, OneRowAgainstAWeightIsAMatrixVectorProduct) {
  for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
    double rtol = dt == DType::f32 ? 1e-5 : dt == DType::bf16 ? 1e-2 : 2e-3, atol = dt == DType::f32 ? 1e-4 : 0.05;
    std::string name(dtype_name(dt));
    for (int64_t K : {1, 15, 16, 17, 70, 100, 2049})  // bf16 takes 64 a step: tails of 1-63
      for (int64_t N : {1, 3, 7, 300}) {                // and four rows at a time
        Tensor x = randn({1, K}, uint64_t(K), dt), w = randn({N, K}, uint64_t(N * 7 + K), dt);
        Tensor wt = w.transpose(0, 1);
        Tensor y = matmul(x, wt);
        ASSERT_EQ(y.shape(), (Shape{1, N}));
        expect_close(y.to_float_vector(), naive2d(x, wt.contiguous()), rtol, atol * std::sqrt(double(K)),
                     fmt::format("{} (1, {}) @ ({}, {})^T", name, K, N, K));
      }
    // x strided along K (a column of a matrix), rows of w longer than K (a slice).
    Tensor xs = randn({70, 3}, 90, dt).slice(1, 1, 2).transpose(0, 1);  // (1, 70), stride 3
    Tensor ws = randn({40, 80}, 91, dt).slice(1, 5, 75);                  // (40, 70), row stride 80
    expect_close(matmul(xs, ws.transpose(0, 1)).to_float_vector(),
                 naive2d(xs.contiguous(), ws.contiguous().transpose(0, 1).contiguous()), rtol, atol * 9,
                 name + " strided x, sliced w");
    // Decode attention, q @ k^T per head.
    Tensor q = randn({3, 1, 16}, 92, dt), k = randn({3, 10, 16}, 93, dt);
    Tensor kt = k.transpose(1, 2);
    auto id = [](int64_t i) { return i; };
    expect_close(matmul(q, kt).to_float_vector(),
                 naive(q.to_float_vector(), kt.contiguous().to_float_vector(), 3, 1, 16, 10, id, id), rtol, atol * 4,
                 name + " batched q @ k^T");
    // The routing: only the decode shape takes the matrix-vector kernel.
    Tensor out = empty({1, 300}, dt);
    Tensor x1 = randn({1, 70}, 94, dt), w1 = randn({300, 70}, 95, dt);
    EXPECT_EQ(cpu_kernels::matmul_spec(out, x1, w1.transpose(0, 1)).name, "gemv_" + name);
    Tensor out2 = empty({2, 300}, dt), x2 = randn({2, 70}, 96, dt);
    EXPECT_EQ(cpu_kernels::matmul_spec(out2, x2, w1.transpose(0, 1)).name, "matmul_" + name);
    Tensor b_rows = randn({70, 300}, 97, dt);  // (K, N) row-major: columns of B are not rows
    EXPECT_EQ(cpu_kernels::matmul_spec(out, x1, b_rows).name, "matmul_" + name);
  }
}

// addmm's bias in the matmul's launch: matmul then add within rounding (sgemm sums onto
// the bias, so the order of the additions differs; torch's addmm does the same) on every
// path: row slices, column slices (N > M), the matrix-vector
// product, batched, a transposed weight; and a bias the launch cannot take (2-d,
// strided, bf16, an empty sum) still gives matmul then add.
TEST(Matmul, ABiasIsAddedInTheSameLaunch) {
  struct Case { Shape a, b; };
  for (Case c : {Case{{33, 65}, {65, 17}}, Case{{2, 64}, {64, 1000}}, Case{{1, 70}, {70, 300}}, Case{{3, 5, 8}, {8, 6}},
                 Case{{300, 64}, {64, 200}}}) {
    Tensor a = randn(c.a, 11), b = randn(c.b, 12), bias = randn({c.b.back()}, 13);
    Tensor want = add(matmul(a, b), bias), got = matmul(a, b, bias);
    ASSERT_EQ(got.shape(), want.shape());
    std::vector<float> w = want.to_float_vector();
    expect_close(got.to_float_vector(), std::vector<double>(w.begin(), w.end()), 1e-5, 1e-5,
                 a.shape().str() + " @ " + b.shape().str());
  }
  Tensor x = randn({1, 70}, 14), w = randn({300, 70}, 15), bias = randn({300}, 16);  // decode: gemv over w's rows
  // gemv adds the bias to its finished sums: the same additions as matmul then add.
  EXPECT_EQ(matmul(x, w.transpose(0, 1), bias).to_float_vector(), add(matmul(x, w.transpose(0, 1)), bias).to_float_vector());
  Tensor out = empty({1, 300});
  EXPECT_EQ(cpu_kernels::matmul_spec(out, x, w.transpose(0, 1), &bias).name, "gemv_f32");

  Tensor a = randn({4, 8}, 17), b = randn({8, 6}, 18);
  for (const Tensor& other : {randn({4, 6}, 19), randn({6, 2}, 20).slice(1, 0, 1).reshape({6}), randn({6}, 21, DType::bf16)}) {
    Tensor bb = other.dtype() == DType::bf16 ? b.to(DType::bf16) : b, aa = other.dtype() == DType::bf16 ? a.to(DType::bf16) : a;
    EXPECT_EQ(matmul(aa, bb, other).to_float_vector(), add(matmul(aa, bb), other).to_float_vector()) << other.shape().str();
  }
  Tensor empty_k = matmul(empty({3, 0}), empty({0, 5}), randn({5}, 22));
  EXPECT_EQ(empty_k.to_float_vector(), add(matmul(empty({3, 0}), empty({0, 5})), randn({5}, 22)).to_float_vector());
}

// A matrix-vector product reads its weight once, so it shares out by bytes, not flops: a
// small model's 1376x512 bf16 projection (1.4 MB) splits into chunks of ~64 KB, which the
// cores share (by flops, 2 MFLOP stayed one chunk, on one core).
TEST(Matmul, GemvSharesOutItsWeightByBytes) {
  Tensor x = randn({1, 512}, 34, DType::bf16), w = randn({1376, 512}, 35, DType::bf16), out = empty({1, 1376}, DType::bf16);
  LaunchSpec spec = cpu_kernels::matmul_spec(out, x, w.transpose(0, 1));
  ASSERT_EQ(spec.name, "gemv_bf16");
  EXPECT_EQ(spec.work, 22);  // 1376 rows, 64 a block of 64 KB
  EXPECT_EQ(spec.grain, 1);
  Tensor x32 = randn({1, 64}, 36), w32 = randn({4096, 64}, 37), out32 = empty({1, 4096});
  LaunchSpec narrow = cpu_kernels::matmul_spec(out32, x32, w32.transpose(0, 1));
  EXPECT_EQ(narrow.work, 64);
  EXPECT_EQ(narrow.grain, 4) << "blocks of 16 KB go four to a chunk";
}

// Each sgemm call packs its operands: a core given one 64-column block at a time repacks the
// same rows of A for every block. A launch's chunks span at least four blocks while each core
// still gets work, and a product of only two blocks still splits.
TEST(Matmul, ChunksSpanSeveralBlocksWhileEveryCoreGetsOne) {
  const int64_t cores = cpu().num_cores();
  Tensor a = randn({128, 2048}, 30), w = randn({512, 2048}, 31), out = empty({128, 512});
  LaunchSpec spec = cpu_kernels::matmul_spec(out, a, w.transpose(0, 1));
  EXPECT_EQ(spec.work, 8);  // 512 columns, 64 a block
  EXPECT_EQ(spec.grain, std::min<int64_t>(4, (8 + cores - 1) / cores));
  Tensor small = empty({128, 128}), a2 = randn({128, 512}, 32), b2 = randn({512, 128}, 33);
  LaunchSpec two = cpu_kernels::matmul_spec(small, a2, b2);
  EXPECT_EQ(two.work, 2);
  EXPECT_LE(two.grain, std::max<int64_t>(1, 2 / cores)) << "two blocks on " << cores << " cores";
  // The chunked launch still computes the product.
  expect_close(matmul(a, w.transpose(0, 1)).to_float_vector(), naive2d(a, w.transpose(0, 1).contiguous()), 1e-5,
               1e-3, "128x2048 @ 2048x512");
}

// bf16 products go to oneDNN's bf16 matmul where the CPU has AVX512-BF16 (gemm_bf16.h):
// row-major and transposed B, a strided A; each within bf16 rounding of the f32 product,
// and the matmul op over it too.
TEST(Matmul, Bf16ProductsUseTheCpusBf16DotProducts) {
  const bool native = __builtin_cpu_supports("avx512bf16");
  const int64_t m = 40, n = 72, k = 96;
  Tensor a = randn({m, 2 * k}, 40, DType::bf16).slice(1, 0, k), w = randn({n, k}, 41, DType::bf16);
  for (bool transposed : {true, false}) {
    Tensor b = transposed ? w.transpose(0, 1) : w.transpose(0, 1).contiguous();  // (k, n)
    Tensor c = empty({m, n}, DType::bf16);
    // gemm_bf16 runs here, on the host: the device's queued randn and contiguous must be done.
    cpu().synchronize();
    bool took = cpu_kernels::gemm_bf16(a.data<bf16_t>(), a.strides()[0], a.strides()[1], b.data<bf16_t>(),
                                       b.strides()[0], b.strides()[1], c.data<bf16_t>(), n, m, n, k);
    if (native) {
      EXPECT_TRUE(took) << "transposed " << transposed;
    }
    std::vector<double> want = naive2d(a.contiguous(), b.contiguous());
    if (took) expect_close(c.to_float_vector(), want, 1e-2, 0.05 * std::sqrt(double(k)), "gemm_bf16");
    expect_close(matmul(a, b).to_float_vector(), want, 1e-2, 0.05 * std::sqrt(double(k)), "matmul bf16");
  }
}

TEST(Matmul, EmptyDims) {
  Tensor y = matmul(empty({3, 0}), empty({0, 4}));  // K = 0: a sum of nothing
  EXPECT_EQ(y.shape(), (Shape{3, 4}));
  EXPECT_EQ(y.to_float_vector(), std::vector<float>(12, 0.0f));
  EXPECT_EQ(matmul(empty({0, 5}), randn({5, 4}, 1)).shape(), (Shape{0, 4}));
  EXPECT_EQ(matmul(randn({2, 0, 5}, 1), randn({5, 4}, 1)).shape(), (Shape{2, 0, 4}));
}

TEST(Matmul, BadInput) {
  expect_error([] { matmul(randn({2, 3}, 1), randn({4, 5}, 1)); }, "[matmul] shapes (2, 3) and (4, 5): inner dims 3 and 4 differ",
               true);
  expect_error([] { matmul(randn({2, 3, 4}, 1), randn({5, 4, 6}, 1)); },
               "[matmul] shapes (2, 3, 4) and (5, 4, 6): batch dims (2) and (5) do not broadcast", true);
  expect_error([] { matmul(randn({3}, 1), randn({4}, 1)); }, "[matmul] shapes (3) and (4): inner dims 3 and 4 differ",
               true);
  expect_error([] { matmul(randn({2, 3}, 1), randn({3, 2}, 1, DType::bf16)); }, "[matmul] dtypes f32 and bf16 differ");
  expect_error([] { matmul(from_host({1, 2}, {1, 2}, DType::i32), from_host({1, 2}, {2, 1}, DType::i32)); },
               "[matmul] dtype i32 is not supported");
  expect_error([] { matmul(from_host({1}, {}), randn({1}, 1)); }, "[matmul] shapes () and (1)");
  expect_error([] { matmul(Tensor(), randn({1}, 1)); }, "[matmul] an operand is undefined");
}

// sgemm (kernels/cpu/sgemm.h): operands oneDNN refuses get an error that names the op.
TEST(Sgemm, RefusedOperandsNameTheOp) {
  std::vector<float> a(4, 1.0f), b(4, 1.0f), c(4);
  expect_error([&] { cpu_kernels::sgemm("matmul", false, false, 2, 2, 2, a.data(), 1, b.data(), 2, 0.0f, c.data(), 2); },
               "[matmul] sgemm of 2x2 by 2x2 failed in oneDNN");
}

// The device's cores are the parallelism: a matmul split across them starts no threads of
// oneDNN's own (an OpenMP team started by a pinned core would share that core's CPU).
TEST(Sgemm, DeviceCoresStartNoThreadsOfTheirOwn) {
  auto threads = [] {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
    return n;
  };
  add(ones({8}), ones({8})).to_float_vector();  // the device's cores are running
  const size_t before = threads();
  Tensor a = randn({512, 512}, 1), b = randn({512, 512}, 2);
  std::vector<float> c = matmul(a, b).to_float_vector();
  ASSERT_EQ(c.size(), size_t(512 * 512));
  EXPECT_EQ(threads(), before);
}

// exit() while the device's cores still run queued matmuls: exit destroys oneDNN's statics,
// and a core inside oneDNN then read freed memory (AddressSanitizer saw it every time). The
// device's exit drain, registered after oneDNN's first call, waits for the queued work
// first; the process exits cleanly. (A first call racing exit itself is not covered: the
// child makes one before it queues.)
TEST(SgemmDeathTest, ExitWithQueuedMatmulsIsClean) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process: the device's threads do not survive fork()
  EXPECT_EXIT(
      {
        Tensor x = randn({512, 512}, 3);
        matmul(x, x).to_float_vector();  // oneDNN's first call, finished
        Tensor y = x;
        for (int i = 0; i < 40; ++i) y = mul(matmul(y, x), 1e-2);
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}
