// softmax, rms_norm and layer_norm against their mathematical definitions in double.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <string>

#include "opscope/core/error.h"
#include "opscope/ops/batch_norm.h"
#include "opscope/ops/ops.h"

using namespace opscope;

namespace {

// Applies f to every row (last axis) of the row-major values v with row length n.
template <class F> std::vector<double> per_row(const std::vector<float>& v, int64_t n, F&& f) {
  std::vector<double> out(v.size());
  for (size_t r = 0; r * size_t(n) < v.size(); ++r) f(&v[r * size_t(n)], &out[r * size_t(n)]);
  return out;
}

std::vector<double> softmax_ref(const std::vector<float>& v, int64_t n) {
  return per_row(v, n, [n](const float* x, double* y) {
    double m = -INFINITY, s = 0;
    for (int64_t i = 0; i < n; ++i) m = std::max(m, double(x[i]));
    for (int64_t i = 0; i < n; ++i) s += std::exp(double(x[i]) - m);
    for (int64_t i = 0; i < n; ++i) y[i] = std::exp(double(x[i]) - m) / s;
  });
}

std::vector<double> rms_norm_ref(const std::vector<float>& v, int64_t n, const std::vector<float>& w, double eps) {
  return per_row(v, n, [&](const float* x, double* y) {
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += double(x[i]) * x[i];
    double r = 1.0 / std::sqrt(ss / double(n) + eps);
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * r * (w.empty() ? 1.0 : w[size_t(i)]);
  });
}

std::vector<double> layer_norm_ref(const std::vector<float>& v, int64_t n, const std::vector<float>& w,
                                   const std::vector<float>& b, double eps) {
  return per_row(v, n, [&](const float* x, double* y) {
    double mu = 0, var = 0;
    for (int64_t i = 0; i < n; ++i) mu += x[i];
    mu /= double(n);
    for (int64_t i = 0; i < n; ++i) var += (x[i] - mu) * (x[i] - mu);
    double r = 1.0 / std::sqrt(var / double(n) + eps);
    for (int64_t i = 0; i < n; ++i)
      y[i] = (x[i] - mu) * r * (w.empty() ? 1.0 : w[size_t(i)]) + (b.empty() ? 0.0 : b[size_t(i)]);
  });
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, double rtol, double atol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 10; ++i) {
    bool ok = std::isnan(want[i]) ? std::isnan(got[i]) : std::abs(got[i] - want[i]) <= atol + rtol * std::abs(want[i]);
    if (!ok) ++bad;
    EXPECT_TRUE(ok) << what << " at " << i << ": got " << got[i] << ", want " << want[i];
  }
}

template <class F> void expect_error(F&& f, const std::string& expected_prefix_or_message, bool exact = false) {
  try {
    f();
    ADD_FAILURE() << "no error; expected " << expected_prefix_or_message;
  } catch (const Error& e) {
    std::string msg = e.what();
    if (exact) EXPECT_EQ(msg, expected_prefix_or_message);
    else EXPECT_EQ(msg.rfind(expected_prefix_or_message, 0), 0u) << msg;
  }
}

// Moves `axis` of the row-major values to the end (for references along other axes).
std::vector<float> move_axis_last(const std::vector<float>& v, const Shape& s, int axis) {
  int64_t outer = 1, n = s[axis], inner = 1;
  for (int d = 0; d < axis; ++d) outer *= s[d];
  for (int d = axis + 1; d < s.size(); ++d) inner *= s[d];
  std::vector<float> out(v.size());
  size_t k = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      for (int64_t j = 0; j < n; ++j) out[k++] = v[size_t((o * n + j) * inner + i)];
  return out;
}

}  // namespace

TEST(Softmax, LastAxisOddSizes) {
  for (int64_t n : {1, 3, 33, 4097}) {
    Tensor x = randn({3, n}, 20 + uint64_t(n), DType::f32, nullptr, 0, 4);
    expect_close(softmax(x).to_float_vector(), softmax_ref(x.to_float_vector(), n), 1e-5, 1e-9,
                 "softmax rows of " + std::to_string(n));
  }
  Tensor y = randn({2, 3, 5, 7}, 21);
  expect_close(softmax(y, 3).to_float_vector(), softmax_ref(y.to_float_vector(), 7), 1e-5, 1e-9, "4-d, axis 3");
}

TEST(Softmax, OuterAxes) {
  Tensor x = randn({4, 300, 5}, 22, DType::f32, nullptr, 0, 3);
  std::vector<float> v = x.to_float_vector();
  for (int axis : {0, 1}) {
    std::vector<float> got = move_axis_last(softmax(x, axis).to_float_vector(), x.shape(), axis);
    expect_close(got, softmax_ref(move_axis_last(v, x.shape(), axis), x.shape()[axis]), 1e-5, 1e-9,
                 "axis " + std::to_string(axis));
  }
  // The negative axis and the default are the last axis.
  EXPECT_EQ(softmax(x, -1).to_float_vector(), softmax(x).to_float_vector());
}

TEST(Softmax, StableAndMasked) {
  // Large logits must not overflow; -inf entries get exactly 0.
  Tensor x = from_host({1000, 1001, 999, -INFINITY, 0, 0, -INFINITY, -INFINITY}, {2, 4});
  std::vector<float> y = softmax(x).to_float_vector();
  double e0 = std::exp(-1.0), e2 = std::exp(-2.0), s = e0 + 1 + e2;
  EXPECT_NEAR(y[0], e0 / s, 1e-6);
  EXPECT_NEAR(y[1], 1 / s, 1e-6);
  EXPECT_NEAR(y[2], e2 / s, 1e-6);
  EXPECT_EQ(y[3], 0.0f);
  EXPECT_FLOAT_EQ(y[4], 0.5f);
  EXPECT_EQ(y[6], 0.0f);
  // A NaN poisons its row only.
  std::vector<float> z = softmax(from_host({1, NAN, 2, 1, 2, 3}, {2, 3})).to_float_vector();
  EXPECT_TRUE(std::isnan(z[0]) && std::isnan(z[2]));
  EXPECT_FALSE(std::isnan(z[3]));
}

TEST(Softmax, ExpAcrossItsRangeAndAllMaskedRows) {
  // Softmax of {0, -t} is {1, e^-t} / (1 + e^-t): exercises the vectorized exp's range
  // reduction from t = 0 to the smallest normal float (e^-87.3); each entry within 2e-6
  // relative. Rows of 17 put some entries in the vector body and some in the tail.
  std::vector<float> v;
  for (int k = 0; k <= 87; ++k) {
    for (int i = 0; i < 17; ++i) v.push_back(i == 0 ? 0.0f : -float(k) - 0.37f * float(i) / 17.0f);
  }
  std::vector<float> y = softmax(from_host(v, {88, 17})).to_float_vector();
  std::vector<double> ref = softmax_ref(v, 17);
  for (size_t i = 0; i < y.size(); ++i) {
    if (ref[i] < 1.2e-38) continue;  // subnormal in torch; this kernel flushes below e^-87.3 to 0
    EXPECT_NEAR(y[i] / ref[i], 1.0, 2e-6) << "entry " << i << " x-max " << v[i];
  }
  // Below e^-87.3 the entry is 0 (torch: a subnormal under 1.2e-38), never negative or NaN.
  std::vector<float> tiny = softmax(from_host({0, -88, -100, -1e30f}, {1, 4})).to_float_vector();
  for (int i = 1; i < 4; ++i) EXPECT_TRUE(tiny[size_t(i)] >= 0.0f && tiny[size_t(i)] < 1.2e-38f) << i;
  // A row of all -inf is NaN everywhere, as in torch (0/0); the next row is unaffected.
  for (int64_t n : {3, 16, 37}) {
    std::vector<float> m(size_t(2 * n), -INFINITY);
    for (int64_t i = n; i < 2 * n; ++i) m[size_t(i)] = float(i % 5);
    std::vector<float> z = softmax(from_host(m, {2, n})).to_float_vector();
    for (int64_t i = 0; i < n; ++i) EXPECT_TRUE(std::isnan(z[size_t(i)])) << n << " " << i;
    expect_close(std::vector<float>(z.begin() + n, z.end()),
                 softmax_ref(std::vector<float>(m.begin() + n, m.end()), n), 1e-5, 1e-9, "row after -inf row");
  }
}

// A row whose x - max stays above -86.5 takes a shorter e^ (no clamps, 2^n added to the
// exponent bits; norm.cpp's kNormalSpread), any other row the full one. Rows on either side
// of that edge, in each dtype, with -inf and NaN among them, must give the same values.
TEST(Softmax, RowsEitherSideOfTheShortExpsRange) {
  const int64_t n = 40;  // two vectors and a tail under AVX-512, more under AVX2
  std::vector<float> v;
  for (float low : {-86.49f, -86.5f, -86.51f, -87.0f, -120.0f, -INFINITY})
    for (int64_t i = 0; i < n; ++i) v.push_back(i == 7 ? low : i == 30 ? 2.0f : -float(i % 9) * 0.3f);
  const int64_t rows = int64_t(v.size()) / n;
  for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
    Tensor x = from_host(v, {rows, n}).to(dt);
    std::vector<float> got = softmax(x).to_float_vector();
    std::vector<double> ref = softmax_ref(x.to_float_vector(), n);
    const double rtol = dt == DType::f32 ? 2e-6 : dt == DType::bf16 ? 4e-3 : 5e-4;
    for (size_t i = 0; i < got.size(); ++i) {
      if (ref[i] < 1.2e-38) {
        EXPECT_TRUE(got[i] >= 0.0f && got[i] < 1.2e-38f) << dtype_name(dt) << " " << i;
      } else if (dt != DType::f16 || ref[i] > 6.2e-5) {  // f16 subnormals: a fixed ulp
        EXPECT_NEAR(got[i] / ref[i], 1.0, rtol) << dtype_name(dt) << " " << i;
      }
    }
    // A NaN anywhere poisons its row only, in the short e^ as in the full one.
    std::vector<float> w = v;
    w[size_t(3)] = NAN;          // row 0: in range
    w[size_t(5 * n + 3)] = NAN;  // row 5: -inf, so out of range
    std::vector<float> z = softmax(from_host(w, {rows, n}).to(dt)).to_float_vector();
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_TRUE(std::isnan(z[size_t(i)]) && std::isnan(z[size_t(5 * n + i)])) << dtype_name(dt) << " " << i;
      EXPECT_FALSE(std::isnan(z[size_t(n + i)])) << dtype_name(dt) << " " << i;
    }
  }
}

// Lanes whose e^ rounds to 0 (-inf, a mask's -1e4, x - max below -104) skip the scaling that
// would underflow (norm.cpp's scale_lanes_from: an assist per vector on Intel cores). Those
// lanes must still be 0, a NaN must still poison its row, and the subnormal results just
// above them must stay (bf16 keeps f32's exponent range, so its outputs are subnormal too).
TEST(Softmax, SubnormalResultsKeptAndFarLanesZero) {
  const std::vector<float> row = {0.0f, -88.0f, -89.5f, -91.0f, -92.0f, -95.0f,  -99.0f,  -102.0f,
                                  -103.5f, -104.5f, -120.0f, -1e4f, -INFINITY, -3.0f, -0.5f, -97.0f, -101.0f};
  for (DType dt : {DType::f32, DType::bf16, DType::f16})
    for (int64_t reps : {1, 3}) {  // 17 lanes: a vector and a tail; 51: more vectors
      std::vector<float> v;
      for (int64_t r = 0; r < reps; ++r) v.insert(v.end(), row.begin(), row.end());
      const int64_t n = int64_t(v.size());
      Tensor x = from_host(v, {1, n}).to(dt);
      std::vector<float> got = softmax(x).to_float_vector();
      std::vector<double> ref = softmax_ref(x.to_float_vector(), n);
      const int least = dt == DType::f32 ? -149 : dt == DType::bf16 ? -133 : -24;
      const double ulp = std::ldexp(1.0, least);  // the subnormal spacing
      for (size_t i = 0; i < got.size(); ++i) {
        // within a subnormal ulp: e^ and the division each round once
        EXPECT_NEAR(got[i], ref[i], ulp + 4e-3 * ref[i]) << dtype_name(dt) << " x = " << v[i];
        if (v[i] < -104.0f) {
          EXPECT_EQ(got[i], 0.0f) << dtype_name(dt) << " x = " << v[i];
        }
      }
      v[5] = NAN;  // beside lanes that skip their scaling
      for (float z : softmax(from_host(v, {1, n}).to(dt)).to_float_vector()) {
        EXPECT_TRUE(std::isnan(z)) << dtype_name(dt);
      }
    }
}

TEST(Softmax, NonContiguousAnd16Bit) {
  Tensor base = randn({33, 17}, 23);
  Tensor t = base.transpose(0, 1);  // rows of 33 at stride 17
  expect_close(softmax(t).to_float_vector(), softmax_ref(t.to_float_vector(), 33), 1e-5, 1e-9, "transposed");
  for (DType dt : {DType::bf16, DType::f16}) {
    Tensor x = randn({5, 4097}, 24, dt, nullptr, 0, 3);
    Tensor y = softmax(x);
    EXPECT_EQ(y.dtype(), dt);
    expect_close(y.to_float_vector(), softmax_ref(x.to_float_vector(), 4097), dt == DType::bf16 ? 8e-3 : 1e-3, 1e-7,
                 std::string(dtype_name(dt)));
    std::vector<float> c = move_axis_last(softmax(x, 0).to_float_vector(), x.shape(), 0);
    expect_close(c, softmax_ref(move_axis_last(x.to_float_vector(), x.shape(), 0), 5),
                 dt == DType::bf16 ? 8e-3 : 1e-3, 1e-7, std::string(dtype_name(dt)) + " axis 0");
  }
}

// bf16 and f16 rows take a shorter exp than f32 (norm.cpp): each output must still be the
// exact softmax rounded to the dtype, give or take 1e-5 of it before the rounding, for rows
// around 0, 40 and 70. Constant rows are 1/n exactly, up to the dtype's largest values,
// which take the full e^ in bf16 (norm.cpp's kHalfFmaMax).
TEST(Softmax, HalfOutputsAreTheExactValueRounded) {
  for (DType dt : {DType::bf16, DType::f16})
  for (float shift : {0.0f, 40.0f, 70.0f}) {
    const int mantissa = dt == DType::bf16 ? 7 : 10;
    for (int64_t n : {7, 100, 4097}) {
      Tensor x = randn({6, n}, 25 + uint64_t(n), dt, nullptr, shift, 6);  // x - max reaches -50
      std::vector<float> got = softmax(x).to_float_vector();
      std::vector<double> ref = softmax_ref(x.to_float_vector(), n);
      int bad = 0;
      for (size_t i = 0; i < got.size() && bad < 5; ++i) {
        int e = std::max(std::ilogb(ref[i]), dt == DType::f16 ? -14 : -126);  // f16 subnormals: a fixed ulp
        double half_ulp = std::ldexp(0.5, e - mantissa);
        bool ok = std::abs(got[i] - ref[i]) <= half_ulp + 1e-5 * ref[i];
        bad += !ok;
        EXPECT_TRUE(ok) << dtype_name(dt) << " rows of " << n << " + " << shift << " at " << i << ": got " << got[i]
                        << ", exact " << ref[i];
      }
    }
  }
  for (DType dt : {DType::bf16, DType::f16})
  for (float v : {63.5f, 1000.0f, 65504.0f, -60000.0f, dt == DType::bf16 ? 1e30f : -65504.0f}) {
    std::vector<float> got = softmax(full({2, 4096}, v, dt)).to_float_vector();
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(got[i], 1.0f / 4096) << dtype_name(dt) << " a row of " << v << " at " << i;
  }
}

TEST(Softmax, BadInputAndEmpty) {
  expect_error([] { softmax(randn({2, 3}, 1), 2); }, "[softmax] axis 2 is out of range");
  expect_error([] { softmax(from_host({1, 2}, {2}, DType::i32)); }, "[softmax] x has dtype i32");
  EXPECT_EQ(softmax(empty({0, 5})).shape(), (Shape{0, 5}));
  EXPECT_EQ(softmax(from_host({3}, {})).item(), 1.0f);  // a scalar is a row of one
}

TEST(RmsNorm, MatchesDefinition) {
  for (int64_t n : {1, 3, 64, 4096, 4097}) {
    Tensor x = randn({5, n}, 30 + uint64_t(n), DType::f32, nullptr, 0.3f, 2.0f);
    Tensor w = randn({n}, 31);
    expect_close(rms_norm(x, w, 1e-6).to_float_vector(),
                 rms_norm_ref(x.to_float_vector(), n, w.to_float_vector(), 1e-6), 1e-5, 1e-6,
                 "rms_norm rows of " + std::to_string(n));
  }
  Tensor x3 = randn({2, 3, 40}, 32);
  Tensor w3 = randn({40}, 33);
  expect_close(rms_norm(x3, w3, 0.5).to_float_vector(), rms_norm_ref(x3.to_float_vector(), 40, w3.to_float_vector(), 0.5),
               1e-5, 1e-6, "3-d, large eps");
  // No weight: undefined means none.
  expect_close(rms_norm(x3, Tensor()).to_float_vector(), rms_norm_ref(x3.to_float_vector(), 40, {}, 1e-6), 1e-5,
               1e-6, "no weight");
}

TEST(RmsNorm, NonContiguousAnd16Bit) {
  Tensor base = randn({64, 9}, 34);
  Tensor t = base.transpose(0, 1);  // (9, 64) with strides (1, 9)
  Tensor w = randn({128}, 35).slice(0, 0, 128, 2);  // stride 2
  expect_close(rms_norm(t, w).to_float_vector(), rms_norm_ref(t.to_float_vector(), 64, w.to_float_vector(), 1e-6),
               1e-5, 1e-6, "transposed x, strided weight");
  for (DType dt : {DType::bf16, DType::f16}) {
    Tensor x = randn({7, 4096}, 36, dt);
    Tensor w16 = randn({4096}, 37, dt);
    Tensor y = rms_norm(x, w16);
    EXPECT_EQ(y.dtype(), dt);
    expect_close(y.to_float_vector(), rms_norm_ref(x.to_float_vector(), 4096, w16.to_float_vector(), 1e-6),
                 dt == DType::bf16 ? 8e-3 : 1e-3, 1e-3, std::string(dtype_name(dt)));
  }
}

TEST(RmsNorm, BadInput) {
  Tensor x = randn({2, 4096}, 38);
  expect_error([&] { rms_norm(x, randn({4095}, 1)); }, "[rms_norm] weight has shape (4095) but x's last axis is 4096",
               true);
  expect_error([&] { rms_norm(x, randn({1, 4096}, 1)); }, "[rms_norm] weight has shape (1, 4096)");
  expect_error([&] { rms_norm(x, randn({4096}, 1, DType::bf16)); }, "[rms_norm] weight has dtype bf16 but x has dtype f32",
               true);
  expect_error([&] { rms_norm(from_host({1}, {}), Tensor()); }, "[rms_norm] x is a scalar");
  expect_error([&] { rms_norm(from_host({1, 2}, {2}, DType::i32), Tensor()); }, "[rms_norm] x has dtype i32");
  EXPECT_EQ(rms_norm(empty({0, 16}), randn({16}, 1)).shape(), (Shape{0, 16}));
}

TEST(LayerNorm, MatchesDefinition) {
  for (int64_t n : {1, 3, 100, 4097}) {
    Tensor x = randn({4, n}, 40 + uint64_t(n), DType::f32, nullptr, 5.0f, 3.0f);  // offset mean: tests centering
    Tensor w = randn({n}, 41), b = randn({n}, 42);
    expect_close(layer_norm(x, w, b, 1e-5).to_float_vector(),
                 layer_norm_ref(x.to_float_vector(), n, w.to_float_vector(), b.to_float_vector(), 1e-5), 1e-4, 1e-4,
                 "layer_norm rows of " + std::to_string(n));
  }
  Tensor x = randn({3, 2, 50}, 43);
  Tensor w = randn({50}, 44), b = randn({50}, 45);
  std::vector<float> v = x.to_float_vector();
  expect_close(layer_norm(x, w, Tensor()).to_float_vector(), layer_norm_ref(v, 50, w.to_float_vector(), {}, 1e-5),
               1e-4, 1e-5, "weight only");
  expect_close(layer_norm(x, Tensor(), b).to_float_vector(), layer_norm_ref(v, 50, {}, b.to_float_vector(), 1e-5),
               1e-4, 1e-5, "bias only");
  expect_close(layer_norm(x, Tensor(), Tensor(), 0.1).to_float_vector(), layer_norm_ref(v, 50, {}, {}, 0.1), 1e-4,
               1e-5, "neither, eps 0.1");
}

TEST(LayerNorm, NonContiguousAnd16Bit) {
  Tensor t = randn({50, 6}, 46).transpose(0, 1);
  Tensor w = randn({50}, 47), b = randn({50}, 48);
  expect_close(layer_norm(t, w, b).to_float_vector(),
               layer_norm_ref(t.to_float_vector(), 50, w.to_float_vector(), b.to_float_vector(), 1e-5), 1e-4, 1e-5,
               "transposed");
  for (DType dt : {DType::bf16, DType::f16}) {
    Tensor x = randn({3, 4097}, 49, dt, nullptr, 2.0f, 1.0f);
    Tensor w16 = randn({4097}, 50, dt), b16 = randn({4097}, 51, dt);
    expect_close(layer_norm(x, w16, b16).to_float_vector(),
                 layer_norm_ref(x.to_float_vector(), 4097, w16.to_float_vector(), b16.to_float_vector(), 1e-5),
                 dt == DType::bf16 ? 8e-3 : 1e-3, 2e-2, std::string(dtype_name(dt)));
  }
}

TEST(LayerNorm, BadInput) {
  Tensor x = randn({2, 8}, 52);
  expect_error([&] { layer_norm(x, randn({8}, 1), randn({7}, 1)); }, "[layer_norm] bias has shape (7) but x's last axis is 8",
               true);
  expect_error([&] { layer_norm(x, randn({9}, 1), randn({8}, 1)); }, "[layer_norm] weight has shape (9)");
  expect_error([&] { layer_norm(Tensor(), Tensor(), Tensor()); }, "[layer_norm] x is undefined");
}

// batch_norm in eval against its definition per (n, c) plane, with and without weight and bias.
TEST(BatchNorm, MatchesDefinition) {
  Tensor x = randn({2, 3, 5, 7}, 60), m = randn({3}, 61), v = rand({3}, 62), w = randn({3}, 63), b = randn({3}, 64);
  std::vector<float> xv = x.to_float_vector(), mv = m.to_float_vector(), vv = v.to_float_vector(),
                     wv = w.to_float_vector(), bv = b.to_float_vector();
  std::vector<double> want(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) {
    size_t c = (i / 35) % 3;
    want[i] = (xv[i] - mv[c]) / std::sqrt(double(vv[c]) + 1e-3) * wv[c] + bv[c];
  }
  expect_close(batch_norm(x, m, v, w, b, 1e-3).to_float_vector(), want, 1e-5, 1e-5, "batch_norm");
  for (size_t i = 0; i < xv.size(); ++i) want[i] = (xv[i] - mv[(i / 35) % 3]) / std::sqrt(double(vv[(i / 35) % 3]) + 1e-5);
  expect_close(batch_norm(x, m, v, Tensor(), Tensor()).to_float_vector(), want, 1e-5, 1e-5, "no weight, no bias");
}

TEST(BatchNorm, BadInput) {
  Tensor x = randn({2, 4, 3}, 65), s = rand({4}, 66);
  expect_error([&] { batch_norm(x, rand({3}, 1), s, Tensor(), Tensor()); },
               "[batch_norm] running_mean has shape (3) but x (2, 4, 3) has 4 channels (axis 1)", true);
  expect_error([&] { batch_norm(x, s, Tensor(), Tensor(), Tensor()); }, "[batch_norm] running_var is undefined");
  expect_error([&] { batch_norm(randn({4}, 1), s, s, Tensor(), Tensor()); }, "[batch_norm] x has shape (4)");
  expect_error([&] { batch_norm(x, s, s, Tensor(), Tensor(), -1.0); }, "[batch_norm] eps is -1");
  expect_error([&] { batch_norm(x, s, s, randn({4, 1}, 1), Tensor()); }, "[batch_norm] weight has shape (4, 1)");
}

TEST(Norms, LargeOutputsStreamed) {
  // Outputs of 8 MiB and more are written with streaming stores; odd row lengths make
  // the rows start unaligned.
  Tensor x = randn({520, 4097}, 53, DType::f32, nullptr, 0.5f, 2.0f);
  Tensor w = randn({4097}, 54), b = randn({4097}, 55);
  std::vector<float> v = x.to_float_vector(), wv = w.to_float_vector(), bv = b.to_float_vector();
  expect_close(rms_norm(x, w).to_float_vector(), rms_norm_ref(v, 4097, wv, 1e-6), 1e-5, 1e-6, "large rms_norm");
  expect_close(layer_norm(x, w, b).to_float_vector(), layer_norm_ref(v, 4097, wv, bv, 1e-5), 1e-4, 1e-4,
               "large layer_norm");
  expect_close(softmax(x).to_float_vector(), softmax_ref(v, 4097), 1e-5, 1e-9, "large softmax");
  Tensor h = randn({1040, 4097}, 56, DType::bf16);
  Tensor hw = randn({4097}, 57, DType::bf16);
  expect_close(rms_norm(h, hw).to_float_vector(), rms_norm_ref(h.to_float_vector(), 4097, hw.to_float_vector(), 1e-6),
               8e-3, 1e-3, "large bf16 rms_norm");
}

// bf16 and f16 rows are read as f32 lanes and computed by the f32 kernels' arithmetic,
// so each result is the f32 op on the widened input, rounded once to the dtype (torch's
// definition for these dtypes): bit for bit, for odd row lengths (16-lane bodies and
// tails), transposed inputs, rows with -inf, NaN and values near the dtype's largest, and
// outputs large enough to be streamed.
TEST(Norms, HalfRowsAreTheF32KernelRoundedOnce) {
  auto same_bits = [](const Tensor& got, const Tensor& want, const std::string& what) {
    std::vector<float> g = got.to_float_vector(), w = want.to_float_vector();
    ASSERT_EQ(g.size(), w.size()) << what;
    int bad = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      bool ok = std::isnan(w[i]) ? std::isnan(g[i]) : std::bit_cast<uint32_t>(g[i]) == std::bit_cast<uint32_t>(w[i]);
      if (!ok && ++bad < 5) ADD_FAILURE() << what << ": element " << i << " is " << g[i] << ", want " << w[i];
    }
  };
  // softmax's halves take a shorter exp than f32's (norm.cpp): each output is the f32
  // kernel's value, give or take 1e-5 of it, rounded once (a 1-ulp difference in ~0.05%).
  auto rounded_once = [](const Tensor& got, const Tensor& f32, DType dt, const std::string& what) {
    std::vector<float> g = got.to_float_vector(), w = f32.to_float_vector();
    ASSERT_EQ(g.size(), w.size()) << what;
    const int mantissa = dt == DType::bf16 ? 7 : 10;
    int bad = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      double half_ulp = w[i] == 0 ? 0 : std::ldexp(0.5, std::max(std::ilogb(w[i]), dt == DType::f16 ? -14 : -126) - mantissa);
      bool ok = std::isnan(w[i]) ? std::isnan(g[i]) : std::abs(double(g[i]) - w[i]) <= half_ulp + 1e-5 * std::abs(w[i]);
      if (!ok && ++bad < 5) ADD_FAILURE() << what << ": element " << i << " is " << g[i] << ", f32 kernel " << w[i];
    }
  };
  for (DType dt : {DType::bf16, DType::f16}) {
    float big = dt == DType::bf16 ? 3e38f : 65504.f;
    for (int64_t n : {1, 15, 16, 17, 32, 33, 4097}) {
      std::string what = std::string(dtype_name(dt)) + " rows of " + std::to_string(n);
      std::vector<float> v = randn({6, n}, 60 + uint64_t(n), DType::f32, nullptr, 0.f, 3.f).to_float_vector();
      v[0] = -INFINITY;  // row 0: a masked entry
      for (int64_t i = 0; i < n; ++i) v[size_t(n + i)] = -INFINITY;  // row 1: all masked (NaN)
      v[size_t(2 * n)] = big;  // row 2: the largest values (softmax's max, layer_norm's mean)
      v[size_t(3 * n + n / 2)] = -big;
      v[size_t(5 * n + n / 3)] = NAN;  // row 5: a NaN, which every op spreads over its row
      Tensor x = from_host(v, {6, n}, dt), xf = x.to(DType::f32);
      Tensor w = randn({n}, 61, dt), b = randn({n}, 62, dt);
      rounded_once(softmax(x), softmax(xf), dt, "softmax " + what);
      Tensor finite = x.slice(0, 4, 6);  // rms_norm and layer_norm of rows without inf
      Tensor ff = finite.to(DType::f32);
      same_bits(rms_norm(finite, w), rms_norm(ff, w.to(DType::f32)).to(dt), "rms_norm " + what);
      same_bits(layer_norm(finite, w, b), layer_norm(ff, w.to(DType::f32), b.to(DType::f32)).to(dt),
                "layer_norm " + what);
      same_bits(layer_norm(finite, Tensor(), b), layer_norm(ff, Tensor(), b.to(DType::f32)).to(dt),
                "layer_norm, bias only, " + what);
    }
    Tensor t = randn({33, 17}, 63, dt).transpose(0, 1);  // rows of 33 at stride 17
    Tensor tf = t.to(DType::f32);
    rounded_once(softmax(t), softmax(tf), dt, "transposed softmax " + std::string(dtype_name(dt)));
    same_bits(rms_norm(t, Tensor()), rms_norm(tf, Tensor()).to(dt), "transposed rms_norm " + std::string(dtype_name(dt)));
    Tensor large = randn({1040, 4100}, 64, dt);  // 8 MiB and more: streamed, rows 8-byte aligned only
    rounded_once(softmax(large), softmax(large.to(DType::f32)), dt, "large softmax " + std::string(dtype_name(dt)));
  }
}
