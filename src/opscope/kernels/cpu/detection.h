// torchvision's detection ops on the CPU device, with its CPU kernels' arithmetic (f32):
//  nms        greedy non-maximum suppression in order of decreasing score (a stable
//             order: equal scores keep their input order); one work unit.
//  roi_align  the average of bilinear samples on a grid in each bin of each region of
//             interest (Mask R-CNN's RoIAlign); a work unit per region.
//  roi_pool   the maximum over the pixels of each bin, the region snapped to whole pixels
//             (Fast R-CNN's RoIPool); a work unit per region.
//  ps_roi_align  roi_align where bin (i, j) of output channel c reads its own input channel
//             (c * ph + i) * pw + j (R-FCN's position-sensitive RoIAlign); a unit per region.
#pragma once
#include <cstdint>

#include "opscope/runtime/launch.h"
#include "opscope/runtime/tensor.h"

namespace opscope::cpu_kernels {

// keep (N) i64: the kept indices first, in order; kept (1) i64: how many.
LaunchSpec nms_spec(const Tensor& keep, const Tensor& kept, const Tensor& boxes, const Tensor& scores,
                    double iou_threshold);

struct RoiAlignParams {
  double spatial_scale = 1;
  int64_t pooled_h = 1, pooled_w = 1, sampling_ratio = -1;
  bool aligned = false;
};
// out (K, C, ph, pw) from x (N, C, H, W) and rois (K, 5): (batch index, x1, y1, x2, y2).
LaunchSpec roi_align_spec(const Tensor& out, const Tensor& x, const Tensor& rois, const RoiAlignParams& p);
// out (K, C, ph, pw) f32 and argmax (the same shape, i32: the input pixel h * W + w that
// won, -1 for an empty bin, whose value is 0) from x (N, C, H, W) and rois (K, 5).
LaunchSpec roi_pool_spec(const Tensor& out, const Tensor& argmax, const Tensor& x, const Tensor& rois,
                         double spatial_scale);
// out (K, C / (ph pw), ph, pw) f32 and channel_mapping (the same shape, i32: the input
// channel each output read) from x (N, C, H, W) and rois (K, 5); p.aligned is not used
// (torchvision's boxes are always shifted by half a pixel here).
LaunchSpec ps_roi_align_spec(const Tensor& out, const Tensor& channels, const Tensor& x, const Tensor& rois,
                             const RoiAlignParams& p);

}  // namespace opscope::cpu_kernels
