#include "opscope/cuda/cublas_lib.h"

#include <dlfcn.h>

#include <string>

#include "opscope/core/error.h"
#include "opscope/cuda/check.h"

namespace opscope::cuda_impl {

#define OPSCOPE_STR2(x) #x
#define OPSCOPE_STR(x) OPSCOPE_STR2(x)

const char* cublas_file() { return "libcublas.so." OPSCOPE_STR(CUBLAS_VER_MAJOR); }

namespace {

// The two hand-written signatures pick the C declarations out of cublas_api.h's overloads:
// one that drifts from the header fails to build (unevaluated: nothing links to cuBLAS).
static_assert(sizeof(static_cast<CublasLib::GemmEx>(&cublasGemmEx)) > 0);
static_assert(sizeof(static_cast<CublasLib::GemmStridedBatchedEx>(&cublasGemmStridedBatchedEx)) > 0);

CublasLib load() {
  // RTLD_LOCAL: cuBLAS's symbols stay out of the global namespace (torch, in the same
  // process, may load a cuBLAS of its own).
  void* h = dlopen(cublas_file(), RTLD_NOW | RTLD_LOCAL);
  if (!h) fail(current_op(), "cannot load {}: {} (cuBLAS runs the CUDA device's matmuls)", cublas_file(), dlerror());
  auto sym = [h](const char* name) {
    void* p = dlsym(h, name);
    if (!p) fail(current_op(), "cannot load {}: it has no {}", cublas_file(), name);
    return p;
  };
  CublasLib lib;
  // The names after cublas_v2.h's macros (cublasCreate is cublasCreate_v2).
#define OPSCOPE_RESOLVE(field, fn) lib.field = reinterpret_cast<decltype(lib.field)>(sym(OPSCOPE_STR(fn)))
  OPSCOPE_RESOLVE(create, cublasCreate);
  OPSCOPE_RESOLVE(destroy, cublasDestroy);
  OPSCOPE_RESOLVE(set_stream, cublasSetStream);
  OPSCOPE_RESOLVE(set_workspace, cublasSetWorkspace);
  OPSCOPE_RESOLVE(gemm_ex, cublasGemmEx);
  OPSCOPE_RESOLVE(gemm_strided_batched_ex, cublasGemmStridedBatchedEx);
  OPSCOPE_RESOLVE(status_string, cublasGetStatusString);
#undef OPSCOPE_RESOLVE
  return lib;
}

}  // namespace

const CublasLib& cublas() {
  static const CublasLib lib = load();  // a failed load throws and is tried again next time
  return lib;
}

}  // namespace opscope::cuda_impl
