// CPU code generation: C++ source for fused kernels. Each kernel is one extern "C"
// function over a range of work units (rows of its domain, or element blocks when flat):
//
//   extern "C" void fused_mul_mean_add_rsqrt_mul_mul_f32_1a2b3c4d(void* const* args,
//                                                                  long long begin, long long end);
//
// args: the kernel's operands (in body.inputs order), then its results. Shapes, strides
// and constants are literals, so loops have known trip counts; arithmetic is f32 with
// bf16/f16 converted on load and store; reductions keep 32 lanes so that they vectorize
// without reassociating (no -ffast-math). No virtual calls, no library headers.
#pragma once
#include <string>
#include <vector>

#include "opscope/compiler/kernel.h"

namespace opscope::compiler {

// Bumped when generated code changes meaning: it is part of every artifact's key.
constexpr int kCodegenVersion = 2;  // 2: streaming stores for large results

// The function for `k` (its symbol: k.name + "_" + 8 hex digits of the source's hash,
// which this sets in k.symbol).
std::string generate_kernel(FusedKernel& k);
// One translation unit with the common prelude and every kernel (each symbol once).
std::string generate_library(const std::vector<FusedKernel*>& kernels);

}  // namespace opscope::compiler
