#include "opscope/importer/gpu_peaks.h"

#include <cctype>
#include <nlohmann/json.hpp>

namespace opscope::importer {

namespace {

// What deviceProperties tells of a GPU.
struct Gpu {
  std::string name;  // upper case
  double gib = 0;    // 0: not given
  int64_t sms = 0;   // 0: not given

  // `word` in the name as a whole token: "L4" matches "NVIDIA L4", not "NVIDIA L40S".
  bool has(std::string_view word) const {
    for (size_t at = name.find(word); at != std::string::npos; at = name.find(word, at + 1)) {
      bool left = at == 0 || !std::isalnum(static_cast<unsigned char>(name[at - 1]));
      size_t end = at + word.size();
      bool right = end == name.size() || !std::isalnum(static_cast<unsigned char>(name[end]));
      if (left && right) return true;
    }
    return false;
  }
  bool memory_under(double g) const { return gib > 0 && gib < g; }
  bool memory_over(double g) const { return gib > g; }
};

struct Entry {
  const char* model;
  double gbps, bf16_tflops, f32_tflops;
  bool (*match)(const Gpu&);
};

// Vendor datasheets, dense figures. Tried in order: each variant before the part it is
// a variant of.
const Entry kTable[] = {
    {"H200 NVL", 4800, 835.5, 60.0, [](const Gpu& g) { return g.has("H200") && g.has("NVL"); }},
    {"H200", 4800, 989.4, 66.9, [](const Gpu& g) { return g.has("H200"); }},
    {"H100 NVL", 3900, 835.5, 60.0,
     [](const Gpu& g) { return g.has("H100") && (g.has("NVL") || g.memory_over(88)); }},
    {"H100 PCIe", 2000, 756.0, 51.2,
     [](const Gpu& g) { return g.has("H100") && (g.has("PCIE") || g.sms == 114); }},
    {"H100 SXM", 3350, 989.4, 66.9, [](const Gpu& g) { return g.has("H100"); }},
    {"A100 PCIe 40GB", 1555, 312.0, 19.5,
     [](const Gpu& g) { return g.has("A100") && g.has("PCIE") && (g.has("40GB") || g.memory_under(48)); }},
    {"A100 PCIe 80GB", 1935, 312.0, 19.5, [](const Gpu& g) { return g.has("A100") && g.has("PCIE"); }},
    {"A100 SXM 40GB", 1555, 312.0, 19.5,
     [](const Gpu& g) { return g.has("A100") && (g.has("40GB") || g.has("PG509-200") || g.memory_under(48)); }},
    {"A100 SXM 80GB", 2039, 312.0, 19.5, [](const Gpu& g) { return g.has("A100"); }},
    {"V100 PCIe", 900, 112.0, 14.0, [](const Gpu& g) { return g.has("V100") && g.has("PCIE"); }},
    {"V100 SXM2", 900, 125.0, 15.7, [](const Gpu& g) { return g.has("V100"); }},
    {"L40S", 864, 362.1, 91.6, [](const Gpu& g) { return g.has("L40S"); }},
    {"L4", 300, 121.0, 30.3, [](const Gpu& g) { return g.has("L4"); }},
    {"A10G", 600, 70.0, 31.2, [](const Gpu& g) { return g.has("A10G"); }},
    {"A10", 600, 125.0, 31.2, [](const Gpu& g) { return g.has("A10"); }},
    {"T4", 320, 65.0, 8.1, [](const Gpu& g) { return g.has("T4"); }},
    {"MI300X", 5300, 1307.4, 163.4, [](const Gpu& g) { return g.has("MI300X"); }},
    {"MI250X", 3276.8, 383.0, 47.9, [](const Gpu& g) { return g.has("MI250X"); }},
    {"MI250", 3276.8, 362.1, 45.3, [](const Gpu& g) { return g.has("MI250"); }},
};

}  // namespace

std::optional<GpuPeaks> gpu_peaks(std::string_view device_name, int64_t total_memory, int64_t num_sms) {
  Gpu g;
  for (char c : device_name) g.name += char(std::toupper(static_cast<unsigned char>(c)));
  g.gib = total_memory > 0 ? double(total_memory) / double(int64_t(1) << 30) : 0;
  g.sms = num_sms > 0 ? num_sms : 0;
  for (const Entry& e : kTable)
    if (e.match(g)) return GpuPeaks{e.model, e.gbps, e.bf16_tflops * 1e3, e.f32_tflops * 1e3};
  return std::nullopt;
}

std::string peaks_json(const GpuPeaks& p, std::string_view device_name, std::string_view method) {
  nlohmann::ordered_json j;
  j["device"] = device_name;
  j["model"] = p.model;
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
