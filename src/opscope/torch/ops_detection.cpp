// torchvision's detection ops: torchvision::nms, roi_align and roi_pool, on opscope's
// kernels (ops/detection.h). Registered for torchvision's namespace (native_functions.cpp);
// the schemas come from torchvision's own library when it is imported.
#include "opscope/core/error.h"
#include "opscope/ops/detection.h"
#include "opscope/torch/kernels.h"

namespace opscope::torch_bridge {

// nms(dets, scores, iou_threshold) -> Tensor
void nms_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor &boxes = c.tensor(0), &scores = c.tensor(1);
  if (on_device(boxes) != on_device(scores)) two_devices(c.name(), boxes, scores);
  if (!has_kernels({&boxes, &scores})) return c.fall_back();
  try {
    Tensor b = from_torch(boxes, c.name()), sc = from_torch(scores, c.name());
    AtenScope scope(c.name(), {&b, &sc});
    c.ret(to_torch(nms(b, sc, c.arg(2).toDouble())));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

// roi_align(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned)
void roi_align_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor &input = c.tensor(0), &rois = c.tensor(1);
  if (on_device(input) != on_device(rois)) two_devices(c.name(), input, rois);
  if (!has_kernels({&input, &rois})) return c.fall_back();
  try {
    Tensor x = from_torch(input, c.name()), r = from_torch(rois, c.name());
    AtenScope scope(c.name(), {&x, &r});
    c.ret(to_torch(roi_align(x, as_dtype(r, x.dtype()), c.arg(2).toDouble(), c.arg(3).toInt(), c.arg(4).toInt(),
                             c.arg(5).toInt(), c.arg(6).toBool())));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

// roi_pool(input, rois, spatial_scale, pooled_height, pooled_width) -> (Tensor, Tensor)
void roi_pool_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor &input = c.tensor(0), &rois = c.tensor(1);
  if (on_device(input) != on_device(rois)) two_devices(c.name(), input, rois);
  if (!has_kernels({&input, &rois})) return c.fall_back();
  try {
    Tensor x = from_torch(input, c.name()), r = from_torch(rois, c.name());
    AtenScope scope(c.name(), {&x, &r});
    auto [out, argmax] = roi_pool(x, as_dtype(r, x.dtype()), c.arg(2).toDouble(), c.arg(3).toInt(), c.arg(4).toInt());
    c.ret_tuple(to_torch(out), to_torch(argmax));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

}  // namespace opscope::torch_bridge
