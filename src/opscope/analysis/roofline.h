// The roofline of the device a profile ran on: its measured peak bandwidth and compute
// (runtime/probe.h), carried in the profile's config as "device_peaks", and where an
// op's achieved GB/s and GFLOP/s sit under it.
//
// An op moving B bytes and doing F flops in time t has arithmetic intensity F/B; the
// most it can reach is min(peak_gflops, F/B * peak_gbps). Its fraction of the roof is
// the larger of gbps/peak_gbps and gflops/peak_gflops: the share of the resource it is
// bound by that it used. The memory roof depends on where the data lives: with the
// probe's levels, an op whose working set fits a cache is held to that cache's rate.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace opscope::analysis {

struct Roofline {
  double peak_gbps = 0;    // best streaming rate beyond the caches
  double peak_gflops = 0;  // f32 matmul
  // The probe's streaming rates by working set, ascending; empty for older profiles.
  struct Level {
    double working_set = 0, gbps = 0;  // bytes; the best rate (the roof)
    double store_gbps = 0;             // with ordinary stores (0: not measured)
  };
  std::vector<Level> levels;
  double spread = 0;       // the probe's spread over repetitions (a busy machine: > 0.15)

  bool known() const { return peak_gbps > 0 && peak_gflops > 0; }
  // The streaming rate for data of `working_set` bytes: log-interpolated between the
  // probe's levels, the smallest's below them and the largest's (peak_gbps) beyond.
  double gbps_at(double working_set) const;
  // Likewise for kernels with ordinary stores (what opscope's kernels, fused ones too,
  // reach); gbps_at where the probe did not measure it.
  double store_gbps_at(double working_set) const;
  // Flops per byte where the two roofs meet.
  double ridge() const { return peak_gbps > 0 ? peak_gflops / peak_gbps : 0; }
  double attainable_gflops(double flops_per_byte) const;
  // working_set > 0: against the memory roof of that size.
  double fraction(double gbps, double gflops, double working_set = 0) const;
  // "87.3%", or "above roof" past 105%: a point over the measured roof means the probe
  // read low (a busy machine), not an op faster than the device.
  static std::string format_fraction(double fraction);
  // "memory" below the ridge, "compute" at or above it.
  const char* bound(double flops_per_byte) const { return flops_per_byte < ridge() ? "memory" : "compute"; }
};
constexpr double kAboveRoof = 1.05;  // noise allowance before a point is flagged

// From a trace's config JSON (Peaks::from_config(...).roofline(), peaks.h): "device_peaks"
// {stream_gbps or copy_gbps, matmul_gflops, levels, spread}, else a bare "peak_gbps" (no
// compute roof). Unknown or malformed: a Roofline with zeros.
Roofline roofline_from_config(std::string_view config_json);

// `config_json` with its "device_peaks" (and "peak_gbps") replaced by `peaks_json`
// (DevicePeaks::to_json()): a saved probe's figures for a profile from elsewhere.
// Throws "[peaks] ..." when peaks_json is not a probe's JSON object.
std::string with_device_peaks(std::string_view config_json, std::string_view peaks_json);
// `config_json` with a memory roof of `gbps` given by hand: the probe's levels dropped,
// its compute roof kept.
std::string with_peak_gbps(std::string_view config_json, double gbps);
// Reads a saved probe (`opscope probe --save FILE`); throws "[--peaks] ..." naming the file.
std::string load_device_peaks(const std::string& path);

// Every trace collected from now on carries `peaks_json` (DevicePeaks::to_json()) as
// config "device_peaks" and its memory roof as "peak_gbps".
void attach_device_peaks(const std::string& peaks_json);

}  // namespace opscope::analysis
