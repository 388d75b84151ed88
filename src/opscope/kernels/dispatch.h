// Picks a kernel by the device of the op's output: the one place where the ops choose
// between cpu_kernels and cuda_kernels. Without the CUDA device in this build no tensor
// can live on one, so these are the CPU kernels alone.
#pragma once
#include <span>

#include "opscope/kernels/cpu/conv.h"
#include "opscope/kernels/cpu/copy.h"
#include "opscope/kernels/cpu/elementwise.h"
#include "opscope/kernels/cpu/index.h"
#include "opscope/kernels/cpu/matmul.h"
#include "opscope/kernels/cpu/norm.h"
#include "opscope/kernels/cpu/pool.h"
#include "opscope/kernels/cpu/reduce.h"
#include "opscope/core/error.h"
#include "opscope/runtime/device.h"
#if OPSCOPE_HAVE_CUDA
#include "opscope/cuda/kernels.h"
#define OPSCOPE_KERNEL(t, call) \
  ((t).device().type() == ::opscope::DeviceType::cuda ? ::opscope::cuda_kernels::call : ::opscope::cpu_kernels::call)
#define OPSCOPE_KERNEL_VOID(t, call)                                               \
  do {                                                                             \
    if ((t).device().type() == ::opscope::DeviceType::cuda) ::opscope::cuda_kernels::call; \
    else ::opscope::cpu_kernels::call;                                             \
  } while (0)
#else
#define OPSCOPE_KERNEL(t, call) (::opscope::cpu_kernels::call)
#define OPSCOPE_KERNEL_VOID(t, call) ::opscope::cpu_kernels::call
#endif

namespace opscope::kernels {

using cpu_kernels::BinaryOp;
using cpu_kernels::ReduceKind;
using cpu_kernels::UnaryOp;

inline LaunchSpec unary_spec(UnaryOp op, const Tensor& out, const Tensor& x) {
  return OPSCOPE_KERNEL(out, unary_spec(op, out, x));
}
inline LaunchSpec binary_spec(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  return OPSCOPE_KERNEL(out, binary_spec(op, out, a, b));
}
inline LaunchSpec binary_scalar_spec(BinaryOp op, const Tensor& out, const Tensor& x, double s, bool scalar_first) {
  return OPSCOPE_KERNEL(out, binary_scalar_spec(op, out, x, s, scalar_first));
}
inline LaunchSpec softmax_spec(const Tensor& out, const Tensor& x, int axis) {
  return OPSCOPE_KERNEL(out, softmax_spec(out, x, axis));
}
inline LaunchSpec rms_norm_spec(const Tensor& out, const Tensor& x, const Tensor* w, float eps) {
  return OPSCOPE_KERNEL(out, rms_norm_spec(out, x, w, eps));
}
inline LaunchSpec layer_norm_spec(const Tensor& out, const Tensor& x, const Tensor* w, const Tensor* b, float eps) {
  return OPSCOPE_KERNEL(out, layer_norm_spec(out, x, w, b, eps));
}
inline LaunchSpec reduce_spec(ReduceKind kind, const Tensor& out, const Tensor& x, std::span<const int> axes,
                              int64_t correction) {
  return OPSCOPE_KERNEL(out, reduce_spec(kind, out, x, axes, correction));
}
inline LaunchSpec concat_spec(const Tensor& out, std::span<const Tensor> xs, int axis, int64_t start) {
  return OPSCOPE_KERNEL(out, concat_spec(out, xs, axis, start));
}
inline LaunchSpec embedding_spec(const Tensor& out, const Tensor& weight, const Tensor& indices) {
  return OPSCOPE_KERNEL(out, embedding_spec(out, weight, indices));
}
inline LaunchSpec matmul_spec(const Tensor& out, const Tensor& a, const Tensor& b) {
  return OPSCOPE_KERNEL(out, matmul_spec(out, a, b));
}
inline LaunchSpec max_pool2d_spec(const Tensor& out, const Tensor* indices, const Tensor& x, const Window2d& g) {
  return OPSCOPE_KERNEL(out, max_pool2d_spec(out, indices, x, g));
}
// conv2d differs by device in more than its kernel: the CPU device runs one fused launch
// (conv2d_spec: im2col and sgemm per block of pixels); on CUDA the op writes the columns
// (im2col_spec) and multiplies them with cuBLAS through matmul (ops/conv.cpp).
inline LaunchSpec conv2d_spec(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor* bias,
                              const Window2d& g, cpu_kernels::Activation act = cpu_kernels::Activation::none,
                              const Tensor* residual = nullptr) {
  return cpu_kernels::conv2d_spec(out, x, w, bias, g, act, residual);
}
#if OPSCOPE_HAVE_CUDA
inline LaunchSpec im2col_spec(const Tensor& cols, const Tensor& x, const Window2d& g) {
  return cuda_kernels::im2col_spec(cols, x, g);
}
#endif
inline void launch_copy(const Tensor& dst, const Tensor& src) { OPSCOPE_KERNEL_VOID(dst, launch_copy(dst, src)); }
inline void launch_fill(const Tensor& dst, double value) { OPSCOPE_KERNEL_VOID(dst, launch_fill(dst, value)); }

}  // namespace opscope::kernels

namespace opscope::ops_detail {

// The ops whose kernels exist for the CPU device only (comparisons, indexing, pooling
// beyond max_pool2d, interpolation, 1-d/3-d/transposed convolutions, detection, RNNs)
// say so on any other device.
inline void cpu_only(const char* op, const Device& dev) {
  if (dev.type() != DeviceType::cpu)
    fail(op, "has no kernel for {} yet (only for the CPU device); move the tensors with .to(cpu())", dev.name());
}

}  // namespace opscope::ops_detail
