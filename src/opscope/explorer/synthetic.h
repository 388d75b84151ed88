// Synthetic profiles, for the explorer's scale test, its demos and its tests: the same
// three layers and correlation links that a real capture has, at any size.
#pragma once
#include <cstdint>
#include <string_view>

#include "opscope/profiler/trace.h"

namespace opscope::explorer {

struct SyntheticSpec {
  int64_t events = 100'000;  // at least this many (the generator finishes the op it is in)
  int threads = 1;           // host threads issuing ops, each on its own stream
  int cores = 4;             // device cores
  uint64_t seed = 1;
};

// Training-step-like work: ranges "step N" > "forward" > layers of nested ops
// (linear → matmul + add, gelu, layer_norm → mean, sub, ...), each op allocating and
// launching a kernel that runs sliced over the cores, with syncs at step ends.
prof::Trace synthetic_trace(const SyntheticSpec& spec);

// The RMSNorm case study: impl "naive" (pow, mean, add, rsqrt, mul, mul: six ops, six
// kernels), "builtin" (one rms_norm op) or "compiled" (one fused kernel whose artifact is
// in the config), `iterations` times over a rows × hidden f32 input.
prof::Trace synthetic_rmsnorm(std::string_view impl, int64_t rows, int64_t hidden,
                              int iterations = 3, int cores = 4);

}  // namespace opscope::explorer
