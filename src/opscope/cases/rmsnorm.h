// The RMSNorm case study: the same normalization written op by op (six dispatches,
// every intermediate materialized), as the built-in fused kernel, and (with the
// compiler) compiled from the op-by-op version.
#pragma once
#include <string>
#include <vector>

#include "opscope/runtime/tensor.h"

namespace opscope::cases {

// x*x → mean over the last axis → +eps → rsqrt → x*r → *w: six framework ops, six kernels.
Tensor naive_rms_norm(const Tensor& x, const Tensor& weight, double eps = 1e-6);
// One fused launch.
Tensor builtin_rms_norm(const Tensor& x, const Tensor& weight, double eps = 1e-6);
// naive_rms_norm through opscope::compile: traced, fused into one generated kernel, cached.
Tensor compiled_rms_norm(const Tensor& x, const Tensor& weight, double eps = 1e-6);

struct RmsNormTiming {
  std::string impl;       // "naive", "builtin"
  double device_ms = 0;   // median over iterations, between device events
  double host_ms = 0;     // median host wall time of one call + synchronize
  double max_abs_diff = 0;  // against the naive result
};

struct RmsNormSetup {
  int64_t rows = 4096, hidden = 4096;
  DType dtype = DType::f32;
  int warmup = 3, iters = 10;
  uint64_t seed = 0;
};

// Parses "RxH" ("4096x4096"); throws "[--shape] ..." on anything else.
void parse_shape(const std::string& s, int64_t& rows, int64_t& hidden);
// Runs each implementation on the same inputs and times it.
std::vector<RmsNormTiming> time_rms_norm(const RmsNormSetup& setup, const std::vector<std::string>& impls);

}  // namespace opscope::cases
