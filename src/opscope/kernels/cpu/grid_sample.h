// grid_sample (torch's grid_sampler_2d): out[n, c, i, j] = x[n, c] read at the point grid[n, i, j]
// = (x, y) in [-1, 1], bilinear or nearest, with zeros, border or reflection padding and
// align_corners, in torch's formulas (GridSampler.h): the point unnormalized to pixels,
// clipped or reflected by the padding mode, then the taps inside x weighted.
#pragma once
#include <cstdint>

#include "opscope/runtime/launch.h"
#include "opscope/runtime/tensor.h"

namespace opscope::cpu_kernels {

enum class GridInterp : uint8_t { bilinear, nearest };
enum class GridPadding : uint8_t { zeros, border, reflection };

// x (N, C, H, W) and grid (N, Ho, Wo, 2) contiguous, of one floating dtype; out (N, C, Ho, Wo).
LaunchSpec grid_sample_spec(const Tensor& out, const Tensor& x, const Tensor& grid, GridInterp mode, GridPadding padding,
                            bool align_corners);

}  // namespace opscope::cpu_kernels
