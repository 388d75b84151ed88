// Elementwise ops against a double-precision reference: every unary and binary op over
// odd sizes and the dtypes, broadcasting (row, column, scalar, 0-d, general), views
// (transposed, stepped, expanded), work split across cores, special values, the exact
// f16 conversions of the kernels, integer dtypes, launch specs and bad input.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>

#include "inputs_util.h"
#include "opscope/core/error.h"
#include "opscope/kernels/cpu/elementwise.h"
#include "opscope/kernels/cpu/strided.h"
#include "opscope/ops/ops.h"
#include "opscope/runtime/cpu_device.h"
#include "opscope/runtime/stream.h"

using namespace opscope;
using test_util::every_bit_pattern;
using test_util::uniform;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

const std::vector<Shape> kShapes = {{1}, {3}, {4097}, {2, 3, 4097}};
const DType kFloats[] = {DType::f32, DType::bf16, DType::f16};

// A tensor of `shape` with values in [lo, hi), rounded to dtype.
Tensor input(const Shape& shape, DType dt, float lo, float hi, uint32_t seed, Device* dev = nullptr) {
  return from_host(uniform(shape.numel(), lo, hi, seed), shape, dt, dev);
}

// Error allowed for a result of `ref`: f32 at `rtol` (the op's own accuracy); bf16/f16
// add one rounding of the output (2^-8, 2^-11 relative).
double allowed(DType dt, double ref, double rtol) {
  double r = dt == DType::bf16 ? 2 * 3.9e-3 : dt == DType::f16 ? 2 * 4.9e-4 : rtol;
  double a = dt == DType::f32 ? 1e-30 : dt == DType::bf16 ? 1e-30 : 6e-8;  // f16 denormal spacing
  return a + r * std::fabs(ref);
}

bool same(double got, double want, double tol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= tol;
}

void expect_close(const Tensor& got, const std::vector<double>& want, DType dt, double rtol, const std::string& what) {
  std::vector<float> g = got.to_float_vector();
  ASSERT_EQ(g.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (same(g[i], want[i], allowed(dt, want[i], rtol))) continue;
    if (++bad <= 5) ADD_FAILURE() << what << ": element " << i << " is " << g[i] << ", want " << want[i];
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << g.size() << " elements differ";
}

std::string label(const std::string& op, DType dt, const Shape& s) {
  return op + " " + std::string(dtype_name(dt)) + " " + s.str();
}

void expect_error(const std::function<void()>& f, const std::string& prefix, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "expected an error starting with " << prefix;
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_EQ(m.rfind(prefix, 0), 0u) << m;
    for (const auto& p : parts) EXPECT_NE(m.find(p), std::string::npos) << "missing '" << p << "' in: " << m;
  }
}

// ---- unary ----

struct UnaryCase {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> ref;
  float lo, hi;  // input range (f16 results must stay finite)
  double rtol;   // f32 accuracy
};

const std::vector<UnaryCase>& unary_cases() {
  static const std::vector<UnaryCase> cases = {
      {"neg", [](const Tensor& x) { return neg(x); }, [](double x) { return -x; }, -8, 8, 0},
      {"abs", [](const Tensor& x) { return opscope::abs(x); }, [](double x) { return std::fabs(x); }, -8, 8, 0},
      {"relu", [](const Tensor& x) { return relu(x); }, [](double x) { return x < 0 ? 0.0 : x; }, -8, 8, 0},
      {"exp", [](const Tensor& x) { return opscope::exp(x); }, [](double x) { return std::exp(x); }, -10, 10, 3e-7},
      {"log", [](const Tensor& x) { return opscope::log(x); }, [](double x) { return std::log(x); }, 1e-3f, 100, 3e-7},
      {"sqrt", [](const Tensor& x) { return opscope::sqrt(x); }, [](double x) { return std::sqrt(x); }, 0, 100, 6e-8},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); }, [](double x) { return 1 / std::sqrt(x); }, 1e-3f, 100, 2e-7},
      {"sin", [](const Tensor& x) { return opscope::sin(x); }, [](double x) { return std::sin(x); }, -20, 20, 3e-7},
      {"cos", [](const Tensor& x) { return opscope::cos(x); }, [](double x) { return std::cos(x); }, -20, 20, 3e-7},
      {"tanh", [](const Tensor& x) { return opscope::tanh(x); }, [](double x) { return std::tanh(x); }, -6, 6, 3e-7},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, [](double x) { return 1 / (1 + std::exp(-x)); }, -12, 12,
       4e-7},
      {"silu", [](const Tensor& x) { return silu(x); }, [](double x) { return x / (1 + std::exp(-x)); }, -12, 12,
       4e-7},
      {"gelu", [](const Tensor& x) { return gelu(x); },
       [](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }, -8, 8, 1e-6},
      {"gelu_tanh", [](const Tensor& x) { return gelu_tanh(x); },
       // x/2 (1 + tanh z) = x sigmoid(2z): without 1 + tanh's cancellation for negative x.
       [](double x) { return x / (1 + std::exp(-2 * std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }, -8, 8,
       1.5e-5},  // e^-2z: its argument (-50 at x = -8) rounds at ~2 ulp, times 50 in the result
      {"hardswish", [](const Tensor& x) { return hardswish(x); },
       [](double x) { return x * std::min(std::max(x + 3, 0.0), 6.0) / 6; }, -8, 8, 3e-7},  // three roundings
      {"hardsigmoid", [](const Tensor& x) { return hardsigmoid(x); },
       [](double x) { return std::min(std::max(x + 3, 0.0), 6.0) / 6; }, -8, 8, 3e-7},
  };
  return cases;
}

std::vector<double> map_ref(const std::function<double(double)>& f, const std::vector<float>& x) {
  std::vector<double> r(x.size());
  for (size_t i = 0; i < x.size(); ++i) r[i] = f(x[i]);
  return r;
}

TEST(Elementwise, UnaryMatchesReference) {
  for (const auto& c : unary_cases())
    for (DType dt : kFloats)
      for (const Shape& s : kShapes) {
        Tensor x = input(s, dt, c.lo, c.hi, 1234);
        Tensor y = c.op(x);
        ASSERT_EQ(y.shape(), s);
        ASSERT_EQ(y.dtype(), dt);
        ASSERT_TRUE(y.is_contiguous());
        expect_close(y, map_ref(c.ref, x.to_float_vector()), dt, c.rtol, label(c.name, dt, s));
      }
}

TEST(Elementwise, UnaryZeroDim) {
  Tensor x = full({}, 0.5);
  for (const auto& c : unary_cases()) {
    Tensor y = c.op(x);
    EXPECT_EQ(y.ndim(), 0) << c.name;
    EXPECT_NEAR(y.item(), c.ref(0.5), 1e-6) << c.name;
  }
}

TEST(Elementwise, UnaryOnViews) {
  Tensor base = input({9, 4097}, DType::f32, -3, 3, 7);
  std::vector<std::pair<std::string, Tensor>> views = {
      {"transposed", base.transpose(0, 1)},                       // inner stride 4097
      {"stepped", base.slice(1, 1, 4097, 3)},                     // inner stride 3, offset
      {"row expanded", base.slice(0, 2, 3).expand({5, 4097})},    // outer stride 0
      {"column expanded", base.slice(1, 0, 1).expand({9, 300})},  // inner stride 0
      {"permuted 3-d", base.reshape({3, 3, 4097}).permute({2, 0, 1})},
  };
  for (const auto& [what, v] : views)
    for (const auto& c : unary_cases()) {
      if (c.lo > 0) {  // log, rsqrt: positive inputs
        Tensor p = opscope::abs(v);
        expect_close(c.op(p), map_ref(c.ref, p.to_float_vector()), DType::f32, c.rtol, std::string(c.name) + " " + what);
        continue;
      }
      expect_close(c.op(v), map_ref(c.ref, v.to_float_vector()), DType::f32, c.rtol, std::string(c.name) + " " + what);
    }
}

TEST(Elementwise, UnarySpecialValues) {
  std::vector<float> v = {0.f, -0.f, float(kInf), float(-kInf), float(kNaN), 1e-40f, -1e-40f, 88.f, 89.f, -87.f,
                          -100.f, -104.f, -110.f, 1e30f, 3.4e38f};
  Tensor x = from_host(v, {int64_t(v.size())});
  // atol: results that are f32 denormals keep only the denormal spacing (or less, where
  // an intermediate is a denormal too, as e^x in silu)
  auto check = [&](const char* name, const Tensor& y, const std::function<double(double)>& ref, double rtol,
                   double atol = 1.5e-45) {
    std::vector<float> g = y.to_float_vector();
    for (size_t i = 0; i < v.size(); ++i) {
      double want = ref(v[i]);
      if (!std::isfinite(want) || !std::isfinite(g[i])) {
        EXPECT_TRUE(std::isnan(want) ? std::isnan(g[i]) : g[i] == float(want)) << name << "(" << v[i] << ") = " << g[i];
        continue;
      }
      EXPECT_NEAR(g[i], want, atol + rtol * std::fabs(want)) << name << "(" << v[i] << ")";
    }
  };
  check("exp", opscope::exp(x), [](double a) { return double(float(std::exp(a))); }, 3e-7);
  check("log", opscope::log(x), [](double a) { return std::log(a); }, 3e-7);
  check("sqrt", opscope::sqrt(x), [](double a) { return std::sqrt(a); }, 6e-8);
  check("tanh", opscope::tanh(x), [](double a) { return std::tanh(a); }, 3e-7);
  check("sigmoid", sigmoid(x), [](double a) { return 1 / (1 + std::exp(-a)); }, 3e-7);
  // silu and gelu tend to -0 at -inf
  check("silu", silu(x), [](double a) { return std::isinf(a) ? std::max(a, -0.0) : a / (1 + std::exp(-a)); }, 4e-7,
        1e-42);
  check("gelu", gelu(x),
        [](double a) { return std::isinf(a) ? std::max(a, -0.0) : 0.5 * a * std::erfc(-a / std::sqrt(2.0)); }, 1e-6);
  check("relu", relu(x), [](double a) { return std::isnan(a) ? a : a < 0 ? 0.0 : a; }, 0);
  check("abs", opscope::abs(x), [](double a) { return std::fabs(a); }, 0);
  check("sin", opscope::sin(x), [](double a) { return double(float(std::sin(a))); }, 3e-7);
  check("cos", opscope::cos(x), [](double a) { return double(float(std::cos(a))); }, 3e-7);
  EXPECT_EQ(opscope::log(from_host({0.f}, {1})).item(), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(opscope::log(from_host({-1.f}, {1})).item()));
  EXPECT_TRUE(std::isnan(opscope::sqrt(from_host({-1.f}, {1})).item()));
}

// gelu, silu and sigmoid over a contiguous f32 run take two passes over each block
// (Gelu::block, ...); a strided view takes the element function the compiler's fused
// kernels call. Both give the same bits: every bf16 value as a float (zeros, denormals,
// gelu's clamp at -17, inf, NaN) and uniform ones, in a run that stays in cache, one
// streamed past it, and one unaligned.
TEST(Elementwise, BlockFormsGiveTheElementFunctionsBits) {
  CpuDevice dev(2);
  std::vector<float> v = every_bit_pattern(DType::bf16).to_float_vector(), u = uniform(65536, -20, 20, 61);
  v.insert(v.end(), u.begin(), u.end());
  for (float s : {-17.f, std::nextafter(-17.f, 0.f), std::nextafter(-17.f, -20.f), -13.2f, 17.f}) v.push_back(s);
  const size_t one = v.size();
  for (int copies = 0; copies < 16; ++copies) v.insert(v.end(), v.begin(), v.begin() + int64_t(one));  // 8.9 MB
  const std::pair<const char*, Tensor (*)(const Tensor&)> ops[] = {
      {"gelu", [](const Tensor& x) { return gelu(x); }},
      {"silu", [](const Tensor& x) { return silu(x); }},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }}};
  auto same = [](float a, float b) {
    return std::isnan(a) ? std::isnan(b) : std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
  };
  for (int64_t n : {int64_t(one), int64_t(v.size())}) {
    std::vector<float> spread(size_t(2 * n), 0.f);  // v at even places: a view with stride 2
    for (int64_t i = 0; i < n; ++i) spread[size_t(2 * i)] = v[size_t(i)];
    Tensor whole = from_host(std::vector<float>(v.begin(), v.begin() + n), {n}, DType::f32, &dev);
    Tensor strided = from_host(spread, {2 * n}, DType::f32, &dev).slice(0, 0, 2 * n, 2);
    Tensor unaligned = whole.slice(0, 1, n);
    for (const auto& [name, op] : ops) {
      std::vector<float> want = op(strided).to_float_vector(), got = op(whole).to_float_vector(),
                         got1 = op(unaligned).to_float_vector();
      int bad = 0;
      for (size_t i = 0; i < size_t(n); ++i) {
        if (!same(want[i], got[i]) && ++bad < 4)
          ADD_FAILURE() << name << "(" << v[i] << ") of " << n << ": " << got[i] << ", element-wise " << want[i];
        if (i > 0 && !same(want[i], got1[i - 1]) && ++bad < 4)
          ADD_FAILURE() << name << "(" << v[i] << ") unaligned: " << got1[i - 1] << ", element-wise " << want[i];
      }
      EXPECT_EQ(bad, 0) << name << ", " << n << " elements";
    }
  }
}

// Large arguments leave the polynomial's range: those chunks use the C library.
TEST(Elementwise, SinCosLargeArguments) {
  std::vector<float> v = uniform(1000, -10, 10, 3);
  v[500] = 123456.7f;  // one large value in the second chunk
  std::vector<float> big = uniform(700, -1e7f, 1e7f, 4);
  v.insert(v.end(), big.begin(), big.end());
  Tensor x = from_host(v, {int64_t(v.size())});
  auto near = [](double f) { return double(float(f)); };
  expect_close(opscope::sin(x), map_ref([&](double a) { return near(std::sin(a)); }, v), DType::f32, 3e-7, "sin large");
  expect_close(opscope::cos(x), map_ref([&](double a) { return near(std::cos(a)); }, v), DType::f32, 3e-7, "cos large");
  // and strided
  Tensor s = x.slice(0, 0, int64_t(v.size()), 2);
  expect_close(opscope::sin(s), map_ref([&](double a) { return near(std::sin(a)); }, s.to_float_vector()), DType::f32,
               3e-7, "sin large strided");
}

// Across the whole f32 range the polynomials stay within a few ulp.
TEST(Elementwise, ExpLogAccuracySweep) {
  std::vector<float> e, l;
  for (float a = -103.f; a < 88.7f; a += 0.0173f) e.push_back(a);
  for (float a = 1e-38f; a < 3e38f; a *= 1.0137f) l.push_back(a);
  Tensor xe = from_host(e, {int64_t(e.size())}), xl = from_host(l, {int64_t(l.size())});
  std::vector<float> ge = opscope::exp(xe).to_float_vector(), gl = opscope::log(xl).to_float_vector();
  double worst_e = 0, worst_l = 0;
  for (size_t i = 0; i < e.size(); ++i) {
    double want = std::exp(double(e[i]));
    if (want < 1.2e-38) continue;  // denormal results: checked in UnarySpecialValues
    worst_e = std::max(worst_e, std::fabs(ge[i] - want) / want);
  }
  for (size_t i = 0; i < l.size(); ++i) {
    double want = std::log(double(l[i]));
    worst_l = std::max(worst_l, std::fabs(gl[i] - want) / std::max(std::fabs(want), 1e-3));
  }
  EXPECT_LT(worst_e, 3e-7);
  EXPECT_LT(worst_l, 3e-7);
}

// ---- binary ----

struct BinaryCase {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> op;
  std::function<double(double, double)> ref;
  float alo, ahi, blo, bhi;
  double rtol;
};

const std::vector<BinaryCase>& binary_cases() {
  static const std::vector<BinaryCase> cases = {
      {"add", [](const Tensor& a, const Tensor& b) { return a + b; }, [](double a, double b) { return a + b; }, -8, 8,
       -8, 8, 6e-8},
      {"sub", [](const Tensor& a, const Tensor& b) { return a - b; }, [](double a, double b) { return a - b; }, -8, 8,
       -8, 8, 6e-8},
      {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }, [](double a, double b) { return a * b; }, -8, 8,
       -8, 8, 6e-8},
      {"div", [](const Tensor& a, const Tensor& b) { return a / b; }, [](double a, double b) { return a / b; }, -8, 8,
       0.5, 4, 6e-8},
      {"pow", [](const Tensor& a, const Tensor& b) { return opscope::pow(a, b); },
       [](double a, double b) { return std::pow(a, b); }, 0.1f, 3, -2, 2, 2e-7},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); },
       [](double a, double b) { return std::max(a, b); }, -8, 8, -8, 8, 0},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); },
       [](double a, double b) { return std::min(a, b); }, -8, 8, -8, 8, 0},
  };
  return cases;
}

// Broadcast reference over row-major values of a and b.
std::vector<double> broadcast_ref(const std::function<double(double, double)>& f, const std::vector<float>& a,
                                  const Shape& as, const std::vector<float>& b, const Shape& bs) {
  Shape out = broadcast_shapes(as, bs, "test");
  int nd = out.size();
  std::vector<double> r(size_t(out.numel()));
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t rem = i, ia = 0, ib = 0, ma = 1, mb = 1;
    for (int d = nd - 1; d >= 0; --d) {
      int64_t idx = rem % out[d];
      rem /= out[d];
      int da = d - (nd - as.size()), db = d - (nd - bs.size());
      if (da >= 0) ia += (as[da] == 1 ? 0 : idx) * ma, ma *= as[da];
      if (db >= 0) ib += (bs[db] == 1 ? 0 : idx) * mb, mb *= bs[db];
    }
    r[size_t(i)] = f(a[size_t(ia)], b[size_t(ib)]);
  }
  return r;
}

void check_binary(const BinaryCase& c, const Tensor& a, const Tensor& b, DType dt, const std::string& what) {
  Tensor y = c.op(a, b);
  Shape want_shape = broadcast_shapes(a.shape(), b.shape(), "test");
  ASSERT_EQ(y.shape(), want_shape) << what;
  ASSERT_EQ(y.dtype(), dt) << what;
  ASSERT_TRUE(y.is_contiguous()) << what;
  expect_close(y, broadcast_ref(c.ref, a.to_float_vector(), a.shape(), b.to_float_vector(), b.shape()), dt, c.rtol,
               what);
}

TEST(Elementwise, BinaryMatchesReference) {
  for (const auto& c : binary_cases())
    for (DType dt : kFloats)
      for (const Shape& s : kShapes) {
        Tensor a = input(s, dt, c.alo, c.ahi, 11), b = input(s, dt, c.blo, c.bhi, 12);
        check_binary(c, a, b, dt, label(c.name, dt, s));
      }
}

TEST(Elementwise, BinaryBroadcasting) {
  // (a shape, b shape): outer product, row vector, leading dims, scalar, 0-d, the
  // last-dim broadcasts x * w and x * r, and a general 3-d mix.
  std::vector<std::pair<Shape, Shape>> combos = {
      {{4, 1}, {1, 5}},       {{3}, {2, 3}},          {{2, 3}, {3}},          {{1}, {2, 3, 4097}},
      {{}, {3, 4}},           {{3, 4}, {}},           {{2, 3, 4097}, {4097}}, {{4097}, {2, 3, 4097}},
      {{2, 3, 4097}, {2, 3, 1}}, {{2, 3, 1}, {2, 3, 4097}}, {{5, 1, 7}, {1, 6, 1}}, {{2, 1, 4, 1}, {3, 1, 5}},
      {{1, 1}, {1}},          {{7, 1, 4097}, {1, 3, 4097}},
  };
  for (const auto& c : binary_cases())
    for (DType dt : kFloats)
      for (const auto& [as, bs] : combos) {
        Tensor a = input(as, dt, c.alo, c.ahi, 21), b = input(bs, dt, c.blo, c.bhi, 22);
        check_binary(c, a, b, dt, label(c.name, dt, as) + " x " + bs.str());
      }
}

TEST(Elementwise, BinaryOnViews) {
  Tensor base = input({9, 4097}, DType::f32, 0.5f, 3, 5);
  Tensor other = input({4097, 9}, DType::f32, 0.5f, 3, 6);
  Tensor t = base.transpose(0, 1);  // (4097, 9), strides (1, 4097)
  Tensor stepped = base.slice(1, 2, 4097, 4);  // (9, 1024)
  Tensor stepped2 = other.transpose(0, 1).slice(1, 1, 4097, 4);  // (9, 1024)
  Tensor row = base.slice(0, 4, 5);  // (1, 4097) inside base
  Tensor expanded = row.expand({9, 4097});
  Tensor p3 = base.reshape({3, 3, 4097}).permute({1, 2, 0});  // (3, 4097, 3)
  Tensor p3b = input({3, 4097, 3}, DType::f32, 0.5f, 3, 8);
  std::vector<std::tuple<std::string, Tensor, Tensor>> pairs = {
      {"transposed x contiguous", t, other},
      {"contiguous x transposed", other, t},
      {"transposed x transposed", t, t},
      {"stepped x stepped", stepped, stepped2},
      {"expanded x contiguous", expanded, base},
      {"stepped x row", stepped, row.slice(1, 0, 1024)},
      {"permuted x contiguous", p3, p3b},
      {"permuted x broadcast", p3, base.slice(0, 0, 1).reshape({4097, 1})},
  };
  for (const auto& c : binary_cases())
    for (const auto& [what, a, b] : pairs) check_binary(c, a, b, DType::f32, std::string(c.name) + " " + what);
}

// Views are read in place: each op is one launch, with no hidden contiguous() copy.
TEST(Elementwise, ViewsTakeOneLaunch) {
  CpuDevice dev(1);
  {
    Tensor base = input({9, 4097}, DType::f32, 0.5f, 3, 9, &dev);
    Stream& s = current_stream(dev);
    std::vector<std::pair<std::string, std::function<Tensor()>>> ops = {
        {"exp transposed", [&] { return opscope::exp(base.transpose(0, 1)); }},
        {"sin stepped", [&] { return opscope::sin(base.slice(1, 0, 4097, 7)); }},
        {"add transposed", [&] { return base.transpose(0, 1) + base.transpose(0, 1); }},
        {"mul expanded", [&] { return base * base.slice(0, 3, 4).expand({9, 4097}); }},
        {"div stepped", [&] { return base.slice(1, 1, 4097, 2) / base.slice(1, 0, 4096, 2); }},
        {"scalar transposed", [&] { return 2.0 - base.transpose(0, 1); }},
    };
    for (const auto& [what, op] : ops) {
      uint64_t before = s.submitted();
      Tensor y = op();
      EXPECT_EQ(s.submitted() - before, 1u) << what;
    }
  }
  dev.synchronize();
}

// Enough work that both cores of a 2-core device run, with blocks ending mid-row.
TEST(Elementwise, SplitAcrossCores) {
  CpuDevice dev(2);
  {
    Shape s{70, 4097};
    Tensor x = input(s, DType::f32, -2, 2, 31, &dev);
    Tensor w = input({4097}, DType::f32, -2, 2, 32, &dev);
    Tensor r = input({70, 1}, DType::f32, -2, 2, 33, &dev);
    Tensor z = input(s, DType::f32, -2, 2, 34, &dev);
    const auto& mul_case = binary_cases()[2];
    check_binary(mul_case, x, w, DType::f32, "x * w");
    check_binary(mul_case, x, r, DType::f32, "x * r");
    check_binary(mul_case, x, z, DType::f32, "x * z");
    check_binary(mul_case, x.reshape({7, 10, 4097}), z.reshape({7, 10, 4097}).transpose(0, 1).contiguous().transpose(0, 1),
                 DType::f32, "x * permuted");
    expect_close(opscope::exp(x), map_ref([](double a) { return std::exp(a); }, x.to_float_vector()), DType::f32, 3e-7,
                 "exp 2 cores");
    expect_close(opscope::sin(x.transpose(0, 1)),
                 map_ref([](double a) { return std::sin(a); }, x.transpose(0, 1).to_float_vector()), DType::f32, 3e-7,
                 "sin transposed 2 cores");
  }
  dev.synchronize();
}

// Outputs of 8 MiB and more are written with streaming stores (stream_store.h): every
// layout the kernels pick — flat, scalar, the row broadcasts x * r and x * w, strided
// inputs, 16-bit outputs (bf16, f16) — over odd row lengths, so lines start mid-row and cores split
// mid-line, against the reference.
TEST(Elementwise, StreamedOutputsPastTheCaches) {
  CpuDevice dev(2);
  {
    Shape s{1031, 2053};  // 8.5 MB of f32
    Tensor x = input(s, DType::f32, -2, 2, 51, &dev);
    Tensor z = input(s, DType::f32, -2, 2, 52, &dev);
    Tensor w = input({2053}, DType::f32, -2, 2, 53, &dev);
    Tensor r = input({1031, 1}, DType::f32, -2, 2, 54, &dev);
    const auto& add_case = binary_cases()[0];
    const auto& mul_case = binary_cases()[2];
    check_binary(add_case, x, z, DType::f32, "x + z streamed");
    check_binary(mul_case, x, r, DType::f32, "x * r streamed");
    check_binary(mul_case, x, w, DType::f32, "x * w streamed");
    check_binary(mul_case, x.transpose(0, 1), z.transpose(0, 1), DType::f32, "transposed streamed");
    std::vector<float> xv = x.to_float_vector();
    expect_close(x * 3.0, map_ref([](double a) { return a * 3; }, xv), DType::f32, 6e-8, "x * 3 streamed");
    expect_close(opscope::exp(x), map_ref([](double a) { return std::exp(a); }, xv), DType::f32, 3e-7, "exp streamed");
    expect_close(opscope::sin(x.transpose(0, 1)),
                 map_ref([](double a) { return std::sin(a); }, x.transpose(0, 1).to_float_vector()), DType::f32, 3e-7,
                 "sin transposed streamed");
    // Just under the threshold and just over it in bf16 (2-byte elements, 32 per line).
    Shape h{1031, 4099};
    Tensor xb = input(h, DType::bf16, -2, 2, 55, &dev), zb = input(h, DType::bf16, -2, 2, 56, &dev);
    check_binary(add_case, xb, zb, DType::bf16, "bf16 x + z streamed");
    check_binary(add_case, xb.slice(0, 1, 1031), zb.slice(0, 0, 1030), DType::bf16, "bf16 offset views streamed");
    // f16 goes through f32 blocks and the hardware's converts: whole, offset by one element
    // (the stores unaligned), against a scalar, and unary.
    Tensor xh = input(h, DType::f16, -2, 2, 57, &dev), zh = input(h, DType::f16, -2, 2, 58, &dev);
    check_binary(add_case, xh, zh, DType::f16, "f16 x + z streamed");
    check_binary(mul_case, xh.slice(0, 1, 1031), zh.slice(0, 0, 1030), DType::f16, "f16 offset views streamed");
    std::vector<float> xhv = xh.to_float_vector();
    expect_close(xh * 3.0, map_ref([](double a) { return a * 3; }, xhv), DType::f16, 0, "f16 x * 3 streamed");
    expect_close(opscope::exp(xh), map_ref([](double a) { return std::exp(a); }, xhv), DType::f16, 3e-7,
                 "f16 exp streamed");
  }
  dev.synchronize();
}

TEST(Elementwise, ScalarOperands) {
  for (DType dt : kFloats) {
    Shape s{2, 3, 4097};
    Tensor x = input(s, dt, 0.5f, 4, 41);
    std::vector<float> xv = x.to_float_vector();
    auto check = [&](const char* what, const Tensor& y, const std::function<double(double)>& f, double rtol) {
      EXPECT_EQ(y.dtype(), dt);
      expect_close(y, map_ref(f, xv), dt, rtol, std::string(what) + " " + std::string(dtype_name(dt)));
    };
    float k = 1.7f;  // the scalar is used as f32
    check("x + k", x + 1.7, [&](double a) { return a + k; }, 6e-8);
    check("x - k", x - 1.7, [&](double a) { return a - k; }, 6e-8);
    check("x * k", x * 1.7, [&](double a) { return a * k; }, 6e-8);
    check("x / k", x / 1.7, [&](double a) { return a / k; }, 6e-8);
    check("k + x", 1.7 + x, [&](double a) { return k + a; }, 6e-8);
    check("k - x", 1.7 - x, [&](double a) { return k - a; }, 6e-8);
    check("k * x", 1.7 * x, [&](double a) { return k * a; }, 6e-8);
    check("k / x", 1.7 / x, [&](double a) { return k / a; }, 6e-8);
    check("-x", -x, [&](double a) { return -a; }, 0);
    check("pow(x, 2)", opscope::pow(x, 2.0), [&](double a) { return a * a; }, 6e-8);
    check("pow(x, 0.5)", opscope::pow(x, 0.5), [&](double a) { return std::sqrt(a); }, 2e-7);
    check("pow(x, -1.5)", opscope::pow(x, -1.5), [&](double a) { return std::pow(a, -1.5); }, 2e-7);
    check("maximum(x, 2)", maximum(x, 2.0), [&](double a) { return std::max(a, 2.0); }, 0);
    check("minimum(x, 2)", minimum(x, 2.0), [&](double a) { return std::min(a, 2.0); }, 0);
    // on a view
    Tensor v = x.transpose(0, 2).slice(0, 1, 4097, 5);
    expect_close(v * 3.0, map_ref([](double a) { return a * 3; }, v.to_float_vector()), dt, 6e-8, "view * 3");
    expect_close(3.0 - v, map_ref([](double a) { return 3 - a; }, v.to_float_vector()), dt, 6e-8, "3 - view");
  }
  Tensor z = full({}, 2.0);
  EXPECT_EQ((z * 4.0).ndim(), 0);
  EXPECT_FLOAT_EQ((z * 4.0).item(), 8.f);
  EXPECT_FLOAT_EQ((1.0 / z).item(), 0.5f);
}

// pow by 2, 3, -2, -1, 0.5 and -0.5 as torch's CPU kernel computes them (PowKernel.cpp):
// x * x * x, 1 / (x * x), sqrt ..., bit for bit; a correctly rounded pow differs from
// x * x * x in a quarter of all f32, and gives +0 and +inf where sqrt gives -0 and NaN.
TEST(Elementwise, PowByTorchsExponentsTakesTorchsSteps) {
  std::vector<float> xv = uniform(4099, -40.f, 40.f, 7);
  for (float v : {0.f, -0.f, INFINITY, -INFINITY, NAN, 1e-40f, -1e-40f, 3e38f, -3e38f}) xv.push_back(v);
  Tensor x = from_host(xv, {int64_t(xv.size())});
  const std::pair<double, float (*)(float)> cases[] = {
      {2.0, [](float a) { return a * a; }},
      {3.0, [](float a) { return a * a * a; }},
      {-2.0, [](float a) { return 1.0f / (a * a); }},
      {-1.0, [](float a) { return 1.0f / a; }},
      {0.5, [](float a) { return std::sqrt(a); }},
      {-0.5, [](float a) { return 1.0f / std::sqrt(a); }},
  };
  for (const auto& [e, step] : cases) {
    std::vector<float> got = opscope::pow(x, e).to_float_vector();
    int bad = 0;
    for (size_t i = 0; i < xv.size(); ++i) {
      float want = step(xv[i]);
      bool ok = std::isnan(want) ? std::isnan(got[i]) : std::bit_cast<uint32_t>(got[i]) == std::bit_cast<uint32_t>(want);
      if (!ok && ++bad < 4) ADD_FAILURE() << "pow(" << xv[i] << ", " << e << ") gave " << got[i] << ", want " << want;
    }
    EXPECT_EQ(bad, 0) << "pow(x, " << e << ")";
  }
}

TEST(Elementwise, NaNPropagation) {
  Tensor a = from_host({float(kNaN), 1.f, float(kNaN), 2.f}, {4});
  Tensor b = from_host({1.f, float(kNaN), float(kNaN), 3.f}, {4});
  for (const Tensor& y : {maximum(a, b), minimum(a, b), a + b, a * b}) {
    std::vector<float> v = y.to_float_vector();
    EXPECT_TRUE(std::isnan(v[0]) && std::isnan(v[1]) && std::isnan(v[2])) << v[0] << " " << v[1] << " " << v[2];
    EXPECT_FALSE(std::isnan(v[3]));
  }
  EXPECT_TRUE(std::isnan(maximum(a, 0.0).to_float_vector()[0]));
  EXPECT_TRUE(std::isnan(relu(a).to_float_vector()[0]));
  for (const auto& c : unary_cases()) EXPECT_TRUE(std::isnan(c.op(a).to_float_vector()[0])) << c.name;
}

// bf16 and f16 arithmetic runs on registers of f32 lanes (bf16 as even and odd lanes where
// AVX2 is the widest): each output must be the f32 operation on the two values, rounded once,
// for every bit pattern, with the loops' tails and unaligned operands too.
TEST(Elementwise, HalfArithmeticIsTheF32OpRoundedOnce) {
  const float k = float(1.0 / 3);  // the scalar is used as f32
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&, const Tensor&)> op;
    std::function<float(float, float)> ref;
    bool either_zero = false;  // maximum and minimum may return either of +0 and -0
  };
  auto nan_or = [](float a, float b, float v) { return std::isnan(a) || std::isnan(b) ? NAN : v; };
  const Case cases[] = {
      {"a + b", [](const Tensor& a, const Tensor& b) { return a + b; }, [](float a, float b) { return a + b; }},
      {"a - b", [](const Tensor& a, const Tensor& b) { return a - b; }, [](float a, float b) { return a - b; }},
      {"a * b", [](const Tensor& a, const Tensor& b) { return a * b; }, [](float a, float b) { return a * b; }},
      {"a / b", [](const Tensor& a, const Tensor& b) { return a / b; }, [](float a, float b) { return a / b; }},
      {"maximum(a, b)", [](const Tensor& a, const Tensor& b) { return maximum(a, b); },
       [&](float a, float b) { return nan_or(a, b, std::max(a, b)); }, true},
      {"minimum(a, b)", [](const Tensor& a, const Tensor& b) { return minimum(a, b); },
       [&](float a, float b) { return nan_or(a, b, std::min(a, b)); }, true},
      {"a + k", [](const Tensor& a, const Tensor&) { return a + 1.0 / 3; }, [&](float a, float) { return a + k; }},
      {"k / a", [](const Tensor& a, const Tensor&) { return (1.0 / 3) / a; }, [&](float a, float) { return k / a; }},
      {"pow(a, 2)", [](const Tensor& a, const Tensor&) { return opscope::pow(a, 2.0); }, [](float a, float) { return a * a; }},
      {"maximum(a, k)", [](const Tensor& a, const Tensor&) { return maximum(a, 1.0 / 3); },
       [&](float a, float) { return nan_or(a, k, std::max(a, k)); }, true},
  };
  for (DType dt : {DType::bf16, DType::f16}) {
    Tensor x = every_bit_pattern(dt);
    std::vector<float> all = x.to_float_vector(), other;
    for (uint32_t i = 0; i < 65536; ++i) other.push_back(all[(i * 40503u) & 0xffffu]);  // each a meets many b
    Tensor y = from_host(other, {65536}, dt);
    // whole lane blocks, and an odd length at odd offsets
    const std::pair<Tensor, Tensor> pairs[] = {{x, y}, {x.slice(0, 1, 65531), y.slice(0, 3, 65533)}};
    for (const auto& [a, b] : pairs) {
      std::vector<float> av = a.to_float_vector(), bv = b.to_float_vector();
      for (const Case& c : cases) {
        std::string what = std::string(dtype_name(dt)) + " " + c.name + " of " + std::to_string(av.size());
        std::vector<float> got = c.op(a, b).to_float_vector();
        ASSERT_EQ(got.size(), av.size()) << what;
        int bad = 0;
        for (size_t i = 0; i < av.size(); ++i) {
          float r = c.ref(av[i], bv[i]);
          float want = dt == DType::bf16 ? to_f32(from_f32<bf16_t>(r)) : to_f32(from_f32<f16_t>(r));
          bool ok = std::isnan(want)               ? std::isnan(got[i])
                    : (c.either_zero && want == 0) ? got[i] == 0
                                                   : std::bit_cast<uint32_t>(got[i]) == std::bit_cast<uint32_t>(want);
          if (!ok && ++bad < 4) ADD_FAILURE() << what << ": " << av[i] << ", " << bv[i] << " gave " << got[i] << ", want " << want;
        }
        EXPECT_EQ(bad, 0) << what;
      }
    }
  }
}

// The unary ops in bf16 and f16 compute in f32 blocks (bf16 in even and odd order where AVX2
// is the widest): each output must be the f32 kernel's, rounded once, for every bit pattern,
// with the blocks' tails and an unaligned input too.
TEST(Elementwise, HalfUnaryIsTheF32KernelRoundedOnce) {
  for (DType dt : {DType::bf16, DType::f16}) {
    Tensor x = every_bit_pattern(dt);
    for (const Tensor& in : {x, x.slice(0, 1, 65531)})
      for (const auto& c : unary_cases()) {
        std::string what = std::string(dtype_name(dt)) + " " + c.name + " of " + std::to_string(in.numel());
        std::vector<float> got = c.op(in).to_float_vector(), want = c.op(in.to(DType::f32)).to(dt).to_float_vector();
        ASSERT_EQ(got.size(), want.size()) << what;
        int bad = 0;
        for (size_t i = 0; i < got.size(); ++i) {
          bool ok = std::isnan(want[i]) ? std::isnan(got[i]) : std::bit_cast<uint32_t>(got[i]) == std::bit_cast<uint32_t>(want[i]);
          if (!ok && ++bad < 4) ADD_FAILURE() << what << ": element " << i << " gave " << got[i] << ", want " << want[i];
        }
        EXPECT_EQ(bad, 0) << what;
      }
  }
}

// The kernels convert f16 on bit patterns; they must agree with _Float16 everywhere.
TEST(Elementwise, F16ConversionsMatchFloat16) {
  std::vector<float> all;
  for (uint32_t bits = 0; bits < 65536; ++bits) all.push_back(float(std::bit_cast<f16_t>(uint16_t(bits))));
  Tensor x = from_host(all, {int64_t(all.size())}, DType::f16);
  std::vector<f16_t> in = x.to_vector<f16_t>();
  std::vector<f16_t> same_out = (x * 1.0).to_vector<f16_t>();
  std::vector<f16_t> half = (x * 0.5).to_vector<f16_t>();  // exercises rounding into denormals
  // f32 sums between f16 values: a denormal addend, and one near 1/3
  std::vector<f16_t> sum_tiny = (x + x.slice(0, 1, 2)).to_vector<f16_t>();
  std::vector<f16_t> sum_third = (x + x.slice(0, 0x3555, 0x3556)).to_vector<f16_t>();
  float tiny = float(in[1]), third = float(in[0x3555]);
  int bad = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    float v = float(in[i]);
    auto eq = [](f16_t g, f16_t w) {
      return std::isnan(float(w)) ? std::isnan(float(g)) : std::bit_cast<uint16_t>(g) == std::bit_cast<uint16_t>(w);
    };
    if (!eq(same_out[i], in[i])) ++bad;
    if (!eq(half[i], f16_t(v * 0.5f))) ++bad;
    if (!eq(sum_tiny[i], f16_t(v + tiny))) ++bad;
    if (!eq(sum_third[i], f16_t(v + third))) ++bad;
    if (bad && bad < 4) ADD_FAILURE() << "f16 bits " << i;
  }
  EXPECT_EQ(bad, 0);
  // overflow to inf on the way out
  Tensor big = from_host({60000.f, -60000.f}, {2}, DType::f16);
  std::vector<float> y = (big * 2.0).to_float_vector();
  EXPECT_EQ(y[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(y[1], -std::numeric_limits<float>::infinity());
}

// ---- integers ----

TEST(Elementwise, IntegerOps) {
  std::vector<int64_t> av = {5, -7, 0, 2147483647, -2147483647 - 1, 123456, -3};
  std::vector<int64_t> bv = {3, 4, -9, 1, -1, -654321, -3};
  Shape s{int64_t(av.size())};
  for (DType dt : {DType::i32, DType::i64}) {
    Tensor a = from_host_i64(av, s).to(dt), b = from_host_i64(bv, s).to(dt);
    auto get = [&](const Tensor& t) {
      std::vector<int64_t> r;
      if (dt == DType::i32)
        for (int32_t v : t.to_vector<int32_t>()) r.push_back(v);
      else
        r = t.to_vector<int64_t>();
      return r;
    };
    // wrap around like two's complement of the dtype
    auto wrap = [&](int64_t v) { return dt == DType::i32 ? int64_t(int32_t(uint32_t(uint64_t(v)))) : v; };
    std::vector<int64_t> add_r = get(a + b), sub_r = get(a - b), mul_r = get(a * b), max_r = get(maximum(a, b)),
                         min_r = get(minimum(a, b)), neg_r = get(-a), abs_r = get(opscope::abs(a)),
                         relu_r = get(relu(a)), adds_r = get(a + 10.0), rsub_r = get(10.0 - a);
    for (size_t i = 0; i < av.size(); ++i) {
      int64_t x = av[i], y = bv[i];
      EXPECT_EQ(add_r[i], wrap(x + y)) << i;
      EXPECT_EQ(sub_r[i], wrap(x - y)) << i;
      EXPECT_EQ(mul_r[i], wrap(int64_t(uint64_t(x) * uint64_t(y)))) << i;
      EXPECT_EQ(max_r[i], std::max(x, y)) << i;
      EXPECT_EQ(min_r[i], std::min(x, y)) << i;
      EXPECT_EQ(neg_r[i], wrap(-x)) << i;
      EXPECT_EQ(abs_r[i], wrap(x < 0 ? -x : x)) << i;
      EXPECT_EQ(relu_r[i], std::max<int64_t>(x, 0)) << i;
      EXPECT_EQ(adds_r[i], wrap(x + 10)) << i;
      EXPECT_EQ(rsub_r[i], wrap(10 - x)) << i;
    }
    // broadcast and a view
    Tensor m = from_host_i64({1, 2, 3, 4, 5, 6}, {2, 3}).to(dt);
    Tensor col = from_host_i64({10, 20}, {2, 1}).to(dt);
    EXPECT_EQ(get(m.transpose(0, 1) + col.transpose(0, 1)), (std::vector<int64_t>{11, 24, 12, 25, 13, 26}));
  }
  // i64 beyond f32's exact integers
  Tensor big = from_host_i64({(int64_t(1) << 53) + 1}, {1});
  EXPECT_EQ((big + big).to_vector<int64_t>()[0], (int64_t(1) << 54) + 2);
  EXPECT_EQ((big * 2.0).to_vector<int64_t>()[0], (int64_t(1) << 54) + 2);
}

// ---- empty tensors ----

TEST(Elementwise, EmptyTensors) {
  Tensor e = zeros({0, 3});
  EXPECT_EQ(opscope::exp(e).shape(), (Shape{0, 3}));
  EXPECT_EQ((e + ones({1, 3})).shape(), (Shape{0, 3}));
  EXPECT_EQ((e * 2.0).numel(), 0);
  EXPECT_EQ((zeros({0}) + zeros({1})).shape(), (Shape{0}));
  EXPECT_TRUE(opscope::exp(e).to_float_vector().empty());
}

// ---- launch specs ----

TEST(Elementwise, LaunchSpecs) {
  using namespace cpu_kernels;
  Tensor x = zeros({10000}, DType::bf16);
  Tensor out = empty({10000}, DType::bf16);
  LaunchSpec u = unary_spec(UnaryOp::rsqrt, out, x);
  EXPECT_EQ(u.name, "rsqrt_bf16");
  EXPECT_EQ(u.work, 3);  // ceil(10000 / 4096)
  EXPECT_EQ(u.grain, kElemGrainBlocks);
  EXPECT_EQ(u.bytes, 2 * 10000 * 2);
  EXPECT_GT(u.flops, 0);
  Tensor a = zeros({100, 64}), w = zeros({64}), o = empty({100, 64});
  LaunchSpec b = binary_spec(BinaryOp::mul, o, a, w);
  EXPECT_EQ(b.name, "mul_f32");
  EXPECT_EQ(b.bytes, (6400 + 64 + 6400) * 4);  // w is read once
  EXPECT_EQ(b.flops, 6400);
  LaunchSpec s = binary_scalar_spec(BinaryOp::add, o, a, 1.0, false);
  EXPECT_EQ(s.name, "add_scalar_f32");
  EXPECT_EQ(s.bytes, 2 * 6400 * 4);
}

// ---- bad input ----

TEST(Elementwise, Errors) {
  Tensor a = zeros({2, 3}), b = zeros({4}), h = zeros({2, 3}, DType::bf16), i = zeros({2, 3}, DType::i32), u;
  expect_error([&] { add(a, b); }, "[add]", {"(2, 3)", "(4)", "broadcast"});
  expect_error([&] { maximum(zeros({3, 1, 5}), zeros({4, 6})); }, "[maximum]", {"(3, 1, 5)", "(4, 6)"});
  expect_error([&] { mul(a, h); }, "[mul]", {"f32", "bf16", "(2, 3)"});
  expect_error([&] { sub(i, a); }, "[sub]", {"i32", "f32"});
  expect_error([&] { opscope::exp(u); }, "[exp]", {"undefined"});
  expect_error([&] { add(u, a); }, "[add]", {"undefined"});
  expect_error([&] { div(a, u); }, "[div]", {"undefined"});
  expect_error([&] { mul(u, 2.0); }, "[mul]", {"undefined"});
  expect_error([&] { opscope::exp(i); }, "[exp]", {"i32"});
  expect_error([&] { gelu(zeros({2}, DType::i64)); }, "[gelu]", {"i64"});
  expect_error([&] { div(i, i); }, "[div]", {"i32"});
  expect_error([&] { opscope::pow(i, 2.0); }, "[pow]", {"i32"});
  expect_error([&] { add(i, 2.5); }, "[add]", {"2.5", "i32"});
  expect_error([&] { mul(i, 1e10); }, "[mul]", {"i32"});
  CpuDevice other(1);
  {
    Tensor c = zeros({2, 3}, DType::f32, &other);
    expect_error([&] { add(a, c); }, "[add]", {a.device().name(), other.name()});
  }
  other.synchronize();
}

}  // namespace

// div with rounding_mode trunc / floor: integers exactly against C++'s own arithmetic
// (every sign pair, exact multiples, the minimum over -1 wrapping), floats through
// std::floor / std::trunc of the exact quotient where it is representable; a zero integer
// divisor is a kernel error naming div, and the device goes on.
TEST(Elementwise, DivRoundingModes) {
  std::vector<int64_t> a, b;
  for (int64_t x = -13; x <= 13; ++x)
    for (int64_t y : {-7, -4, -3, -2, -1, 1, 2, 3, 5, 13}) a.push_back(x), b.push_back(y);
  a.push_back(std::numeric_limits<int64_t>::min()), b.push_back(-1);
  const Shape s{int64_t(a.size())};
  for (DType dt : {DType::i64, DType::i32}) {
    Tensor ta = from_host_i64(a, s).to(dt), tb = from_host_i64(b, s).to(dt);
    std::vector<int64_t> tr = div(ta, tb, RoundingMode::trunc).to(DType::i64).to_vector<int64_t>();
    std::vector<int64_t> fl = div(ta, tb, RoundingMode::floor).to(DType::i64).to_vector<int64_t>();
    for (size_t i = 0; i + 1 < a.size(); ++i) {
      int64_t t = a[i] / b[i], f = t - ((a[i] % b[i] != 0) && ((a[i] < 0) != (b[i] < 0)));
      ASSERT_EQ(tr[i], t) << a[i] << " / " << b[i] << " " << dtype_name(dt);
      ASSERT_EQ(fl[i], f) << a[i] << " // " << b[i] << " " << dtype_name(dt);
    }
    int64_t lo = dt == DType::i64 ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int32_t>::min();
    if (dt == DType::i64) {
      EXPECT_EQ(tr.back(), lo) << "the minimum over -1 wraps";
    }
    // the scalar form
    EXPECT_EQ(div(ta, 2.0, RoundingMode::floor).to(DType::i64).to_vector<int64_t>()[0], -7);  // -13 // 2
    EXPECT_EQ(div(ta, 2.0, RoundingMode::trunc).to(DType::i64).to_vector<int64_t>()[0], -6);
  }
  std::vector<float> fa, fb;
  for (int64_t i = 0; i < int64_t(a.size()) - 1; ++i) fa.push_back(0.37f * float(a[size_t(i)])), fb.push_back(float(b[size_t(i)]) * 0.11f);
  Tensor x = from_host(fa, {int64_t(fa.size())}), y = from_host(fb, {int64_t(fb.size())});
  std::vector<float> tr = div(x, y, RoundingMode::trunc).to_float_vector(), fl = div(x, y, RoundingMode::floor).to_float_vector();
  for (size_t i = 0; i < fa.size(); ++i) {
    double q = double(fa[i]) / double(fb[i]);
    if (std::fabs(q - std::round(q)) < 1e-5) continue;  // next to an integer: f32 rounding decides
    EXPECT_EQ(tr[i], float(std::trunc(q))) << fa[i] << " / " << fb[i];
    EXPECT_EQ(fl[i], float(std::floor(q))) << fa[i] << " // " << fb[i];
  }
  EXPECT_TRUE(std::isinf(div(from_host({1.f}, {1}), from_host({0.f}, {1}), RoundingMode::floor).item()));
  Tensor zero = from_host_i64({4, 0}, {2});
  try {
    div(from_host_i64({8, 8}, {2}), zero, RoundingMode::floor).to_vector<int64_t>();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ZeroDivisionError"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("[div]", 0), 0u) << e.what();
  }
  EXPECT_EQ(div(from_host_i64({9}, {1}), 2.0, RoundingMode::floor).to_vector<int64_t>()[0], 4);
}

// remainder (Python's %): integers against a - floor(a / b) * b in C++ (every sign pair, the
// minimum over -1 giving 0), floats against fmod moved by b (the sign of the divisor), both
// operand orders with a scalar; a zero integer divisor is a kernel error naming remainder.
TEST(Elementwise, RemainderTakesTheDivisorsSign) {
  std::vector<int64_t> a, b;
  for (int64_t x = -13; x <= 13; ++x)
    for (int64_t y : {-7, -4, -3, -1, 1, 2, 5, 13}) a.push_back(x), b.push_back(y);
  a.push_back(std::numeric_limits<int64_t>::min()), b.push_back(-1);
  const Shape s{int64_t(a.size())};
  for (DType dt : {DType::i64, DType::i32}) {
    Tensor ta = from_host_i64(a, s).to(dt), tb = from_host_i64(b, s).to(dt);
    std::vector<int64_t> r = remainder(ta, tb).to(DType::i64).to_vector<int64_t>();
    for (size_t i = 0; i + 1 < a.size(); ++i) {
      int64_t m = a[i] % b[i];
      if (m != 0 && ((m < 0) != (b[i] < 0))) m += b[i];
      ASSERT_EQ(r[i], m) << a[i] << " % " << b[i] << " " << dtype_name(dt);
    }
    if (dt == DType::i64) {
      EXPECT_EQ(r.back(), 0) << "the minimum % -1";
    }
    EXPECT_EQ(remainder(ta, 4.0).to(DType::i64).to_vector<int64_t>()[0], 3);    // -13 % 4
    EXPECT_EQ(remainder(-13.0, tb).to(DType::i64).to_vector<int64_t>()[0], -6);  // -13 % -7
  }
  std::vector<float> fa = {5.5f, -5.5f, 5.5f, -5.5f, 0.0f, -0.0f, 7.0f, 1e30f}, fb = {2.f, 2.f, -2.f, -2.f, 3.f, 3.f, 0.f, 3.f};
  Tensor x = from_host(fa, {8}), y = from_host(fb, {8});
  std::vector<float> r = remainder(x, y).to_float_vector();
  for (size_t i = 0; i < fa.size(); ++i) {
    float m = std::fmod(fa[i], fb[i]);
    if (m != 0 && ((m < 0) != (fb[i] < 0))) m += fb[i];
    if (std::isnan(m)) {
      EXPECT_TRUE(std::isnan(r[i])) << fa[i] << " % " << fb[i];
      continue;
    }
    EXPECT_EQ(r[i], m) << fa[i] << " % " << fb[i];
    EXPECT_EQ(std::signbit(r[i]), std::signbit(m)) << fa[i] << " % " << fb[i];
  }
  try {
    remainder(from_host_i64({8, 8}, {2}), from_host_i64({4, 0}, {2})).to_vector<int64_t>();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ZeroDivisionError"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("[remainder]", 0), 0u) << e.what();
  }
}
