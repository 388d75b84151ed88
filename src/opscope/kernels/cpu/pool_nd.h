// Pooling over 1, 2 or 3 spatial axes: average pooling (torch's ceil_mode,
// count_include_pad and divisor_override), max pooling with indices (3-d; 2-d has its own
// kernel in pool.h) and adaptive average / max pooling. Every op is written as 3-d: a 1-d
// or 2-d op gives its leading axes size 1. x is contiguous (planes, d, h, w), out is
// (planes, od, oh, ow); a work unit is one output plane.
#pragma once
#include <array>
#include <cstdint>

#include "opscope/runtime/launch.h"
#include "opscope/runtime/tensor.h"

namespace opscope::cpu_kernels {

using Axes3 = std::array<int64_t, 3>;  // (d, h, w)

struct PoolGeometry {
  int64_t planes = 0;  // N * C
  Axes3 in{1, 1, 1}, out{1, 1, 1};
  Axes3 kernel{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0}, dilation{1, 1, 1};
  bool count_include_pad = true;
  int64_t divisor = 0;  // divisor_override; 0: none
};

// Average of each window (f32 accumulation; bf16/f16 rounded once).
LaunchSpec avg_pool_spec(const Tensor& out, const Tensor& x, const PoolGeometry& g);
// Maximum of each window and, when `indices` is given, its flat position in the input
// plane (i64, (z * h + y) * w + x). NaN wins, ties keep the first position (torch's rules).
LaunchSpec max_pool_nd_spec(const Tensor& out, const Tensor* indices, const Tensor& x, const PoolGeometry& g);
// Adaptive pooling: output i along an axis of n inputs and m outputs covers inputs
// [floor(i n / m), ceil((i + 1) n / m)). Average, or maximum with indices as max_pool_nd.
LaunchSpec adaptive_avg_pool_spec(const Tensor& out, const Tensor& x, int64_t planes, Axes3 in, Axes3 out_size);
LaunchSpec adaptive_max_pool_spec(const Tensor& out, const Tensor& indices, const Tensor& x, int64_t planes, Axes3 in,
                                  Axes3 out_size);

}  // namespace opscope::cpu_kernels
