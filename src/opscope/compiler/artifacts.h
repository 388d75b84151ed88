// Which artifact a fused kernel came from: for profiles, so that a kernel event
// ("fused_mul_mean_add_rsqrt_mul_mul_f32") can show its artifact hash and manifest
// beside its device time (as Neuron's profiler shows the NEFF).
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace opscope::compiler {

struct KernelArtifact {
  std::string kernel;    // launch name
  std::string symbol;    // entry point in the library
  std::string hash;      // the artifact's key
  std::string dir;       // its cache folder
  std::string manifest;  // dir + "/manifest.json"
};

// Records the kernels of an artifact this process loaded (compile() does it).
void register_artifact(const std::vector<KernelArtifact>& kernels);
// The artifact of the kernel launched under `kernel_name` (the latest one loaded, when
// graphs of different shapes share a name).
std::optional<KernelArtifact> find_kernel_artifact(std::string_view kernel_name);
// Every kernel loaded so far, in load order.
std::vector<KernelArtifact> loaded_kernel_artifacts();

}  // namespace opscope::compiler
