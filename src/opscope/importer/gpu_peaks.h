// Datasheet peaks of common GPUs, by the name a trace's deviceProperties gives, as the
// roofline's device peaks (profiler/roofline.h: config "device_peaks" {copy_gbps,
// matmul_gflops}). An imported trace ran on hardware opscope did not probe, so these are
// the vendors' figures: memory bandwidth, and dense (no sparsity) tensor-core bf16
// (fp16 where the GPU has no bf16) FLOP/s as the compute roof; dense f32 is kept beside.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace opscope::importer {

struct GpuPeaks {
  std::string model;      // the table's entry: "H100 SXM"
  double memory_gbps = 0;
  double bf16_gflops = 0;  // dense tensor-core bf16 (fp16 on V100/T4)
  double f32_gflops = 0;   // dense f32 (non-tensor)
};

// The entry whose name matches `device_name` ("NVIDIA H100 80GB HBM3"), if any.
std::optional<GpuPeaks> gpu_peaks(std::string_view device_name);

// The "device_peaks" object for a trace's config: copy_gbps, matmul_gflops (bf16),
// f32_gflops, device, method ("datasheet: ..." or "given on the command line").
std::string peaks_json(const GpuPeaks& p, std::string_view device_name, std::string_view method);

// Every model in the table, for help texts: "H100 SXM, H100 PCIe, ...".
std::string gpu_peaks_models();

}  // namespace opscope::importer
