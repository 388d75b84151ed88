// matmul and batched matmul through cuBLAS, with the parameters gemm_call.h works out
// (operands swapped for column-major, op N/T per operand, strided-batched when the batch
// steps uniformly). f32 computes in f32 (no TF32: results match the CPU device's);
// bf16/f16 in f32.
#include <fmt/format.h>

#include <memory>
#include <span>

#include "opscope/core/error.h"
#include "opscope/cuda/check.h"
#include "opscope/cuda/cublas_lib.h"
#include "opscope/cuda/cuda_device.h"
#include "opscope/cuda/gemm_call.h"
#include "opscope/cuda/kernels.h"
#include "opscope/runtime/op_scope.h"

namespace opscope::cuda_kernels {

namespace {

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f32: return CUDA_R_32F;
    case DType::bf16: return CUDA_R_16BF;
    case DType::f16: return CUDA_R_16F;
    default: fail(OpScope::current(), "no CUDA matmul for dtype {}", dtype_name(t));
  }
}

cublasOperation_t op_of(bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

}  // namespace

LaunchSpec matmul_spec(const Tensor& out, const Tensor& a, const Tensor& b) {
  const char* op = OpScope::current()[0] ? OpScope::current() : "matmul";
  int nd = out.ndim();
  int64_t M = out.shape()[nd - 2], N = out.shape()[nd - 1], K = a.shape()[nd - 1];
  auto dims = [nd](const Dims& d) { return std::span<const int64_t>(d.begin(), size_t(nd)); };
  auto g = std::make_shared<const cuda_impl::GemmCall>(
      cuda_impl::plan_gemm(dims(out.shape()), K, dims(a.strides()), dims(b.strides())));
  if (!g->ok)
    fail(op, "operands {} (strides {}) and {} (strides {}): {}; make them contiguous", a.shape().str(),
         a.strides().str(), b.shape().str(), b.strides().str(), g->error);
  LaunchSpec spec;
  spec.name = fmt::format("matmul_{}", dtype_name(out.dtype()));
  spec.bytes = a.nbytes() + b.nbytes() + out.nbytes();
  spec.flops = 2 * g->batch * M * N * K;
  cudaDataType_t type = cuda_type(out.dtype());
  int64_t isz = int64_t(out.itemsize());
  // cuBLAS's A is our b, its B our a (C^T = B^T A^T).
  const char* A = static_cast<const char*>(b.data_ptr());
  const char* B = static_cast<const char*>(a.data_ptr());
  char* C = static_cast<char*>(out.data_ptr());
  spec.body = [=](int64_t, int64_t) {
    const cuda_impl::GemmCall& c = *g;
    cublasHandle_t h = cuda_impl::current_blas();
    const cuda_impl::CublasLib& lib = cuda_impl::cublas();
    float alpha = 1.0f, beta = 0.0f;  // CUBLAS_COMPUTE_32F scales in f32 for every type
    if (c.uniform && c.batch > 1) {
      OPSCOPE_CUBLAS_CHECK(lib.gemm_strided_batched_ex(
          h, op_of(c.transa), op_of(c.transb), int(c.m), int(c.n), int(c.k), &alpha, A, type, int(c.lda), c.stride_a,
          B, type, int(c.ldb), c.stride_b, &beta, C, type, int(c.ldc), c.stride_c, int(c.batch), CUBLAS_COMPUTE_32F,
          CUBLAS_GEMM_DEFAULT));
      return;
    }
    for (int64_t i = 0; i < c.batch; ++i) {
      int64_t oa = c.uniform ? 0 : c.offset_a[size_t(i)], ob = c.uniform ? 0 : c.offset_b[size_t(i)],
              oc = c.uniform ? 0 : c.offset_c[size_t(i)];
      OPSCOPE_CUBLAS_CHECK(lib.gemm_ex(h, op_of(c.transa), op_of(c.transb), int(c.m), int(c.n), int(c.k), &alpha,
                                        A + oa * isz, type, int(c.lda), B + ob * isz, type, int(c.ldb), &beta,
                                        C + oc * isz, type, int(c.ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
  };
  return spec;
}

}  // namespace opscope::cuda_kernels
