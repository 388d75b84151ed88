// Ops over 1, 2 or 3 spatial axes of x (N, C, *spatial): average and adaptive pooling,
// 3-d max pooling, interpolation, and convolution of any rank (transposed too). A list of
// sizes has one value per spatial axis, or one value for all of them. CPU device only.
// (conv2d and max_pool2d, with CUDA kernels too, are in ops.h.)
#pragma once
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "opscope/runtime/tensor.h"

namespace opscope {

using Sizes = std::vector<int64_t>;

// torch's avg_pool{1,2,3}d: the window sum over the window's element count — all of it
// with count_include_pad, else the part inside the input — or over divisor_override.
Tensor avg_pool(const Tensor& x, const Sizes& kernel, const Sizes& stride, const Sizes& padding = {0},
                bool ceil_mode = false, bool count_include_pad = true, std::optional<int64_t> divisor_override = {});
// max_pool3d (and any rank) with the positions of the maxima in each input plane (i64).
std::pair<Tensor, Tensor> max_pool_with_indices(const Tensor& x, const Sizes& kernel, const Sizes& stride,
                                                const Sizes& padding = {0}, const Sizes& dilation = {1},
                                                bool ceil_mode = false);
// Adaptive pooling to `output_size` per spatial axis.
Tensor adaptive_avg_pool(const Tensor& x, const Sizes& output_size);
std::pair<Tensor, Tensor> adaptive_max_pool(const Tensor& x, const Sizes& output_size);

enum class Interpolation : uint8_t { nearest, nearest_exact, linear, cubic };  // cubic: 2-d only, as torch
// torch's upsample_* kernels: x resized to output_size; `scales` are the scale_factors
// torch passes along (they change the source positions when given), align_corners is
// linear and cubic's.
Tensor interpolate(const Tensor& x, const Sizes& output_size, Interpolation mode, bool align_corners = false,
                   const std::vector<std::optional<double>>& scales = {});

// torch's grid_sample on 2 spatial axes: x (N, C, H, W) read at grid (N, Ho, Wo, 2), points
// (x, y) in [-1, 1], bilinear or nearest, padded with zeros, the border or its reflection.
enum class GridSampleMode : uint8_t { bilinear, nearest };
enum class GridSamplePadding : uint8_t { zeros, border, reflection };
Tensor grid_sample(const Tensor& x, const Tensor& grid, GridSampleMode mode = GridSampleMode::bilinear,
                   GridSamplePadding padding = GridSamplePadding::zeros, bool align_corners = false);

// Convolution over 1, 2 or 3 spatial axes: weight (OC, C / groups, *kernel); transposed:
// weight (C, OC / groups, *kernel) and output_padding, as torch's conv_transpose*d.
Tensor conv(const Tensor& x, const Tensor& weight, const Tensor& bias, const Sizes& stride, const Sizes& padding,
            const Sizes& dilation, int64_t groups = 1, bool transposed = false, const Sizes& output_padding = {0});

}  // namespace opscope
