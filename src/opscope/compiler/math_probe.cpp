#include "opscope/compiler/math_probe.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "opscope/compiler/compile.h"
#include "opscope/core/error.h"
#include "opscope/ops/ops.h"
#include "opscope/profiler/session.h"

namespace opscope::compiler {

namespace {

using MathFn = Tensor (*)(const Tensor&);

// Each op on x in [0.5, 1.5]: inside every op's domain (log, sqrt, pow) and the fast
// path of sin and cos. div and pow take their generic forms (a tensor divisor, a
// non-integer exponent).
struct Probe {
  std::string_view op;
  MathFn fn;
};
const std::vector<Probe>& probes() {
  static const std::vector<Probe> all = {
      {"exp", [](const Tensor& x) { return opscope::exp(x); }},
      {"log", [](const Tensor& x) { return opscope::log(x); }},
      {"sqrt", [](const Tensor& x) { return opscope::sqrt(x); }},
      {"rsqrt", [](const Tensor& x) { return opscope::rsqrt(x); }},
      {"sin", [](const Tensor& x) { return opscope::sin(x); }},
      {"cos", [](const Tensor& x) { return opscope::cos(x); }},
      {"tanh", [](const Tensor& x) { return opscope::tanh(x); }},
      {"sigmoid", [](const Tensor& x) { return opscope::sigmoid(x); }},
      {"silu", [](const Tensor& x) { return opscope::silu(x); }},
      {"gelu", [](const Tensor& x) { return opscope::gelu(x); }},
      {"pow", [](const Tensor& x) { return opscope::pow(x, 1.5); }},
      {"div", [](const Tensor& x) { return opscope::div(1.0, x); }},
  };
  return all;
}

// The fused kernel a probe compiles into: "fused_silu_mul_f32".
std::string kernel_of(std::string_view op) { return fmt::format("fused_{}_mul_f32", op); }

}  // namespace

const std::vector<std::string_view>& probed_math_ops() {
  static const std::vector<std::string_view> ops = [] {
    std::vector<std::string_view> v;
    for (const Probe& p : probes()) v.push_back(p.op);
    return v;
  }();
  return ops;
}

std::string MathCosts::to_json() const {
  nlohmann::ordered_json j;
  j["ns_per_element"] = ns_per_element;
  j["method"] = method;
  return j.dump();
}

MathCosts measure_math_costs(Device& dev, int repeats) {
  if (repeats < 1) fail("math probe", "repeats must be at least 1 (got {})", repeats);
  MathCosts out;
  if (dev.type() != DeviceType::cpu) return out;
  // 32K elements per core: every core takes a share (the kernels' grain) and x, y and
  // the result stay in each core's cache.
  const int64_t n = int64_t(32768) * dev.num_cores();
  Tensor x = rand({n}, 11, DType::f32, &dev, 0.5f, 1.5f), y = rand({n}, 12, DType::f32, &dev, 0.5f, 1.5f);
  // One function, one build: each op(x) * y is its own fused kernel (concat does not
  // fuse, so nothing joins them). The first kernel, (x + y) * y, wakes the cores: the
  // next ones start with every core running, as a model's kernels do.
  CompiledFunction f = compile(
      [](const Tensor& a, const Tensor& b) {
        std::vector<Tensor> parts{(a + b) * b};
        for (const Probe& p : probes()) parts.push_back(p.fn(a) * b);
        return concat(parts, 0);
      },
      "math_probe");
  f(x, y);  // compile (or load) and warm
  dev.synchronize();
  std::map<std::string, double> best;  // kernel → fastest span × its cores
  for (int r = 0; r < repeats; ++r) {
    prof::ProfilerConfig pc;
    pc.layers = prof::kDevice;
    prof::Profiler p(pc);
    p.start();
    f(x, y);
    dev.synchronize();
    p.stop();
    struct Span { int64_t t0 = std::numeric_limits<int64_t>::max(), t1 = 0; int cores = 0; std::string name; };
    std::map<uint64_t, Span> launches;
    for (const prof::TraceEvent& e : p.trace().events) {
      if (e.kind != prof::EventKind::kernel) continue;
      Span& s = launches[e.id];
      s.t0 = std::min(s.t0, e.t0);
      s.t1 = std::max(s.t1, e.t1);
      s.cores++;
      s.name = e.name;
    }
    for (auto& [id, s] : launches) {
      double v = double(s.t1 - s.t0) * s.cores;
      auto it = best.find(s.name);
      if (it == best.end() || v < it->second) best[s.name] = v;
    }
  }
  for (const Probe& p : probes())
    if (auto it = best.find(kernel_of(p.op)); it != best.end()) out.ns_per_element[std::string(p.op)] = it->second / double(n);
  out.method = fmt::format(
      "fastest of {}: a generated kernel op(x) * y over {} f32 elements ({} per core, in cache), its time × cores "
      "per element",
      repeats, n, n / dev.num_cores());
  return out;
}

}  // namespace opscope::compiler
