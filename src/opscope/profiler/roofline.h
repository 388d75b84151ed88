// The roofline of the device a profile ran on: its measured peak bandwidth and compute
// (runtime/probe.h), carried in the profile's config as "device_peaks", and where an
// op's achieved GB/s and GFLOP/s sit under it.
//
// An op moving B bytes and doing F flops in time t has arithmetic intensity F/B; the
// most it can reach is min(peak_gflops, F/B * peak_gbps). Its fraction of the roof is
// the larger of gbps/peak_gbps and gflops/peak_gflops: the share of the resource it is
// bound by that it used.
#pragma once
#include <string>
#include <string_view>

namespace opscope::prof {

struct Roofline {
  double peak_gbps = 0;    // STREAM copy on the device's cores
  double peak_gflops = 0;  // f32 matmul

  bool known() const { return peak_gbps > 0 && peak_gflops > 0; }
  // Flops per byte where the two roofs meet.
  double ridge() const { return peak_gbps > 0 ? peak_gflops / peak_gbps : 0; }
  double attainable_gflops(double flops_per_byte) const;
  double fraction(double gbps, double gflops) const;
  // "memory" below the ridge, "compute" at or above it.
  const char* bound(double flops_per_byte) const { return flops_per_byte < ridge() ? "memory" : "compute"; }
};

// From a trace's config JSON: "device_peaks" {copy_gbps, matmul_gflops}, else a bare
// "peak_gbps" (no compute roof). Unknown or malformed: a Roofline with zeros.
Roofline roofline_from_config(std::string_view config_json);

// Every trace collected from now on carries `peaks_json` (DevicePeaks::to_json()) as
// config "device_peaks" and its copy bandwidth as "peak_gbps".
void attach_device_peaks(const std::string& peaks_json);

}  // namespace opscope::prof
