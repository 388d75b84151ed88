// The datasheet peaks an imported trace gets from its GPU's name (importer/gpu_peaks.h),
// for every GPU the README names (H100, H200, A100, V100, L4, T4, A10, L40S, MI250,
// MI300X), by the names torch reports for them; and the rule that keeps "L4" from
// matching the L40S: a model is a whole word of the name.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "import_util.h"
#include "opscope/importer/gpu_peaks.h"

namespace opscope::importer {
namespace {

struct Known {
  const char* device_name;  // as torch.cuda.get_device_name / Kineto's deviceProperties give it
  const char* model;
  double memory_gbps, bf16_tflops, f32_tflops;
};

// The vendors' datasheets: memory bandwidth, dense tensor-core bf16 (fp16 on V100 and T4),
// dense f32.
const Known kReadmeGpus[] = {
    {"NVIDIA H100 80GB HBM3", "H100 SXM", 3350, 989.4, 66.9},
    {"NVIDIA H100 PCIe", "H100 PCIe", 2000, 756.0, 51.2},
    {"NVIDIA H100 NVL", "H100 NVL", 3900, 835.5, 60.0},
    {"NVIDIA H200", "H200", 4800, 989.4, 66.9},
    {"NVIDIA A100-SXM4-80GB", "A100 SXM 80GB", 2039, 312.0, 19.5},
    {"NVIDIA A100-SXM4-40GB", "A100 SXM 40GB", 1555, 312.0, 19.5},
    {"NVIDIA A100 80GB PCIe", "A100 PCIe 80GB", 1935, 312.0, 19.5},
    {"NVIDIA A100-PCIE-40GB", "A100 PCIe 40GB", 1555, 312.0, 19.5},
    {"Tesla V100-SXM2-16GB", "V100 SXM2", 900, 125.0, 15.7},
    {"Tesla V100-PCIE-32GB", "V100 PCIe", 900, 112.0, 14.0},
    {"NVIDIA L4", "L4", 300, 121.0, 30.3},
    {"Tesla T4", "T4", 320, 65.0, 8.1},
    {"NVIDIA A10", "A10", 600, 125.0, 31.2},
    {"NVIDIA L40S", "L40S", 864, 362.1, 91.6},
    {"AMD Instinct MI250", "MI250", 3276.8, 362.1, 45.3},
    {"AMD Instinct MI300X", "MI300X", 5300, 1307.4, 163.4},
};

TEST(GpuPeaks, EveryGpuTheReadmeNamesHasItsDatasheetFigures) {
  for (const Known& k : kReadmeGpus) {
    std::optional<GpuPeaks> p = gpu_peaks(k.device_name);
    ASSERT_TRUE(p) << k.device_name;
    EXPECT_EQ(p->model, k.model) << k.device_name;
    EXPECT_DOUBLE_EQ(p->memory_gbps, k.memory_gbps) << k.device_name;
    EXPECT_DOUBLE_EQ(p->bf16_gflops, k.bf16_tflops * 1e3) << k.device_name;
    EXPECT_DOUBLE_EQ(p->f32_gflops, k.f32_tflops * 1e3) << k.device_name;
  }
}

// "L4" is a whole word of "NVIDIA L4", not of "NVIDIA L40S" (nor of "NVIDIA L40", which the
// table does not know); likewise A10 and A10G, MI250 and MI250X.
TEST(GpuPeaks, AModelMatchesAsAWholeWordOnly) {
  EXPECT_EQ(gpu_peaks("NVIDIA L40S")->model, "L40S");
  EXPECT_EQ(gpu_peaks("NVIDIA L4")->model, "L4");
  EXPECT_EQ(gpu_peaks("nvidia l4")->model, "L4");  // any case
  EXPECT_FALSE(gpu_peaks("NVIDIA L40"));
  EXPECT_FALSE(gpu_peaks("NVIDIA L4X"));
  EXPECT_EQ(gpu_peaks("NVIDIA A10G")->model, "A10G");
  EXPECT_EQ(gpu_peaks("NVIDIA A10")->model, "A10");
  EXPECT_FALSE(gpu_peaks("NVIDIA A100X"));
  EXPECT_EQ(gpu_peaks("AMD Instinct MI250X")->model, "MI250X");
  EXPECT_EQ(gpu_peaks("AMD Instinct MI250")->model, "MI250");
  EXPECT_FALSE(gpu_peaks("Prototype GPU X"));
  EXPECT_FALSE(gpu_peaks(""));
}

// Through the importer: the trace's GPU name gives its profile's roofline.
TEST(GpuPeaks, AnImportedTraceCarriesItsGpusPeaks) {
  test::TempDir dir("gpu_peaks");
  for (const char* name : {"NVIDIA L4", "NVIDIA L40S"}) {
    nlohmann::json ev = nlohmann::json::array();
    ev.push_back(test::x_event("cpu_op", "aten::add", 1, 1, 0, 20));
    nlohmann::json gpu = {{"id", 0}, {"name", name}};
    std::string file = dir.write(std::string(name).substr(7) + ".json",
                                 nlohmann::json{{"traceEvents", ev}, {"deviceProperties", {gpu}}});
    ImportResult r = import_traces({file});
    auto cfg = nlohmann::json::parse(r.trace.config_json);
    ASSERT_TRUE(cfg.contains("device_peaks")) << name << ": " << cfg;
    double want = std::string(name) == "NVIDIA L4" ? 300 : 864;
    EXPECT_DOUBLE_EQ(cfg["device_peaks"]["copy_gbps"].get<double>(), want) << name;
    EXPECT_DOUBLE_EQ(cfg["peak_gbps"].get<double>(), want) << name;
    EXPECT_EQ(cfg["device_peaks"]["device"], name);
  }
}

}  // namespace
}  // namespace opscope::importer
