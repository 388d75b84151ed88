// torchvision's detection ops (torchvision.ops.nms, roi_align, roi_pool, ps_roi_align,
// deform_conv2d) as opscope ops, with its CPU kernels' arithmetic. f32 (bf16/f16 computed
// in f32), CPU device only.
#pragma once
#include <array>
#include <cstdint>
#include <utility>

#include "opscope/runtime/tensor.h"

namespace opscope {

// The indices (i64) of the boxes (N, 4) as (x1, y1, x2, y2) that survive greedy
// non-maximum suppression, in order of decreasing score: a box is dropped when its IoU
// with a kept, higher-scoring box exceeds iou_threshold. Synchronizes (the count sets the
// output's shape).
Tensor nms(const Tensor& boxes, const Tensor& scores, double iou_threshold);
// RoIAlign: x (N, C, H, W), rois (K, 5) as (batch index, x1, y1, x2, y2) in input
// coordinates times 1 / spatial_scale; out (K, C, pooled_h, pooled_w), each bin the mean
// of a sampling_ratio^2 grid (adaptive: ceil(bin size) per axis when <= 0) of bilinear
// samples. aligned shifts the boxes by half a pixel (torchvision's aligned=True).
Tensor roi_align(const Tensor& x, const Tensor& rois, double spatial_scale, int64_t pooled_h, int64_t pooled_w,
                 int64_t sampling_ratio, bool aligned);
// RoIPool: x and rois as roi_align's; each bin of the box (rounded to whole pixels) the
// maximum of its pixels, 0 for an empty bin. Returns (out (K, C, pooled_h, pooled_w) of x's
// dtype, argmax i32: the winning pixel h * W + w, -1 for an empty bin), as torchvision.
std::pair<Tensor, Tensor> roi_pool(const Tensor& x, const Tensor& rois, double spatial_scale, int64_t pooled_h,
                                   int64_t pooled_w);
// Position-sensitive RoIAlign (R-FCN): x's C channels are pooled_h * pooled_w groups; output
// channel c's bin (i, j) is roi_align's bin over input channel (c * pooled_h + i) * pooled_w
// + j, boxes shifted by half a pixel. Returns (out (K, C / (pooled_h pooled_w), pooled_h,
// pooled_w) of x's dtype, channel_mapping i32: that input channel), as torchvision.
std::pair<Tensor, Tensor> ps_roi_align(const Tensor& x, const Tensor& rois, double spatial_scale, int64_t pooled_h,
                                       int64_t pooled_w, int64_t sampling_ratio);

// Deformable convolution (torchvision.ops.deform_conv2d: DCN, and DCN v2 with a mask):
// conv2d's sizes and groups, each tap of the window reading x bilinearly at its own learned
// offset, zero outside the image. x (N, C, H, W), weight (OC, C / groups, KH, KW), offset
// (N, 2 offset_groups KH KW, OH, OW) as (dy, dx) per tap, mask (N, offset_groups KH KW, OH,
// OW) or undefined, bias (OC) or undefined; stride, padding, dilation as (h, w). Out (N, OC,
// OH, OW) of x's dtype: the sampled columns (one launch), then a matmul per group.
Tensor deform_conv2d(const Tensor& x, const Tensor& weight, const Tensor& offset, const Tensor& mask,
                     const Tensor& bias, std::array<int64_t, 2> stride, std::array<int64_t, 2> padding,
                     std::array<int64_t, 2> dilation, int64_t groups, int64_t offset_groups);

}  // namespace opscope
