// torchvision's detection ops: torchvision::nms, roi_align, roi_pool, ps_roi_align and
// deform_conv2d, on opscope's kernels (ops/detection.h). Registered for torchvision's
// namespace (native_functions.cpp); the schemas come from torchvision's own library when it
// is imported.
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

// deform_conv2d(input, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w,
// dilation_h, dilation_w, groups, offset_groups, use_mask): torchvision passes an empty mask
// without use_mask, and a zero bias without one.
void deform_conv2d_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor &x = c.tensor(0), &w = c.tensor(1), &off = c.tensor(2), &mask = c.tensor(3), &bias = c.tensor(4);
  const bool use_mask = c.arg(13).toBool();
  for (const at::Tensor* t : {&w, &off, &mask, &bias})
    if (t->defined() && on_device(*t) != on_device(x)) two_devices(c.name(), x, *t);
  if (!has_kernels({&x, &w, &off, &bias}) || (use_mask && !has_kernels({&mask}))) return c.fall_back();
  try {
    Tensor xt = from_torch(x, c.name()), wt = from_torch(w, c.name()), ot = from_torch(off, c.name());
    Tensor mt = use_mask ? from_torch(mask, c.name()) : Tensor(), bt = from_torch_opt(bias, c.name());
    AtenScope scope(c.name(), {&xt, &wt, &ot});
    auto arg = [&](int i) { return c.arg(i).toInt(); };
    c.ret(to_torch(deform_conv2d(xt, wt, ot, mt, bt, {arg(5), arg(6)}, {arg(7), arg(8)}, {arg(9), arg(10)}, arg(11),
                                 arg(12))));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

}  // namespace opscope::torch_bridge
