// The CUDA compile path: fused kernels → CUDA C (codegen_cuda.h) → NVRTC (nvrtc.h) →
// a cached artifact, in the same cache as the CPU artifacts (cache.h) and with the same
// habits (stable hash key, temp folder renamed into place under a lock, damaged entries
// rebuilt, failed builds kept):
//
//   <root>/<hash>/kernels.cu      the generated source
//   <root>/<hash>/kernels.ptx     PTX (always)
//   <root>/<hash>/kernels.cubin   SASS for the architecture (a real sm_NN only)
//   <root>/<hash>/manifest.json   device "cuda", arch, NVRTC version and options,
//                                 kernels with their symbols and launch configs
//   <root>/failed-<hash>/         kernels.cu, nvrtc.log and manifest.json of a failed compile
//
// The key covers the source, the launch configs, the architecture, the NVRTC version
// and options, and kCudaCodegenVersion. Nothing here needs a GPU: the runtime loads
// `cubin` (or `ptx`) with the driver and launches each kernel with its CudaLaunch.
#pragma once
#include <string>
#include <vector>

#include "opscope/compiler/codegen_cuda.h"
#include "opscope/compiler/graph.h"

namespace opscope::compiler {

struct CudaCompileOptions {
  std::string arch = "sm_90";   // the present GPU's (the caller asks the driver); sm_90: H100/H200
  std::string cache_dir;        // default: cache_root()
  std::string name = "kernels"; // what the kernels are compiled for: messages, manifest
};

struct CudaArtifact {
  std::string hash, dir;
  std::string arch, nvrtc_version;
  std::string source_path, ptx_path, cubin_path;  // cubin_path "" for a virtual arch
  std::string ptx, cubin;                         // the files' contents
  std::vector<CudaKernel> kernels;                // one per kernel given, in order
  bool hit = false;                               // loaded without running NVRTC
  std::string damage;                             // why an existing entry was rebuilt
  double codegen_ms = 0, compile_ms = 0, load_ms = 0;
};

// Generates, compiles (or finds in the cache) the CUDA kernels for `kernels`.
// Throws "[nvrtc] <kernel>: compile failed for <arch>: <log>" naming where the source
// and the whole log are kept, and "[nvrtc] this build has no CUDA toolkit" without one.
CudaArtifact compile_cuda_kernels(const std::vector<const FusedKernel*>& kernels, const CudaCompileOptions& opts = {});
// The fused nodes of a graph after the passes (run_passes), in node order.
CudaArtifact compile_cuda_kernels(const Graph& compiled, const CudaCompileOptions& opts = {});
// A whole CUDA source with the kernels it defines (tests give broken sources).
CudaArtifact compile_cuda_source(const std::string& source, const std::vector<CudaKernel>& kernels,
                                 const CudaCompileOptions& opts = {});

}  // namespace opscope::compiler
