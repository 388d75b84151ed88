// Reductions against a double-precision reference: every path (rows, split rows,
// columns, strided), keepdim, negative axes, non-contiguous views, 16-bit dtypes,
// integers, empty reductions and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "opscope/core/error.h"
#include "opscope/ops/ops.h"

using namespace opscope;

namespace {

enum class Kind { sum, mean, max, min, var };

// Reference over the row-major `v` of `shape`; out is row-major over the kept dims.
std::vector<double> reference(Kind k, const std::vector<float>& v, const Shape& shape, std::vector<int> axes,
                              int64_t correction = 1) {
  int nd = shape.size();
  if (axes.empty())
    for (int d = 0; d < nd; ++d) axes.push_back(d);
  std::vector<bool> red(size_t(nd), false);
  for (int a : axes) red[size_t(a)] = true;
  int64_t kept = 1;
  for (int d = 0; d < nd; ++d)
    if (!red[size_t(d)]) kept *= shape[d];
  auto out_index = [&](int64_t i) {
    int64_t o = 0, mult = 1;
    for (int d = nd - 1; d >= 0; --d) {
      int64_t idx = i % shape[d];
      i /= shape[d];
      if (!red[size_t(d)]) o += idx * mult, mult *= shape[d];
    }
    return o;
  };
  std::vector<double> acc(size_t(kept), k == Kind::max ? -INFINITY : k == Kind::min ? INFINITY : 0.0);
  std::vector<int64_t> cnt(size_t(kept), 0);
  for (size_t i = 0; i < v.size(); ++i) {
    size_t o = size_t(out_index(int64_t(i)));
    double x = v[i];
    cnt[o]++;
    if (k == Kind::max) acc[o] = std::isnan(x) || std::isnan(acc[o]) ? NAN : std::max(acc[o], x);
    else if (k == Kind::min) acc[o] = std::isnan(x) || std::isnan(acc[o]) ? NAN : std::min(acc[o], x);
    else acc[o] += x;
  }
  if (k == Kind::mean || k == Kind::var)
    for (size_t o = 0; o < acc.size(); ++o) acc[o] /= double(cnt[o]);
  if (k == Kind::var) {
    std::vector<double> m2(acc.size(), 0.0);
    for (size_t i = 0; i < v.size(); ++i) {
      size_t o = size_t(out_index(int64_t(i)));
      m2[o] += (v[i] - acc[o]) * (v[i] - acc[o]);
    }
    for (size_t o = 0; o < acc.size(); ++o)
      acc[o] = cnt[o] - correction <= 0 ? NAN : m2[o] / double(cnt[o] - correction);
  }
  return acc;
}

Tensor run(Kind k, const Tensor& x, const std::vector<int64_t>& axes, bool keepdim = false, int64_t correction = 1) {
  switch (k) {
    case Kind::sum: return sum(x, axes, keepdim);
    case Kind::mean: return mean(x, axes, keepdim);
    case Kind::max: return max(x, axes, keepdim);
    case Kind::min: return min(x, axes, keepdim);
    case Kind::var: return var(x, axes, keepdim, correction);
  }
  return {};
}

const char* kind_name(Kind k) {
  static const char* names[] = {"sum", "mean", "max", "min", "var"};
  return names[int(k)];
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, double rtol, double atol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " at " << i << ": got " << got[i] << ", want NaN";
      continue;
    }
    EXPECT_NEAR(got[i], want[i], atol + rtol * std::abs(want[i])) << what << " at " << i;
  }
}

// Checks op(x, axes) for the five value reductions against the reference of x's values.
void check_all(const Tensor& x, const std::vector<int64_t>& axes, double rtol, double atol, const std::string& what) {
  std::vector<float> v = x.to_float_vector();
  std::vector<int> norm;
  for (int64_t a : axes) norm.push_back(int(a < 0 ? a + x.ndim() : a));
  for (Kind k : {Kind::sum, Kind::mean, Kind::max, Kind::min, Kind::var}) {
    Tensor y = run(k, x, axes);
    expect_close(y.to_float_vector(), reference(k, v, x.shape(), norm), rtol, atol,
                 what + " " + kind_name(k) + " over " + std::to_string(axes.size()) + " axes");
  }
}

template <class F> void expect_error(F&& f, const std::string& prefix, const std::string& contains) {
  try {
    f();
    ADD_FAILURE() << "no error; expected " << prefix << " ... " << contains;
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind(prefix, 0), 0u) << msg;
    EXPECT_NE(msg.find(contains), std::string::npos) << msg;
  }
}

}  // namespace

TEST(Reduce, RowsOfOddLengths) {
  for (int64_t n : {1, 3, 31, 32, 33, 4097}) {
    Tensor x = randn({5, n}, 100 + uint64_t(n));
    check_all(x, {-1}, 1e-5, 1e-5, "rows of " + std::to_string(n));
    check_all(x, {1}, 1e-5, 1e-5, "rows of " + std::to_string(n));
  }
}

// bf16 / f16 rows are summed in f32, lane for lane as f32 rows: the result is the f32
// reduction of the same values, rounded once to the input's dtype.
TEST(Reduce, HalfRowsReduceAsTheirF32Values) {
  for (DType dt : {DType::bf16, DType::f16})
    for (int64_t n : {1, 3, 31, 32, 33, 4097}) {
      Tensor x = randn({5, n}, 200 + uint64_t(n), dt), xf = x.to(DType::f32);
      std::string what = std::string(dtype_name(dt)) + " rows of " + std::to_string(n);
      EXPECT_EQ(sum(x, {-1}).to_float_vector(), sum(xf, {-1}).to(dt).to_float_vector()) << "sum, " << what;
      EXPECT_EQ(mean(x, {-1}).to_float_vector(), mean(xf, {-1}).to(dt).to_float_vector()) << "mean, " << what;
      if (n > 1) {
        EXPECT_EQ(var(x, {-1}).to_float_vector(), var(xf, {-1}).to(dt).to_float_vector()) << "var, " << what;
      }
    }
}

// A bf16 row's sum folds its 32 lane sums in the order the f32 row's does, although the
// kernel reads bf16 as even and odd lanes (bf16_even_odd.h): with 2^24 in lane 0 and -2^24 in
// lane 2, the ones of lanes 1, 3, 4, ... count only after the two cancel (29 in order; 30 if
// the even lanes were folded first).
TEST(Reduce, Bf16RowSumsFoldTheirLanesInOrder) {
  for (int64_t blocks : {1, 3}) {
    std::vector<float> v(size_t(32 * blocks), 0.0f);
    for (int64_t i = 0; i < 32; ++i) v[size_t(i)] = i == 0 ? 16777216.0f : i == 2 ? -16777216.0f : 1.0f;
    Tensor x = from_host(v, {1, 32 * blocks}, DType::bf16);
    EXPECT_EQ(sum(x, {-1}).to_float_vector(), std::vector<float>{29.0f}) << blocks << " blocks of 32";
    EXPECT_EQ(sum(x, {-1}).to_float_vector(), sum(x.to(DType::f32), {-1}).to(DType::bf16).to_float_vector());
  }
}

TEST(Reduce, ColumnsOfOuterAxes) {
  check_all(randn({4097, 3}, 1), {0}, 1e-5, 1e-4, "(4097, 3) axis 0");
  check_all(randn({7, 300}, 2), {0}, 1e-5, 1e-5, "(7, 300) axis 0");
  check_all(randn({5, 33, 260}, 3), {1}, 1e-5, 1e-5, "(5, 33, 260) axis 1");
  check_all(randn({4, 6, 5, 3}, 4), {0, 1}, 1e-5, 1e-5, "(4, 6, 5, 3) axes 0, 1");
}

TEST(Reduce, SeveralAxesAndAll) {
  Tensor x = randn({2, 3, 5, 7}, 5);
  std::vector<std::vector<int64_t>> cases = {{}, {0}, {2}, {3}, {0, 2}, {1, 3}, {3, 0}, {-1, -2}, {0, 1, 2, 3}, {1, 2}};
  for (const auto& axes : cases) check_all(x, axes, 1e-5, 1e-5, "(2, 3, 5, 7)");
}

TEST(Reduce, KeepdimShapes) {
  Tensor x = randn({2, 3, 4}, 6);
  EXPECT_EQ(sum(x, {1}, true).shape(), (Shape{2, 1, 4}));
  EXPECT_EQ(sum(x, {1}).shape(), (Shape{2, 4}));
  EXPECT_EQ(mean(x, {}, true).shape(), (Shape{1, 1, 1}));
  EXPECT_EQ(mean(x).shape(), Shape{});
  EXPECT_EQ(max(x, {-1, 0}, true).shape(), (Shape{1, 3, 1}));
  EXPECT_EQ(argmax(x, -2, true).shape(), (Shape{2, 1, 4}));
  EXPECT_EQ(argmax(x, -2).shape(), (Shape{2, 4}));
  // keepdim does not change the values
  std::vector<float> a = var(x, {0, 2}, true).to_float_vector(), b = var(x, {0, 2}).to_float_vector();
  EXPECT_EQ(a, b);
}

TEST(Reduce, NonContiguousViews) {
  Tensor base = randn({33, 65}, 7);
  Tensor t = base.transpose(0, 1);  // (65, 33), strides (1, 65)
  check_all(t, {1}, 1e-5, 1e-5, "transposed, inner axis");
  check_all(t, {0}, 1e-5, 1e-5, "transposed, outer axis");
  check_all(t, {}, 1e-5, 1e-4, "transposed, all");
  Tensor stepped = randn({6, 4097}, 8).slice(1, 1, 4097, 3);
  check_all(stepped, {1}, 1e-5, 1e-5, "slice with step, inner axis");
  check_all(stepped, {0}, 1e-5, 1e-5, "slice with step, outer axis");
  Tensor perm = randn({4, 5, 6}, 9).permute({2, 0, 1});
  check_all(perm, {0, 2}, 1e-5, 1e-5, "permuted, axes 0, 2");
  check_all(perm, {1}, 1e-5, 1e-5, "permuted, axis 1");
  Tensor expanded = randn({1, 9}, 10).expand({5, 9});
  check_all(expanded, {0}, 1e-5, 1e-5, "expanded, broadcast axis");
  check_all(expanded, {1}, 1e-5, 1e-5, "expanded, inner axis");
}

TEST(Reduce, LongRowsSplitAcrossChunks) {
  // Few long rows are split into chunks whose partials are combined.
  Tensor x = randn({100003}, 11, DType::f32, nullptr, 0.5f, 2.0f);
  check_all(x, {}, 1e-5, 1e-3, "one long row");
  Tensor y = randn({2, 70001}, 12);
  check_all(y, {1}, 1e-5, 1e-3, "two long rows");
  std::vector<float> v = y.to_float_vector();
  std::vector<float> am = argmax(y, 1).to_float_vector();
  for (int r = 0; r < 2; ++r) {
    auto it = std::max_element(v.begin() + r * 70001, v.begin() + (r + 1) * 70001);
    EXPECT_EQ(int64_t(am[size_t(r)]), it - (v.begin() + r * 70001));
  }
}

TEST(Reduce, Float16Types) {
  for (DType dt : {DType::bf16, DType::f16}) {
    Tensor x = randn({7, 4097}, 13, dt);
    EXPECT_EQ(sum(x, {1}).dtype(), dt);
    // The reference sees the same rounded inputs; the result is rounded once.
    double tol = dt == DType::bf16 ? 8e-3 : 1e-3;
    check_all(x, {1}, tol, 0.1, std::string(dtype_name(dt)) + " rows");
    check_all(x, {0}, tol, 0.02, std::string(dtype_name(dt)) + " columns");
    check_all(x.transpose(0, 1), {1}, tol, 0.02, std::string(dtype_name(dt)) + " transposed");
  }
}

TEST(Reduce, Integers) {
  Tensor x = from_host_i64({1, -2, 3, 4, 5, -6, 1000000000000, 8}, {2, 4});
  Tensor s = sum(x, {1});
  EXPECT_EQ(s.dtype(), DType::i64);
  EXPECT_EQ(s.to_vector<int64_t>(), (std::vector<int64_t>{6, 1000000000007}));
  EXPECT_EQ(max(x, {0}).to_vector<int64_t>(), (std::vector<int64_t>{5, -2, 1000000000000, 8}));
  EXPECT_EQ(argmax(x, 1).to_vector<int64_t>(), (std::vector<int64_t>{3, 2}));
  Tensor i32 = from_host({3, 9, -4, 9, 2, 1}, {3, 2}, DType::i32);
  EXPECT_EQ(sum(i32).to_vector<int64_t>(), (std::vector<int64_t>{20}));  // widened, as torch
  EXPECT_EQ(min(i32, {0}).dtype(), DType::i32);
  EXPECT_EQ(min(i32, {0}).to_vector<int32_t>(), (std::vector<int32_t>{-4, 1}));
  expect_error([&] { mean(i32); }, "[mean]", "i32");
  expect_error([&] { var(i32); }, "[var]", "i32");
}

TEST(Reduce, VarCorrection) {
  Tensor x = randn({4, 9}, 14);
  std::vector<float> v = x.to_float_vector();
  for (int64_t c : {0, 1, 2}) {
    expect_close(var(x, {1}, false, c).to_float_vector(), reference(Kind::var, v, x.shape(), {1}, c), 1e-5, 1e-6,
                 "var rows correction " + std::to_string(c));
    expect_close(var(x, {0}, false, c).to_float_vector(), reference(Kind::var, v, x.shape(), {0}, c), 1e-5, 1e-6,
                 "var columns correction " + std::to_string(c));
  }
  // N - correction <= 0 gives NaN, as torch.
  for (float f : var(randn({3, 1}, 15), {1}).to_float_vector()) EXPECT_TRUE(std::isnan(f));
  for (float f : var(randn({1, 3}, 15), {0}).to_float_vector()) EXPECT_TRUE(std::isnan(f));
  for (float f : var(randn({4, 2}, 15), {1}, false, 2).to_float_vector()) EXPECT_TRUE(std::isnan(f));
  // A constant row has zero variance even with a large offset (two-pass, not E[x^2] - E[x]^2).
  EXPECT_NEAR(var(full({1000}, 1e4)).item(), 0.0, 1e-6);
}

TEST(Reduce, EmptyReductions) {
  Tensor e = empty({0, 3});
  EXPECT_EQ(sum(e, {0}).to_float_vector(), (std::vector<float>{0, 0, 0}));
  for (float f : mean(e, {0}).to_float_vector()) EXPECT_TRUE(std::isnan(f));
  for (float f : var(e, {0}).to_float_vector()) EXPECT_TRUE(std::isnan(f));
  EXPECT_EQ(sum(e).item(), 0.0f);
  EXPECT_EQ(sum(e, {1}).shape(), Shape{0});  // nothing to compute
  EXPECT_EQ(max(e, {1}).shape(), Shape{0});
  Tensor r = empty({3, 0});
  EXPECT_EQ(sum(r, {1}, true).to_float_vector(), (std::vector<float>{0, 0, 0}));
  expect_error([&] { max(e, {0}); }, "[max]", "(0, 3)");
  expect_error([&] { min(r, {1}); }, "[min]", "(3, 0)");
  expect_error([&] { argmax(e, 0); }, "[argmax]", "(0, 3)");
}

TEST(Reduce, ArgmaxTiesAndNaN) {
  Tensor x = from_host({1, 5, 5, 2, /**/ 7, 7, 7, 7, /**/ 0, NAN, 3, NAN}, {3, 4});
  EXPECT_EQ(argmax(x, 1).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(argmax(x, 0).to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 1, 2}));  // columns path
  EXPECT_EQ(argmax(x.transpose(0, 1), 0).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(argmax(x.slice(1, 0, 4, 2), 1).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 1}));
  // max propagates NaN, in every path
  std::vector<float> m = max(x, {1}).to_float_vector();
  EXPECT_EQ(m[0], 5.0f);
  EXPECT_TRUE(std::isnan(m[2]));
  std::vector<float> mc = min(x, {0}).to_float_vector();
  EXPECT_TRUE(std::isnan(mc[1]));
  EXPECT_EQ(mc[2], 3.0f);
  EXPECT_TRUE(std::isnan(max(x.transpose(0, 1), {0}).to_float_vector()[2]));
}

TEST(Reduce, ArgmaxMatchesReference) {
  Tensor x = randn({6, 37, 5}, 16);
  std::vector<float> v = x.to_float_vector();
  for (int axis = 0; axis < 3; ++axis) {
    std::vector<int64_t> got = argmax(x, axis).to_vector<int64_t>();
    int64_t strides[3] = {37 * 5, 5, 1}, dims[3] = {6, 37, 5};
    size_t o = 0;
    for (int64_t i = 0; i < 6; ++i)
      for (int64_t j = 0; j < 37; ++j)
        for (int64_t k = 0; k < 5; ++k) {
          int64_t idx[3] = {i, j, k};
          if (idx[axis] != 0) continue;
          int64_t best = 0;
          for (int64_t t = 1; t < dims[axis]; ++t) {
            int64_t a = i * strides[0] + j * strides[1] + k * strides[2];
            if (v[size_t(a + t * strides[axis])] > v[size_t(a + best * strides[axis])]) best = t;
          }
          ASSERT_LT(o, got.size());
          EXPECT_EQ(got[o++], best) << "axis " << axis;
        }
  }
}

// Rows search for their max 16 elements at a time: the first of tied maxima wins wherever
// it falls (inside a block, a block's first or last lane, the tail), in every float dtype.
TEST(Reduce, ArgmaxTakesTheFirstOfTiedMaxima) {
  const int64_t n = 100;  // six blocks of 16 and a tail of 4
  std::vector<std::vector<int64_t>> maxima = {{5, 37}, {16, 17}, {31, 32, 99}, {97, 98}, {0, 99}, {63}};
  std::vector<float> host;
  for (const auto& at : maxima) {
    std::vector<float> row(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) row[size_t(i)] = float((i * 7) % 13) - 6.f;  // below 50
    for (int64_t i : at) row[size_t(i)] = 50.f;
    host.insert(host.end(), row.begin(), row.end());
  }
  for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
    Tensor x = from_host(host, {int64_t(maxima.size()), n}, dt);
    std::vector<int64_t> got = argmax(x, 1).to_vector<int64_t>();
    for (size_t r = 0; r < maxima.size(); ++r) EXPECT_EQ(got[r], maxima[r][0]) << dtype_name(dt) << " row " << r;
  }
}

TEST(Reduce, BadInput) {
  Tensor x = randn({2, 3}, 17);
  expect_error([&] { sum(x, {1, -1}); }, "[sum]", "appears twice");
  expect_error([&] { sum(x, {1, -1}); }, "[sum]", "(2, 3)");
  expect_error([&] { mean(x, {2}); }, "[mean]", "out of range");
  expect_error([&] { argmax(x, -3); }, "[argmax]", "out of range");
  expect_error([&] { max(Tensor(), {}); }, "[max]", "undefined");
}
