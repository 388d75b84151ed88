// In-place elementwise ops, as torch's relu_ / silu_ / add_: the kernel writes into x itself,
// one pass and no temporary, where the out-of-place op and a copy back took two passes over
// x and a tensor of its size (every activation and residual add of a CNN).
#pragma once
#include "opscope/kernels/cpu/elementwise.h"
#include "opscope/runtime/tensor.h"

namespace opscope {

// Whether x can be written in place: contiguous, floating, on the CPU device, and the
// compiler not tracing (its graph records values, not writes).
bool can_write_in_place(const Tensor& x);
// ... with other read beside it: other of x's dtype and device, broadcastable to x's shape
// as it is, and either x itself (the same view) or in another storage: a partial overlap
// would read elements the kernel had already written.
bool can_write_in_place(const Tensor& x, const Tensor& other);

// x = kind(x); x must pass can_write_in_place (else an error naming op).
void unary_inplace(const char* op, cpu_kernels::UnaryOp kind, const Tensor& x);
// x = x kind other; x and other must pass can_write_in_place(x, other).
void binary_inplace(const char* op, cpu_kernels::BinaryOp kind, const Tensor& x, const Tensor& other);

}  // namespace opscope
