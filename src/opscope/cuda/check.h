// Every CUDA and cuBLAS call goes through one of these: a failure throws
// "[<op>] cuda:0: <call> failed: <cudaGetErrorString>", naming the op being run (the
// launch's on the scheduler thread, else the current framework op) and the device.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

namespace opscope::cuda_impl {

// The op and device ordinal error messages name, per thread: the scheduler sets them
// around each launch it enqueues; host-side calls (allocation, copies) set the ordinal.
const char* current_op();
int current_ordinal();
void set_current(const char* op, int ordinal);

[[noreturn]] void throw_cuda_error(cudaError_t e, const char* call);
[[noreturn]] void throw_cublas_error(cublasStatus_t s, const char* call);

}  // namespace opscope::cuda_impl

#define OPSCOPE_CUDA_CHECK(call)                                                      \
  do {                                                                                \
    cudaError_t opscope_cuda_err_ = (call);                                           \
    if (opscope_cuda_err_ != cudaSuccess) ::opscope::cuda_impl::throw_cuda_error(opscope_cuda_err_, #call); \
  } while (0)

#define OPSCOPE_CUBLAS_CHECK(call)                                                    \
  do {                                                                                \
    cublasStatus_t opscope_cublas_st_ = (call);                                       \
    if (opscope_cublas_st_ != CUBLAS_STATUS_SUCCESS)                                  \
      ::opscope::cuda_impl::throw_cublas_error(opscope_cublas_st_, #call);            \
  } while (0)

// After a kernel launch (<<<...>>>): configuration errors surface here at once; errors
// while it runs, at the next event query (the stream's next synchronize). It reads the
// thread's last error, so every other call that leaves one (an event query's "not
// ready", a failure reported by throw_cuda_error) clears it (cuda_device.cpp).
#define OPSCOPE_CUDA_CHECK_LAUNCH() OPSCOPE_CUDA_CHECK(cudaGetLastError())
