// CUDA code generation: CUDA C source for the fused kernels the CPU generator takes
// (the same FusedKernel), compiled with NVRTC (nvrtc.h) and cached (compile_cuda.h).
// Each kernel is one extern "C" __global__ function over its operands (body.inputs
// order), then its results; shapes, strides and constants are literals:
//
//   extern "C" __global__ void __launch_bounds__(256)
//   fused_mul_mean_add_rsqrt_mul_mul_f32_1a2b3c4d(const float* __restrict__ a0,
//                                                 const float* __restrict__ a1, float* __restrict__ a2)
//
// Pointers are the operands' first elements (storage + offset). Four forms:
//   flat         elementwise over contiguous operands: a grid-stride loop over chunks of
//                `vector` elements (128-bit loads/stores), a scalar tail;
//   elementwise  elementwise with broadcast or strided operands: the same loop, each
//                chunk inside one row of the domain;
//   warp_row     a reduction over the last axis, cols <= 1024: one warp per row;
//   block_row    the same, cols > 1024: one block per row (warp shuffles, then shared
//                memory across warps).
// Arithmetic is f32 (bf16/f16 converted on load and store, reductions accumulate in
// f32). The vector path needs every vector-loaded pointer aligned to its vector size;
// the kernel checks this itself and takes the scalar path otherwise. Row kernels keep a
// row's operands in registers between passes when they fit, else reload them (L1).
// No headers: the source compiles with NVRTC alone, and on the host for the tests.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "opscope/compiler/kernel.h"

namespace opscope::compiler {

// Bumped when generated CUDA code or launch configs change meaning: part of every
// CUDA artifact's key.
constexpr int kCudaCodegenVersion = 1;

enum class CudaForm : uint8_t { flat, elementwise, warp_row, block_row };
const char* cuda_form_name(CudaForm f);

// How the runtime launches a kernel: a 1-D grid of 1-D blocks, no dynamic shared memory.
struct CudaLaunch {
  CudaForm form = CudaForm::flat;
  int block = 256;            // threads per block: launch with exactly this many
  int64_t units = 1;          // work units: rows (row forms) or chunks of `vector` elements
  int units_per_block = 256;  // units a block takes per step of its grid-stride loop
  int vector = 1;             // elements per chunk on the vector path (1: scalar only)
  int shared_bytes = 0;       // static shared memory the kernel declares
  // Blocks that cover the work once (at least 1, at most 2^31 - 1). Every kernel
  // strides over its grid, so the runtime may launch fewer (e.g. a few per SM).
  int64_t grid() const;
  std::string str() const;  // "block_row block=1024 grid=3 vector=1 shared=128"
};

struct CudaKernel {
  std::string name;    // the FusedKernel's name: "fused_mul_mean_add_rsqrt_mul_mul_f32"
  std::string symbol;  // name + "_" + 8 hex digits of the source's hash
  std::string source;  // the __global__ function (without the prelude)
  CudaLaunch launch;
  int num_inputs = 0;   // parameters: num_inputs operands, then num_outputs results
  int num_outputs = 0;
};

// The __global__ function for `k` (k is not changed: its CPU symbol stays).
CudaKernel generate_cuda_kernel(const FusedKernel& k);
// The helpers every CUDA source starts with.
const char* cuda_prelude();
// One translation unit: the prelude and every kernel (each symbol once).
std::string generate_cuda_library(const std::vector<CudaKernel>& kernels);

}  // namespace opscope::compiler
