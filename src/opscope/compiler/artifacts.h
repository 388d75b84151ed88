// Which artifact a fused kernel came from: for profiles, so that a kernel event
// ("fused_mul_mean_add_rsqrt_mul_mul_f32") can show its artifact hash and manifest
// beside its device time (as Neuron's profiler shows the NEFF).
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace opscope::prof {
struct Trace;
}

namespace opscope::compiler {

struct KernelArtifact {
  std::string kernel;    // launch name
  std::string symbol;    // entry point in the library
  std::string hash;      // the artifact's key
  std::string dir;       // its cache folder
  std::string manifest;  // dir + "/manifest.json"
};

// Records the kernels of an artifact this process loaded (compile() does it); one loaded
// again (from another cache folder) becomes the latest, with its new folder. The first
// call also installs annotate_trace_artifacts as a profiler trace annotator.
void register_artifact(const std::vector<KernelArtifact>& kernels);
// The artifact of the kernel launched under `kernel_name` (the latest one loaded, when
// graphs of different shapes share a name).
std::optional<KernelArtifact> find_kernel_artifact(std::string_view kernel_name);
// Every kernel loaded so far, in load order.
std::vector<KernelArtifact> loaded_kernel_artifacts();

// A profile's record of the compiled kernels it ran: for each kernel name of `trace`
// (launches and kernel slices) that find_kernel_artifact knows, the config JSON gets
//   "artifacts": {"<kernel>": {"hash", "dir", "symbol", "manifest": <manifest.json>,
//                              "source": <kernels.cpp, cut at kMaxProfileSource bytes>}}
// (the explorer shows it beside the kernel). A trace without such kernels is unchanged.
inline constexpr size_t kMaxProfileSource = 256 * 1024;
void annotate_trace_artifacts(prof::Trace& trace);

}  // namespace opscope::compiler
