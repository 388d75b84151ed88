// Datasheet peaks of common GPUs, by what a trace's deviceProperties says of the GPU
// (its name, memory and SM count), as the roofline's device peaks (analysis/peaks.h:
// config "device_peaks" {copy_gbps, matmul_gflops}). An imported trace ran on hardware
// opscope did not probe, so these are the vendors' figures: memory bandwidth, and dense
// (no sparsity) tensor-core bf16 (fp16 where the GPU has no bf16) FLOP/s as the compute
// roof; dense f32 is kept beside.
//
// Variants that share a name are told apart by the properties: an A100 with 40 GiB is
// the 40 GB part (1,555 GB/s, also "A100-PG509-200", Meta's board), not the 80 GB one
// (2,039 GB/s); an H100 with 114 SMs is the PCIe card (2,000 GB/s), with 94 GB the NVL,
// else the SXM (3,350 GB/s); an H200 is 4,800 GB/s.
#pragma once
#include <cstdint>
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

// The entry for a GPU named `device_name` ("NVIDIA H100 80GB HBM3") with `total_memory`
// bytes and `num_sms` SMs (0: not known), if any.
std::optional<GpuPeaks> gpu_peaks(std::string_view device_name, int64_t total_memory = 0, int64_t num_sms = 0);

// The "device_peaks" object for a trace's config: copy_gbps, matmul_gflops (bf16),
// f32_gflops, device, model, method ("datasheet: ..." or "given on the command line").
std::string peaks_json(const GpuPeaks& p, std::string_view device_name, std::string_view method);

// Every model in the table, for help texts: "H200 NVL, H200, H100 NVL, ...".
std::string gpu_peaks_models();

}  // namespace opscope::importer
