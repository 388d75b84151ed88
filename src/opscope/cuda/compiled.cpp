// Fused kernels of compiled functions on the CUDA device: NVRTC artifact → loaded
// library → one launch per call on the device's stream (compiled.h).
#include "opscope/cuda/compiled.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <array>
#include <chrono>
#include <map>
#include <mutex>

#include "opscope/compiler/artifacts.h"
#include "opscope/compiler/codegen_cuda.h"
#include "opscope/compiler/compile.h"
#include "opscope/compiler/compile_cuda.h"
#include "opscope/core/error.h"
#include "opscope/cuda/check.h"
#include "opscope/cuda/cuda_device.h"

namespace opscope::cuda_impl {

namespace {

using compiler::CudaArtifact;
using compiler::CudaKernel;
using compiler::CudaLaunch;

// A failed host-side call while loading, named for the compiled function and the device.
void check(cudaError_t e, const char* call, const std::string& name, int ordinal) {
  if (e != cudaSuccess)
    fail("compile", "{}: cuda:{}: {} failed: {} ({})", name, ordinal, call, cudaGetErrorString(e), cudaGetErrorName(e));
}
#define OPSCOPE_COMPILED_CHECK(call) check((call), #call, report.name, ordinal)

// Loaded libraries, per artifact and device, kept until exit (as the devices are): a
// launch may still be queued when its compiled function goes, and unloading during
// static destruction would race the CUDA runtime's own teardown.
struct Loaded {
  std::string image;  // the cubin (or NUL-terminated PTX) the library was made from
  cudaLibrary_t library = nullptr;
  std::map<std::string, cudaKernel_t> kernels;  // by symbol
};
std::mutex g_m;
std::map<std::string, Loaded>& loaded() {
  static auto* m = new std::map<std::string, Loaded>;
  return *m;
}

class FusedCudaKernel final : public compiler::DeviceKernel {
 public:
  FusedCudaKernel(cudaKernel_t k, const CudaLaunch& l, int nargs)
      : kernel_(k), grid_(unsigned(l.grid())), block_(unsigned(l.block)), nargs_(nargs) {}

  // On the device's scheduler thread, inside a launch body.
  void launch(void* const* args) const override {
    // cudaLaunchKernel takes the address of each argument (here: each pointer).
    std::array<void*, 32> small{};
    std::vector<void*> big;
    void** argv = small.data();
    if (nargs_ > int(small.size())) {
      big.resize(size_t(nargs_));
      argv = big.data();
    }
    for (int i = 0; i < nargs_; ++i) argv[i] = const_cast<void**>(args + i);
    OPSCOPE_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kernel_), dim3(grid_), dim3(block_), argv, 0,
                                        current_stream()));
  }

 private:
  cudaKernel_t kernel_;
  unsigned grid_, block_;
  int nargs_;
};

}  // namespace

std::vector<std::shared_ptr<const compiler::DeviceKernel>> load_compiled_kernels(
    const std::vector<const compiler::FusedKernel*>& kernels, Device& dev, const std::string& cache_dir,
    CompileReport& report) {
  CudaDevice& cd = as_cuda(dev);
  int ordinal = cd.ordinal();
  OPSCOPE_COMPILED_CHECK(cudaSetDevice(ordinal));
  int major = 0, minor = 0;
  OPSCOPE_COMPILED_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ordinal));
  OPSCOPE_COMPILED_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, ordinal));

  compiler::CudaCompileOptions opts;
  opts.arch = cuda_arch_name(major, minor);
  opts.cache_dir = cache_dir;
  opts.name = report.name;
  CudaArtifact art = compiler::compile_cuda_kernels(kernels, opts);  // "[nvrtc] ..." on failure
  if (!art.hit)
    std::fprintf(stderr, "[compile] %s: compiled %zu fused kernel%s for %s with NVRTC into %s (%.0f ms)\n",
                 report.name.c_str(), kernels.size(), kernels.size() == 1 ? "" : "s", opts.arch.c_str(),
                 art.dir.c_str(), art.compile_ms);

  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::shared_ptr<const compiler::DeviceKernel>> out;
  {
    std::lock_guard<std::mutex> g(g_m);
    std::string key = fmt::format("{}@{}", art.hash, ordinal);
    auto it = loaded().find(key);
    if (it == loaded().end()) {
      Loaded l;
      l.image = art.cubin.empty() ? art.ptx : art.cubin;
      if (art.cubin.empty()) l.image.push_back('\0');  // PTX is loaded as a C string
      OPSCOPE_COMPILED_CHECK(cudaLibraryLoadData(&l.library, l.image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
      it = loaded().emplace(key, std::move(l)).first;
    }
    Loaded& l = it->second;
    for (const CudaKernel& k : art.kernels) {
      auto kit = l.kernels.find(k.symbol);
      if (kit == l.kernels.end()) {
        cudaKernel_t h = nullptr;
        OPSCOPE_COMPILED_CHECK(cudaLibraryGetKernel(&h, l.library, k.symbol.c_str()));
        // Loads it into this device's context now, so a cubin that does not fit the GPU
        // fails here, naming the function, and not at its first launch.
        cudaFuncAttributes attr{};
        OPSCOPE_COMPILED_CHECK(cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(h)));
        if (attr.maxThreadsPerBlock < k.launch.block)
          fail("compile", "{}: cuda:{}: kernel {} launches {} threads per block but {} allows at most {} ({} registers)",
               report.name, ordinal, k.name, k.launch.block, opts.arch, attr.maxThreadsPerBlock, attr.numRegs);
        kit = l.kernels.emplace(k.symbol, h).first;
      }
      out.push_back(std::make_shared<FusedCudaKernel>(kit->second, k.launch, k.num_inputs + k.num_outputs));
    }
  }
  double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  report.symbols.clear();
  for (const CudaKernel& k : art.kernels) report.symbols.push_back(k.symbol);
  report.source = compiler::generate_cuda_library(art.kernels);
  report.hash = art.hash;
  report.artifact_dir = art.dir;
  report.cache_hit = art.hit;
  report.rebuilt_because = art.damage;
  report.codegen_ms = art.codegen_ms;
  report.build_ms = art.compile_ms;
  report.load_ms = art.load_ms + load_ms;
  std::vector<compiler::KernelArtifact> reg;
  for (const CudaKernel& k : art.kernels) reg.push_back({k.name, k.symbol, art.hash, art.dir, art.dir + "/manifest.json"});
  compiler::register_artifact(reg);
  return out;
}

}  // namespace opscope::cuda_impl
