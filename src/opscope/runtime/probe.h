// What a device can do at most, measured: the roofline's two ceilings (memory bandwidth
// from a STREAM-like copy on the device's cores, compute from an f32 matmul) and the
// rate at which tiny launches go through. Achieved GB/s and GFLOP/s of profiled ops are
// shown as fractions of these; the fusion advisor prices saved bytes with them.
#pragma once
#include <string>

#include "opscope/runtime/device.h"

namespace opscope::runtime {

struct DevicePeaks {
  std::string device;       // the device's description
  double copy_gbps = 0;     // STREAM copy: bytes read + written per second
  double triad_gbps = 0;    // STREAM triad
  double matmul_gflops = 0; // f32 matmul of two n x n matrices, 2n^3 flops
  int64_t matmul_n = 0;
  double launch_ns = 0;     // wall time per tiny launch queued back to back (host or device bound)
  std::string method;       // how it was measured, for the profile's reader

  std::string to_json() const;  // an object with the fields above
};

struct ProbeOptions {
  int64_t copy_bytes = int64_t(64) << 20;  // per array; larger than the last-level cache
  int64_t matmul_n = 1024;
  int repeats = 5;                         // best of
};

// Runs the probes on `dev` (about 0.1-0.3 s on a 2-core machine) and waits for the
// device. Throws "[probe] ..." for options out of range.
DevicePeaks measure_peaks(Device& dev, const ProbeOptions& options = {});
// measure_peaks with the default options, once per device per process.
const DevicePeaks& device_peaks(Device& dev);

}  // namespace opscope::runtime
