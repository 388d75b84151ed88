#include "opscope/cases/rmsnorm.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>

#include "opscope/compiler/compile.h"
#include "opscope/core/error.h"
#include "opscope/ops/ops.h"
#include "opscope/runtime/device.h"

namespace opscope::cases {

Tensor naive_rms_norm(const Tensor& x, const Tensor& weight, double eps) {
  Tensor x_sq = x * x;
  Tensor mean_sq = mean(x_sq, {-1}, /*keepdim=*/true);
  Tensor mean_sq_eps = mean_sq + eps;
  Tensor r = rsqrt(mean_sq_eps);
  Tensor x_r = x * r;
  return x_r * weight;
}

Tensor builtin_rms_norm(const Tensor& x, const Tensor& weight, double eps) { return rms_norm(x, weight, eps); }

Tensor compiled_rms_norm(const Tensor& x, const Tensor& weight, double eps) {
  // eps is a constant of the traced graph, so each eps gets its own compiled function.
  static std::mutex m;
  static std::map<double, CompiledFunction> by_eps;
  CompiledFunction* f;
  {
    std::lock_guard<std::mutex> g(m);
    auto it = by_eps.find(eps);
    if (it == by_eps.end())
      it = by_eps.emplace(eps, compile([eps](const Tensor& a, const Tensor& b) { return naive_rms_norm(a, b, eps); },
                                       "rms_norm_compiled"))
               .first;
    f = &it->second;
  }
  return (*f)(x, weight);
}

void parse_shape(const std::string& s, int64_t& rows, int64_t& hidden) {
  size_t x = s.find('x');
  try {
    if (x == std::string::npos) throw std::invalid_argument("no x");
    size_t a = 0, b = 0;
    rows = std::stoll(s.substr(0, x), &a);
    hidden = std::stoll(s.substr(x + 1), &b);
    if (a != x || b != s.size() - x - 1 || rows <= 0 || hidden <= 0) throw std::invalid_argument("bad");
  } catch (const std::exception&) {
    fail("--shape", "'{}' is not ROWSxHIDDEN with positive sizes, e.g. 4096x4096", s);
  }
  int64_t elements = 0;  // (a product past int64 would wrap into a plausible size)
  if (__builtin_mul_overflow(rows, hidden, &elements) || elements > (int64_t(1) << 60))
    fail("--shape", "'{}' is {} x {} elements: more than 2^60, past what a tensor can address", s, rows, hidden);
}

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

std::vector<RmsNormTiming> time_rms_norm(const RmsNormSetup& st, const std::vector<std::string>& impls) {
  Tensor x = randn({st.rows, st.hidden}, st.seed, st.dtype);
  Tensor w = rand({st.hidden}, st.seed + 1, st.dtype, nullptr, 0.5f, 1.5f);
  Tensor reference = naive_rms_norm(x, w).to(DType::f32);
  std::vector<float> ref = reference.to_float_vector();
  Stream& s = current_stream(x.device());
  std::vector<RmsNormTiming> out;
  for (const std::string& impl : impls) {
    auto fn = impl == "naive"     ? naive_rms_norm
              : impl == "builtin"  ? builtin_rms_norm
              : impl == "compiled" ? compiled_rms_norm
                                   : nullptr;
    if (!fn) fail("--impl", "unknown implementation '{}' (expected naive, builtin or compiled)", impl);
    for (int i = 0; i < st.warmup; ++i) fn(x, w, 1e-6);
    s.synchronize();
    std::vector<double> dev_ms, host_ms;
    Tensor y;
    for (int i = 0; i < st.iters; ++i) {
      auto h0 = std::chrono::steady_clock::now();
      Event a = s.record();
      y = fn(x, w, 1e-6);
      Event b = s.record();
      s.synchronize();
      host_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - h0).count());
      dev_ms.push_back(a.elapsed_ms(b));
    }
    std::vector<float> got = y.to(DType::f32).to_float_vector();
    double diff = 0;
    for (size_t i = 0; i < got.size(); ++i) diff = std::max(diff, double(std::fabs(got[i] - ref[i])));
    out.push_back({impl, median(dev_ms), median(host_ms), diff});
  }
  return out;
}

}  // namespace opscope::cases
