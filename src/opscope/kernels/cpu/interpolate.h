// Interpolation (torch's upsample_* kernels) over 1, 2 or 3 spatial axes: nearest,
// nearest-exact, (bi/tri)linear and bicubic, with align_corners and explicit scales. The
// source positions and weights of each output coordinate are computed once per axis at
// the launch (in f32, with torch's formulas, so the picks and weights are the same);
// the kernel combines them per output plane. x is contiguous (planes, d, h, w).
#pragma once
#include <array>
#include <cstdint>
#include <optional>

#include "opscope/runtime/launch.h"
#include "opscope/runtime/tensor.h"

namespace opscope::cpu_kernels {

enum class InterpMode : uint8_t { nearest, nearest_exact, linear, cubic };

struct InterpGeometry {
  int64_t planes = 0;
  int axes = 2;  // spatial axes that interpolate: the last `axes` of (d, h, w)
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1};
  std::array<std::optional<double>, 3> scales;  // torch's scale_factor per axis, if given
  bool align_corners = false;                   // linear and cubic
};

LaunchSpec interpolate_spec(InterpMode mode, const Tensor& out, const Tensor& x, const InterpGeometry& g);

}  // namespace opscope::cpu_kernels
