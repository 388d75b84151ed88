// Compiled functions on the CUDA device: the fused kernels of a compiled graph become
// CUDA C (codegen_cuda.h), compiled by NVRTC for the present GPU's architecture and
// cached (compile_cuda.h), loaded with the CUDA runtime's library API
// (cudaLibraryLoadData / cudaLibraryGetKernel: no libcuda link, so a machine without a
// driver still loads libopscope) and launched on the device's stream with the launch
// config the generator describes. Plain C++ here; compiled.cpp is built only with the
// CUDA device (OPSCOPE_HAVE_CUDA).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "opscope/compiler/executor.h"
#include "opscope/compiler/kernel.h"

namespace opscope {
class Device;
struct CompileReport;
}  // namespace opscope

namespace opscope::cuda_impl {

// The NVRTC architecture of a GPU of compute capability major.minor: "sm_90" for an
// H100/H200 (9.0), "sm_80" for an A100, "sm_120" for 12.0.
inline std::string cuda_arch_name(int major, int minor) {
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

// Compiles (or finds in the cache under `cache_dir`, "" for the default) the fused
// kernels `kernels` for the GPU of `dev` and loads them: one DeviceKernel per kernel,
// in order. Fills the report's source, hash, artifact_dir, cache_hit, build_ms (NVRTC)
// and load_ms, and registers the artifact for profiles. Throws "[compile] <name>:
// cuda:N: ..." when the device cannot load or the compile fails.
std::vector<std::shared_ptr<const compiler::DeviceKernel>> load_compiled_kernels(
    const std::vector<const compiler::FusedKernel*>& kernels, Device& dev, const std::string& cache_dir,
    CompileReport& report);

}  // namespace opscope::cuda_impl
