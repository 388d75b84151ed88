// The CUDA kernels as the ops see them: LaunchSpecs like cpu_kernels' (same names,
// bytes and flops, work = 1), whose bodies enqueue on the launch's cudaStream_t, and
// the copies between host and device. Only f32/bf16/f16 compute kernels; an integer
// dtype throws "[op] no CUDA kernel yet for dtype i64" at the op call.
#pragma once
#include <span>

#include "opscope/kernels/cpu/elementwise.h"
#include "opscope/kernels/cpu/reduce.h"
#include "opscope/kernels/window2d.h"
#include "opscope/runtime/launch.h"
#include "opscope/runtime/tensor.h"

namespace opscope::cuda_kernels {

using cpu_kernels::BinaryOp;
using cpu_kernels::ReduceKind;
using cpu_kernels::UnaryOp;

LaunchSpec unary_spec(UnaryOp op, const Tensor& out, const Tensor& x);
LaunchSpec binary_spec(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b);
LaunchSpec binary_scalar_spec(BinaryOp op, const Tensor& out, const Tensor& x, double s, bool scalar_first);

LaunchSpec softmax_spec(const Tensor& out, const Tensor& x, int axis);
LaunchSpec rms_norm_spec(const Tensor& out, const Tensor& x, const Tensor* weight, float eps);
LaunchSpec layer_norm_spec(const Tensor& out, const Tensor& x, const Tensor* weight, const Tensor* bias, float eps);

LaunchSpec reduce_spec(ReduceKind kind, const Tensor& out, const Tensor& x, std::span<const int> axes,
                       int64_t correction);

LaunchSpec concat_spec(const Tensor& out, std::span<const Tensor> xs, int axis, int64_t start);
LaunchSpec embedding_spec(const Tensor& out, const Tensor& weight, const Tensor& indices);

// cuBLAS (blas.cpp): out (batch..., M, N) = a @ b, operands as cpu_kernels::matmul_spec
// takes them, with the last two dims of each blas-compatible.
LaunchSpec matmul_spec(const Tensor& out, const Tensor& a, const Tensor& b);

// NCHW windows (window_specs.cpp): conv2d's columns for cuBLAS, cols (n, groups, K,
// pixels) of the contiguous x; max_pool2d of the contiguous x, indices (i64) may be null.
LaunchSpec im2col_spec(const Tensor& cols, const Tensor& x, const kernels::Window2d& g);
LaunchSpec max_pool2d_spec(const Tensor& out, const Tensor* indices, const Tensor& x, const kernels::Window2d& g);

// ---- copies (copy.cpp) ----
// dst (contiguous, on the CUDA device) = src (same device, any strides), converted.
void launch_copy(const Tensor& dst, const Tensor& src);
void launch_fill(const Tensor& dst, double value);
// dst (contiguous, CUDA) = the contiguous CPU tensor src: an async host-to-device copy
// that waits for src's writer and keeps its storage alive.
void launch_h2d(const Tensor& dst, const Tensor& src);
// dst (contiguous, CPU, no pending writer) = the contiguous CUDA tensor src, through a
// pinned staging buffer. Synchronizes src's stream.
void copy_d2h(const Tensor& dst, const Tensor& src);

}  // namespace opscope::cuda_kernels
