// cuBLAS, loaded the first time a GPU matmul needs a handle rather than when opscope
// starts. Linked, libcublas pulls in libcublasLt, whose static constructors cost every
// process about 0.3 s of CPU: each `opscope` command, each test, each `import opscope`,
// although only a matmul on a GPU uses it.
#pragma once
#include <cublas_v2.h>

namespace opscope::cuda_impl {

// The entry points the CUDA device calls, resolved from libcublas.so.<CUBLAS_VER_MAJOR>
// (the major version opscope was built against).
struct CublasLib {
  // cublas_api.h overloads these two for C++ (a cudaDataType compute type): the C ones.
  using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                    const void*, const void*, cudaDataType, int, const void*, cudaDataType, int,
                                    const void*, void*, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  using GemmStridedBatchedEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                                  int, const void*, const void*, cudaDataType, int, long long,
                                                  const void*, cudaDataType, int, long long, const void*, void*,
                                                  cudaDataType, int, long long, int, cublasComputeType_t,
                                                  cublasGemmAlgo_t);

  decltype(&cublasCreate) create;
  decltype(&cublasDestroy) destroy;
  decltype(&cublasSetStream) set_stream;
  decltype(&cublasSetWorkspace) set_workspace;
  GemmEx gemm_ex;
  GemmStridedBatchedEx gemm_strided_batched_ex;
  decltype(&cublasGetStatusString) status_string;
};

// Loads it once (thread-safe). Errors "[<op>] cannot load libcublas.so.13: <why>" when
// the library or one of its entry points is missing.
const CublasLib& cublas();

// The file it loads: "libcublas.so.13".
const char* cublas_file();

}  // namespace opscope::cuda_impl
