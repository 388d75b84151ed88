// leaky_relu, elu, softplus, mish, log10, exp2, log_sigmoid, atanh, frac and lgamma
// (cpu_kernels::unary_param_spec through
// the ops) against double-precision references: f32 at the op's accuracy, bf16/f16 as the
// f32 kernel rounded once, special values, and the errors.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>

#include "inputs_util.h"
#include "opscope/core/error.h"
#include "opscope/ops/ops.h"

using namespace opscope;
using test_util::uniform;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Case {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> ref;
  float lo, hi;  // input range
  double rtol;   // f32 accuracy (relative, plus 1e-38 absolute)
};

double softplus_ref(double x, double beta, double threshold) {
  return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta;
}
double elu_ref(double x, double alpha, double scale, double input_scale) {
  return x > 0 ? x * scale : alpha * scale * std::expm1(x * input_scale);
}

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"leaky_relu", [](const Tensor& x) { return leaky_relu(x); }, [](double x) { return x > 0 ? x : x * double(0.01f); }, -8,
       8, 6e-8},
      {"leaky_relu 0.2", [](const Tensor& x) { return leaky_relu(x, 0.2); },
       [](double x) { return x > 0 ? x : x * double(0.2f); }, -8, 8, 6e-8},
      {"leaky_relu -0.5", [](const Tensor& x) { return leaky_relu(x, -0.5); },
       [](double x) { return x > 0 ? x : x * -0.5; }, -8, 8, 0},
      {"elu", [](const Tensor& x) { return elu(x); }, [](double x) { return elu_ref(x, 1, 1, 1); }, -10, 10, 3e-7},
      {"elu 0.5", [](const Tensor& x) { return elu(x, 0.5); }, [](double x) { return elu_ref(x, 0.5, 1, 1); }, -10,
       10, 3e-7},
      {"selu", [](const Tensor& x) { return elu(x, 1.6732632423543772, 1.0507009873554805); },
       [](double x) { return elu_ref(x, 1.6732632423543772, 1.0507009873554805, 1); }, -10, 10, 4e-7},
      {"celu 0.5", [](const Tensor& x) { return elu(x, 0.5, 1, 2); }, [](double x) { return elu_ref(x, 0.5, 1, 2); },
       -10, 10, 3e-7},
      {"softplus", [](const Tensor& x) { return softplus(x); }, [](double x) { return softplus_ref(x, 1, 20); }, -30,
       30, 4e-7},
      {"softplus 2 5", [](const Tensor& x) { return softplus(x, 2, 5); },
       [](double x) { return softplus_ref(x, 2, 5); }, -30, 30, 4e-7},
      {"mish", [](const Tensor& x) { return mish(x); },
       [](double x) { return x * std::tanh(softplus_ref(x, 1, 20)); }, -30, 30, 6e-7},
      {"log10", [](const Tensor& x) { return opscope::log10(x); }, [](double x) { return std::log10(x); }, 1e-3f,
       1000, 3e-7},
      {"exp2", [](const Tensor& x) { return opscope::exp2(x); }, [](double x) { return std::exp2(x); }, -30, 30, 3e-7},
      {"log_sigmoid", [](const Tensor& x) { return log_sigmoid(x); },
       [](double x) { return std::min(x, 0.0) - std::log1p(std::exp(-std::fabs(x))); }, -30, 30, 4e-7},
      {"atanh", [](const Tensor& x) { return opscope::atanh(x); }, [](double x) { return std::atanh(x); }, -0.999f,
       0.999f, 4.8e-7},
      {"atanh near 0", [](const Tensor& x) { return opscope::atanh(x); }, [](double x) { return std::atanh(x); },
       -1e-3f, 1e-3f, 4.8e-7},
      {"frac", [](const Tensor& x) { return frac(x); }, [](double x) { return x - std::trunc(x); }, -1e3f, 1e3f, 0},
      // away from lgamma's zeros at 1 and 2, where only an absolute error is meaningful
      {"lgamma", [](const Tensor& x) { return opscope::lgamma(x); }, [](double x) { return std::lgamma(x); }, 2.5f,
       1e4f, 3e-7},
  };
  return c;
}

bool close(double got, double want, double rtol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= 1e-38 + rtol * std::fabs(want);
}

TEST(Activations, F32MatchesDoubleReference) {
  for (const auto& c : cases())
    for (int64_t n : {1, 3, 4097}) {
      std::vector<float> v = uniform(n, c.lo, c.hi, 7);
      std::vector<float> g = c.op(from_host(v, {n})).to_float_vector();
      int bad = 0;
      for (size_t i = 0; i < v.size(); ++i)
        if (!close(g[i], c.ref(v[i]), c.rtol) && ++bad < 4)
          ADD_FAILURE() << c.name << "(" << v[i] << ") = " << g[i] << ", want " << c.ref(v[i]);
      EXPECT_EQ(bad, 0) << c.name << " of " << n;
    }
}

// A strided view (every other element of a transpose) gives the values of its copy.
TEST(Activations, ViewsMatchContiguous) {
  for (const auto& c : cases()) {
    Tensor x = from_host(uniform(7 * 9, c.lo, c.hi, 3), {7, 9});
    Tensor v = x.transpose(0, 1).slice(1, 1, 7, 2);
    EXPECT_EQ(c.op(v).to_float_vector(), c.op(v.contiguous()).to_float_vector()) << c.name;
  }
}

// bf16/f16: the f32 kernel on the widened values, rounded once, for every bit pattern.
TEST(Activations, HalfIsTheF32KernelRoundedOnce) {
  for (DType dt : {DType::bf16, DType::f16}) {
    Tensor x = test_util::every_bit_pattern(dt);
    for (const auto& c : cases()) {
      std::vector<float> got = c.op(x).to_float_vector(), want = c.op(x.to(DType::f32)).to(dt).to_float_vector();
      int bad = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        bool ok = std::isnan(want[i]) ? std::isnan(got[i])
                                      : std::bit_cast<uint32_t>(got[i]) == std::bit_cast<uint32_t>(want[i]);
        if (!ok && ++bad < 4) ADD_FAILURE() << dtype_name(dt) << " " << c.name << ": " << got[i] << " vs " << want[i];
      }
      EXPECT_EQ(bad, 0) << dtype_name(dt) << " " << c.name;
      // and near the double reference, within one rounding of the output
      std::vector<float> in = x.to_float_vector();
      double r = dt == DType::bf16 ? 2 * 3.9e-3 : 2 * 4.9e-4;
      for (size_t i = 0; i < in.size(); i += 97) {
        double w = c.ref(in[i]);
        if (std::isfinite(w) && std::fabs(w) < (dt == DType::f16 ? 65504 : 3e38) && std::fabs(w) > 1e-4) {
          EXPECT_TRUE(close(got[i], w, r)) << dtype_name(dt) << " " << c.name << "(" << in[i] << ") = " << got[i];
        }
      }
    }
  }
}

TEST(Activations, SpecialValues) {
  std::vector<float> v = {0.f, -0.f, float(kInf), float(-kInf), NAN, 1e-40f, -1e-40f, 1e-7f, -1e-7f,
                          88.f, 89.f, -87.f, -100.f, 127.f, 128.f, -149.f, -150.f, 1e30f, -1e30f};
  Tensor x = from_host(v, {int64_t(v.size())});
  // atol: results that are f32 denormals (mish's e^x at -100) keep only a few bits
  for (const auto& c : cases()) {
    std::vector<float> g = c.op(x).to_float_vector();
    for (size_t i = 0; i < v.size(); ++i) {
      double w = c.ref(v[i]);
      if (std::isinf(v[i]) && std::string(c.name) == "mish" && v[i] < 0) w = NAN;  // -inf * tanh(0), as torch
      if (!std::isfinite(w) || std::fabs(w) > 3.4028234663852886e38) {
        bool ok = std::isnan(w) ? std::isnan(g[i]) : g[i] == float(w);
        EXPECT_TRUE(ok) << c.name << "(" << v[i] << ") = " << g[i] << ", want " << w;
      } else {
        EXPECT_NEAR(g[i], w, 1e-42 + 1e-6 * std::fabs(w)) << c.name << "(" << v[i] << ")";
      }
    }
  }
  // signed zeros as torch: leaky_relu(-0) = -0 * slope, elu(-0) = -0
  EXPECT_TRUE(std::signbit(leaky_relu(from_host({-0.f}, {1})).item()));
  EXPECT_FALSE(std::signbit(leaky_relu(from_host({-0.f}, {1}), -0.5).item()));
  EXPECT_TRUE(std::signbit(elu(from_host({-0.f}, {1})).item()));
  // exp2 is exact at integers
  for (float k : {-149.f, -126.f, -3.f, 0.f, 1.f, 10.f, 127.f})
    EXPECT_EQ(opscope::exp2(from_host({k}, {1})).item(), std::ldexp(1.0, int(k))) << k;
}

TEST(Activations, ErrorsNameTheOp) {
  Tensor i = from_host({1.f, 2.f}, {2}).to(DType::i64);
  for (auto& [name, f] : std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>>{
           {"leaky_relu", [](const Tensor& t) { return leaky_relu(t); }},
           {"elu", [](const Tensor& t) { return elu(t); }},
           {"softplus", [](const Tensor& t) { return softplus(t); }},
           {"mish", [](const Tensor& t) { return mish(t); }},
           {"log10", [](const Tensor& t) { return opscope::log10(t); }},
           {"exp2", [](const Tensor& t) { return opscope::exp2(t); }},
           {"log_sigmoid", [](const Tensor& t) { return log_sigmoid(t); }},
           {"atanh", [](const Tensor& t) { return opscope::atanh(t); }},
           {"frac", [](const Tensor& t) { return frac(t); }},
           {"lgamma", [](const Tensor& t) { return opscope::lgamma(t); }}}) {
    try {
      f(i);
      ADD_FAILURE() << name << " took i64";
    } catch (const Error& e) {
      std::string m = e.what();
      EXPECT_EQ(m.rfind("[" + name + "]", 0), 0u) << m;
      EXPECT_NE(m.find("i64"), std::string::npos) << m;
    }
  }
}

}  // namespace

namespace {

// lgamma where it crosses 0 (x = 1, 2) and between its poles (negative x), within an
// absolute 1e-6 of the double value; the poles themselves give +inf.
TEST(Activations, LgammaNearItsZerosAndPoles) {
  std::vector<float> v;
  for (int i = -40; i <= 40; ++i) v.push_back(1.0f + float(i) * 1e-3f), v.push_back(2.0f + float(i) * 1e-3f);
  for (float x : {-0.5f, -1.5f, -2.25f, -3.75f, -10.5f, 0.25f, 1e-3f}) v.push_back(x);
  std::vector<float> g = opscope::lgamma(from_host(v, {int64_t(v.size())})).to_float_vector();
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(g[i], std::lgamma(double(v[i])), 1e-6 + 3e-7 * std::fabs(g[i])) << v[i];
  for (float pole : {0.f, -1.f, -2.f, -50.f}) EXPECT_EQ(opscope::lgamma(from_host({pole}, {1})).item(), INFINITY) << pole;
}

}  // namespace
