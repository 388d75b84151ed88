#include "opscope/compiler/artifacts.h"

#include <mutex>
#include <vector>

#include "opscope/profiler/annotate.h"

namespace opscope::compiler {

namespace {
std::mutex g_m;
std::vector<KernelArtifact> g_kernels;
}  // namespace

void register_artifact(const std::vector<KernelArtifact>& kernels) {
  // Profiles collected from now on record the artifacts of the kernels they ran.
  static std::once_flag hook;
  std::call_once(hook, [] { prof::set_trace_annotator("compiler artifacts", annotate_trace_artifacts); });
  std::lock_guard<std::mutex> g(g_m);
  // Loaded again (from another cache folder, or after another graph made a kernel of the
  // same name): it is the latest loaded, the one a profile of its kernel name records.
  for (const KernelArtifact& k : kernels) {
    std::erase_if(g_kernels, [&](const KernelArtifact& have) { return have.symbol == k.symbol && have.hash == k.hash; });
    g_kernels.push_back(k);
  }
}

std::optional<KernelArtifact> find_kernel_artifact(std::string_view kernel_name) {
  std::lock_guard<std::mutex> g(g_m);
  for (auto it = g_kernels.rbegin(); it != g_kernels.rend(); ++it)
    if (it->kernel == kernel_name) return *it;
  return std::nullopt;
}

std::vector<KernelArtifact> loaded_kernel_artifacts() {
  std::lock_guard<std::mutex> g(g_m);
  return g_kernels;
}

}  // namespace opscope::compiler
