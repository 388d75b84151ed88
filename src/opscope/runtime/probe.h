// What a device can do at most, measured: the roofline's ceilings (memory bandwidth at
// each level of the memory hierarchy, compute from an f32 matmul) and the rate at which
// tiny launches go through. Achieved GB/s and GFLOP/s of profiled ops are shown as
// fractions of these; the fusion advisor prices a fused kernel's bytes with them.
//
// Bandwidth is the best streaming rate the device reaches, not one kernel's: at each
// working-set size the probe runs a read-only sum, a copy and a triad, each with plain
// and with non-temporal stores (which skip the read-for-ownership of the line written),
// and keeps the fastest. A profiled kernel can then only pass the roof by noise.
//
// A busy machine measures slow: each probe is repeated and the spread of its times
// ((slowest − fastest) / fastest) is recorded beside the best, so a reader of a profile
// sees when its roof was measured on a loaded machine. `opscope probe --save FILE`
// keeps one quiet measurement for later tables (`opscope table --peaks FILE`).
#pragma once
#include <string>
#include <vector>

#include "opscope/runtime/device.h"

namespace opscope::runtime {

// The best streaming rate at one working-set size (all arrays of the probe together).
struct StreamLevel {
  int64_t working_set_bytes = 0;
  double gbps = 0;          // best of the kernels
  std::string kernel;       // which one: read, copy, copy_nt, triad, triad_nt
  double spread = 0;        // of the best kernel's repetitions
  // The best of copy and triad with ordinary stores: what a kernel that writes its
  // result the usual way (opscope's own, a fused kernel) streams at.
  double store_gbps = 0;
};

struct DevicePeaks {
  std::string device;       // the device's description
  double copy_gbps = 0;     // STREAM copy at the largest working set: bytes read + written per second
  double triad_gbps = 0;    // STREAM triad, likewise
  double stream_gbps = 0;   // the best streaming rate at the largest working set: the memory roof
  std::vector<StreamLevel> levels;  // ascending working sets, the largest beyond the caches
  double spread = 0;        // the memory roof's (largest level's): above kBusySpread, the machine was busy
  double matmul_gflops = 0; // f32 matmul of two n x n matrices, 2n^3 flops
  int64_t matmul_n = 0;
  double launch_ns = 0;     // wall time per tiny launch queued back to back (host or device bound)
  std::string method;       // how it was measured, for the profile's reader

  static constexpr double kBusySpread = 0.15;
  bool busy() const { return spread > kBusySpread; }
  std::string to_json() const;  // an object with the fields above
  // "device peaks: stream 28.3 GB/s (read), f32 matmul 95.1 GFLOP/s; spread 4%" and a
  // warning line when the machine was busy.
  std::string summary() const;
};

// The warning a probe of this spread prints ("" at or below DevicePeaks::kBusySpread):
// the machine was busy, its peaks read low. Also for a saved probe read back (--peaks).
std::string busy_warning(double spread);

struct ProbeOptions {
  int64_t copy_bytes = int64_t(128) << 20;  // the largest working set; beyond the last-level cache
  int64_t matmul_n = 1024;
  int repeats = 5;                          // best of, and the spread over
};

// Runs the probes on `dev` (about 0.2-0.5 s on a 2-core machine) and waits for the
// device. Throws "[probe] ..." for options out of range.
DevicePeaks measure_peaks(Device& dev, const ProbeOptions& options = {});
// measure_peaks with the default options, once per device per process.
const DevicePeaks& device_peaks(Device& dev);

}  // namespace opscope::runtime
