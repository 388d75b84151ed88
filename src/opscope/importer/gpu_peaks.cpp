#include "opscope/importer/gpu_peaks.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

namespace opscope::importer {

namespace {

struct Entry {
  const char* model;
  const char* match[3];  // all must appear in the device name (case-insensitive)
  double gbps, bf16_tflops, f32_tflops;
};

// Vendor datasheets, dense figures. More specific entries first (PCIe before SXM).
const Entry kTable[] = {
    {"H200", {"H200", nullptr, nullptr}, 4800, 989.4, 66.9},
    {"H100 PCIe", {"H100", "PCIE", nullptr}, 2000, 756.0, 51.2},
    {"H100 NVL", {"H100", "NVL", nullptr}, 3900, 835.5, 60.0},
    {"H100 SXM", {"H100", nullptr, nullptr}, 3350, 989.4, 66.9},
    {"A100 PCIe 40GB", {"A100", "PCIE", "40GB"}, 1555, 312.0, 19.5},
    {"A100 PCIe 80GB", {"A100", "PCIE", nullptr}, 1935, 312.0, 19.5},
    {"A100 SXM 40GB", {"A100", "40GB", nullptr}, 1555, 312.0, 19.5},
    {"A100 SXM 80GB", {"A100", nullptr, nullptr}, 2039, 312.0, 19.5},
    {"V100 PCIe", {"V100", "PCIE", nullptr}, 900, 112.0, 14.0},
    {"V100 SXM2", {"V100", nullptr, nullptr}, 900, 125.0, 15.7},
    {"L40S", {"L40S", nullptr, nullptr}, 864, 362.1, 91.6},
    {"L4", {"L4", nullptr, nullptr}, 300, 121.0, 30.3},
    {"A10G", {"A10G", nullptr, nullptr}, 600, 70.0, 31.2},
    {"A10", {"A10", nullptr, nullptr}, 600, 125.0, 31.2},
    {"T4", {"T4", nullptr, nullptr}, 320, 65.0, 8.1},
    {"MI300X", {"MI300X", nullptr, nullptr}, 5300, 1307.4, 163.4},
    {"MI250X", {"MI250X", nullptr, nullptr}, 3276.8, 383.0, 47.9},
    {"MI250", {"MI250", nullptr, nullptr}, 3276.8, 362.1, 45.3},
};

std::string upper(std::string_view s) {
  std::string u(s);
  for (char& c : u) c = char(std::toupper(static_cast<unsigned char>(c)));
  return u;
}

// `word` in `name` as a whole token: "L4" matches "NVIDIA L4", not "NVIDIA L40S".
bool has_token(const std::string& name, std::string_view word) {
  for (size_t at = name.find(word); at != std::string::npos; at = name.find(word, at + 1)) {
    bool left = at == 0 || !std::isalnum(static_cast<unsigned char>(name[at - 1]));
    size_t end = at + word.size();
    bool right = end == name.size() || !std::isalnum(static_cast<unsigned char>(name[end]));
    if (left && right) return true;
  }
  return false;
}

}  // namespace

std::optional<GpuPeaks> gpu_peaks(std::string_view device_name) {
  std::string name = upper(device_name);
  for (const Entry& e : kTable) {
    bool all = true;
    for (const char* m : e.match)
      if (m && !has_token(name, m)) all = false;
    if (all) return GpuPeaks{e.model, e.gbps, e.bf16_tflops * 1e3, e.f32_tflops * 1e3};
  }
  return std::nullopt;
}

std::string peaks_json(const GpuPeaks& p, std::string_view device_name, std::string_view method) {
  nlohmann::ordered_json j;
  j["device"] = device_name;
  j["copy_gbps"] = p.memory_gbps;
  j["matmul_gflops"] = p.bf16_gflops;
  j["f32_gflops"] = p.f32_gflops;
  j["method"] = method;
  return j.dump();
}

std::string gpu_peaks_models() {
  std::string out;
  for (const Entry& e : kTable) out += out.empty() ? e.model : std::string(", ") + e.model;
  return out;
}

}  // namespace opscope::importer
