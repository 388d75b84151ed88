// The device peaks every profile of a `profile` command carries: measured now, or from a
// saved probe (`--peaks FILE`, written by `opscope probe --save FILE`) so profiles taken on
// a busy machine are read against one quiet measurement. Returns the line to print.
// Measured now, the peaks also carry what the math of each op costs in generated
// kernels (compiler/math_probe.h), which the advisor prices compiled fixes with.
#pragma once
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>

#include "opscope/analysis/roofline.h"
#include "opscope/compiler/math_probe.h"
#include "opscope/runtime/device.h"
#include "opscope/runtime/probe.h"

namespace opscope::cli {

// `peaks_json` with the generated kernels' math costs added (unchanged when the compiler
// could not build them). Each probe kernel runs for some 15 µs: four times the device
// probe's repeats cost little and keep a busy machine's preemptions out of the best.
inline std::string with_math_costs(const std::string& peaks_json, int repeats = 5) {
  compiler::MathCosts m = compiler::measure_math_costs(cpu(), 4 * repeats);
  if (m.empty()) return peaks_json;
  auto j = nlohmann::json::parse(peaks_json);
  j[std::string(compiler::kMathCostsKey)] = nlohmann::json::parse(m.to_json());
  return j.dump();
}

// `copy_gbps`, where given, gets the peaks' copy rate (GB/s, bytes read + written; 0 when
// a saved file has none).
inline std::string attach_peaks(const std::string& saved, double* copy_gbps = nullptr) {
  if (saved.empty()) {
    const runtime::DevicePeaks& peaks = runtime::device_peaks(cpu());
    analysis::attach_device_peaks(with_math_costs(peaks.to_json()));
    if (copy_gbps) *copy_gbps = peaks.copy_gbps;
    return peaks.summary();
  }
  std::string json = analysis::load_device_peaks(saved);
  analysis::attach_device_peaks(json);
  auto j = nlohmann::json::parse(json);
  if (copy_gbps) *copy_gbps = j.value("copy_gbps", 0.0);
  double gbps = j.value("stream_gbps", j.value("copy_gbps", 0.0));
  double spread = j.value("spread", 0.0);
  return fmt::format("device peaks: from {} (stream {:.1f} GB/s, f32 matmul {:.1f} GFLOP/s; spread {:.0f}%)\n", saved,
                     gbps, j.value("matmul_gflops", 0.0), 100 * spread) +
         runtime::busy_warning(spread);
}

}  // namespace opscope::cli
