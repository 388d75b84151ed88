// What the math of each op costs inside a generated (fused) kernel, measured on a device.
// The advisor prices a fused kernel's math with it: the compiler writes silu as
// x / (1 + e^-x) with a branch-free vectorized exp, which is not the eager kernel's code
// and need not take the eager kernel's time (on the case study's 2-core EPYC it takes
// about two thirds of it), so the eager op's compute time mispriced what compiling saves.
//
// For each math op: one fused kernel op(x) * y over 32K f32 elements per core (in cache,
// every core busy), the fastest of a few runs; its time per element per core is what the
// op's math costs there, its loads and stores overlapped with it.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "opscope/runtime/device.h"

namespace opscope::compiler {

// The key device peaks (runtime::DevicePeaks' JSON) carry a MathCosts under.
constexpr std::string_view kMathCostsKey = "fused_math";

struct MathCosts {
  std::map<std::string, double> ns_per_element;  // per element per core, by op name ("silu")
  std::string method;                             // how it was measured, for the profile's reader
  bool empty() const { return ns_per_element.empty(); }
  std::string to_json() const;  // {"ns_per_element": {...}, "method": "..."}
};

// The math ops the probe measures (the advisor's math ops: exp, log, ..., div).
const std::vector<std::string_view>& probed_math_ops();

// Compiles (through the cache) and runs the probe kernels on `dev`. Empty when the
// compiler could not build them (no system compiler: the function ran eagerly) or `dev`
// is not the CPU device. Throws "[math probe] ..." for repeats < 1.
MathCosts measure_math_costs(Device& dev, int repeats = 5);

}  // namespace opscope::compiler
