// Types shared by the kernels' host launchers and their device code (which the tests
// also build for the host, without the CUDA toolkit): no CUDA header here.
#pragma once
#include <stdint.h>

namespace opscope::cuda_impl {

// Element types of the kernels; the values of opscope::DType.
enum class Dt : int { f32 = 0, bf16 = 1, f16 = 2, i32 = 3, i64 = 4 };

constexpr int kMaxLayoutDims = 8;
// An index space of up to 8 dims (row-major), with each operand's strides in elements
// (0 along broadcast dims). Operand 0 is the output.
struct Layout {
  int ndim = 0;
  int64_t shape[kMaxLayoutDims] = {};
  int64_t stride[3][kMaxLayoutDims] = {};
};

// What a kernel reports about bad input, through a slot in mapped pinned memory.
struct KernelError {
  int code;  // 0: none; 1: index `a` outside [0, b)
  int pad;
  long long a, b;
};

}  // namespace opscope::cuda_impl
