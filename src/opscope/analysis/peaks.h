// A profile's device peaks, read once from its config ("device_peaks") into one typed
// struct that the roofline, the advisor's pricing and the explorer share. Where they
// come from: opscope's probe of the device it ran on (runtime/probe.h: streaming rates
// per working set, f32 matmul, the generated kernels' math costs), a saved probe
// (`opscope probe --save`), a GPU's datasheet (importer/gpu_peaks.h, for imported
// traces), or the command line (--peak-gbps).
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "opscope/analysis/roofline.h"
#include "opscope/analysis/trace.h"

namespace opscope::analysis {

struct Peaks {
  std::string device;  // "NVIDIA A100-SXM4-40GB", "cpu:0"
  std::string model;   // the datasheet entry ("A100 SXM 40GB"); empty for a probe
  std::string method;  // how they were found
  double memory_gbps = 0;     // stream_gbps (the probe's best beyond the caches), else copy_gbps
  double compute_gflops = 0;  // matmul_gflops: f32 matmul measured, or a GPU's dense bf16
  double f32_gflops = 0;      // a GPU's dense f32 (datasheets)
  double spread = 0;          // the probe's spread over repetitions (> 0.15: a busy machine)
  std::vector<Roofline::Level> levels;         // the probe's rates by working set, ascending
  std::map<std::string, double> fused_math_ns;  // generated code's math per element and core, by op

  bool known() const { return memory_gbps > 0; }
  bool datasheet() const { return method.rfind("datasheet", 0) == 0; }
  Roofline roofline() const;

  // From a profile's config JSON: its "device_peaks", else a bare "peak_gbps" (a
  // memory roof alone). Absent or malformed: no peaks (all zero).
  static Peaks from_config(std::string_view config_json);
  // From a device_peaks object itself (a probe's JSON). Not an object: no peaks.
  static Peaks from_json(std::string_view peaks_json);
};

// The peaks the profile carries.
Peaks profile_peaks(const Trace& trace);

}  // namespace opscope::analysis
