// torchvision's detection ops: torchvision::nms, roi_align, roi_pool and ps_roi_align, on opscope's
// kernels (ops/detection.h). Registered for torchvision's namespace (native_functions.cpp);
// the schemas come from torchvision's own library when it is imported.
#include "opscope/core/error.h"
#include "opscope/ops/detection.h"
#include "opscope/torch/kernels.h"

namespace opscope::torch_bridge {

namespace {

// What the three share: two tensors on the device (or a clear error), opscope's dtypes
// (else torch's kernel), then fn(c, a, b) under the aten op's scope.
template <class Fn> void two_operands(const c10::OperatorHandle& op, Stack* s, Fn&& fn) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor &a = c.tensor(0), &b = c.tensor(1);
  if (on_device(a) != on_device(b)) two_devices(c.name(), a, b);
  if (!has_kernels({&a, &b})) return c.fall_back();
  try {
    Tensor x = from_torch(a, c.name()), y = from_torch(b, c.name());
    AtenScope scope(c.name(), {&x, &y});
    fn(c, x, y);
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

}  // namespace

// nms(dets, scores, iou_threshold) -> Tensor
void nms_kernel(const c10::OperatorHandle& op, Stack* s) {
  two_operands(op, s, [](Call& c, const Tensor& boxes, const Tensor& scores) {
    c.ret(to_torch(nms(boxes, scores, c.arg(2).toDouble())));
  });
}

// roi_align(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned)
void roi_align_kernel(const c10::OperatorHandle& op, Stack* s) {
  two_operands(op, s, [](Call& c, const Tensor& x, const Tensor& rois) {
    c.ret(to_torch(roi_align(x, as_dtype(rois, x.dtype()), c.arg(2).toDouble(), c.arg(3).toInt(), c.arg(4).toInt(),
                             c.arg(5).toInt(), c.arg(6).toBool())));
  });
}

// roi_pool(input, rois, spatial_scale, pooled_height, pooled_width) -> (Tensor, Tensor)
void roi_pool_kernel(const c10::OperatorHandle& op, Stack* s) {
  two_operands(op, s, [](Call& c, const Tensor& x, const Tensor& rois) {
    auto [out, argmax] =
        roi_pool(x, as_dtype(rois, x.dtype()), c.arg(2).toDouble(), c.arg(3).toInt(), c.arg(4).toInt());
    c.ret_tuple(to_torch(out), to_torch(argmax));
  });
}

// ps_roi_align(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio) -> (Tensor, Tensor)
void ps_roi_align_kernel(const c10::OperatorHandle& op, Stack* s) {
  two_operands(op, s, [](Call& c, const Tensor& x, const Tensor& rois) {
    auto [out, channels] = ps_roi_align(x, as_dtype(rois, x.dtype()), c.arg(2).toDouble(), c.arg(3).toInt(),
                                        c.arg(4).toInt(), c.arg(5).toInt());
    c.ret_tuple(to_torch(out), to_torch(channels));
  });
}

}  // namespace opscope::torch_bridge
