// nms, roi_align, roi_pool and ps_roi_align: the framework steps (kernels/cpu/detection).
#include "opscope/ops/detection.h"

#include "opscope/core/error.h"
#include "opscope/kernels/cpu/detection.h"
#include "opscope/kernels/dispatch.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/runtime.h"

namespace opscope {

Tensor nms(const Tensor& boxes, const Tensor& scores, double iou_threshold) {
  OPSCOPE_OP("nms", &boxes, &scores);
  if (!boxes.defined() || !scores.defined()) fail("nms", "an operand is undefined (a default-constructed Tensor)");
  if (boxes.ndim() != 2 || boxes.shape()[1] != 4)
    fail("nms", "boxes have shape {}; they must be (N, 4)", boxes.shape().str());
  if (scores.ndim() != 1 || scores.shape()[0] != boxes.shape()[0])
    fail("nms", "scores have shape {}; they must be ({}), one per box", scores.shape().str(), boxes.shape()[0]);
  if (!is_floating(boxes.dtype()) || scores.dtype() != boxes.dtype())
    fail("nms", "boxes ({}) and scores ({}) must have one floating dtype", dtype_name(boxes.dtype()),
         dtype_name(scores.dtype()));
  if (&boxes.device() != &scores.device()) fail("nms", "boxes and scores are on different devices");
  ops_detail::cpu_only("nms", boxes.device());
  int64_t n = boxes.shape()[0];
  Tensor keep = runtime::allocate({n}, DType::i64, boxes.device());
  if (n == 0) return keep;
  Tensor b = boxes.contiguous().to(DType::f32), s = scores.contiguous().to(DType::f32);
  Tensor kept = runtime::allocate({1}, DType::i64, boxes.device());
  runtime::launch(boxes.device(), cpu_kernels::nms_spec(keep, kept, b, s, iou_threshold), {&b, &s}, {&keep, &kept});
  runtime::wait_written(kept);  // the count sets the shape
  return keep.slice(0, 0, *kept.data<int64_t>());
}

namespace {

// The checks the region ops share.
void check_rois(const char* op, const Tensor& x, const Tensor& rois, int64_t pooled_h, int64_t pooled_w) {
  if (!x.defined() || !rois.defined()) fail(op, "an operand is undefined (a default-constructed Tensor)");
  if (x.ndim() != 4) fail(op, "x has shape {}; it must be (N, C, H, W)", x.shape().str());
  if (rois.ndim() != 2 || rois.shape()[1] != 5)
    fail(op, "rois have shape {}; they must be (K, 5): batch index, x1, y1, x2, y2", rois.shape().str());
  if (!is_floating(x.dtype()) || rois.dtype() != x.dtype())
    fail(op, "x ({}) and rois ({}) must have one floating dtype", dtype_name(x.dtype()), dtype_name(rois.dtype()));
  if (&x.device() != &rois.device()) fail(op, "x and rois are on different devices");
  if (pooled_h < 1 || pooled_w < 1) fail(op, "the output size ({}, {}) must be positive", pooled_h, pooled_w);
  ops_detail::cpu_only(op, x.device());
}

}  // namespace

Tensor roi_align(const Tensor& x, const Tensor& rois, double spatial_scale, int64_t pooled_h, int64_t pooled_w,
                 int64_t sampling_ratio, bool aligned) {
  OPSCOPE_OP("roi_align", &x, &rois);
  check_rois("roi_align", x, rois, pooled_h, pooled_w);
  Tensor out = runtime::allocate({rois.shape()[0], x.shape()[1], pooled_h, pooled_w}, DType::f32, x.device());
  if (out.numel() == 0) return out.to(x.dtype());
  Tensor xc = x.contiguous().to(DType::f32), rc = rois.contiguous().to(DType::f32);
  cpu_kernels::RoiAlignParams p{spatial_scale, pooled_h, pooled_w, sampling_ratio, aligned};
  runtime::launch(x.device(), cpu_kernels::roi_align_spec(out, xc, rc, p), {&xc, &rc}, {&out});
  return out.to(x.dtype());
}

std::pair<Tensor, Tensor> roi_pool(const Tensor& x, const Tensor& rois, double spatial_scale, int64_t pooled_h,
                                   int64_t pooled_w) {
  OPSCOPE_OP("roi_pool", &x, &rois);
  check_rois("roi_pool", x, rois, pooled_h, pooled_w);
  Shape shape{rois.shape()[0], x.shape()[1], pooled_h, pooled_w};
  Tensor out = runtime::allocate(shape, DType::f32, x.device());
  Tensor argmax = runtime::allocate(shape, DType::i32, x.device());
  if (out.numel() == 0) return {out.to(x.dtype()), argmax};
  Tensor xc = x.contiguous().to(DType::f32), rc = rois.contiguous().to(DType::f32);
  runtime::launch(x.device(), cpu_kernels::roi_pool_spec(out, argmax, xc, rc, spatial_scale), {&xc, &rc},
                  {&out, &argmax});
  return {out.to(x.dtype()), argmax};
}

std::pair<Tensor, Tensor> ps_roi_align(const Tensor& x, const Tensor& rois, double spatial_scale, int64_t pooled_h,
                                       int64_t pooled_w, int64_t sampling_ratio) {
  OPSCOPE_OP("ps_roi_align", &x, &rois);
  check_rois("ps_roi_align", x, rois, pooled_h, pooled_w);
  if (x.shape()[1] % (pooled_h * pooled_w) != 0)
    fail("ps_roi_align", "x's {} channels are not a multiple of the output size {} x {}", x.shape()[1], pooled_h,
         pooled_w);
  Shape shape{rois.shape()[0], x.shape()[1] / (pooled_h * pooled_w), pooled_h, pooled_w};
  Tensor out = runtime::allocate(shape, DType::f32, x.device());
  Tensor channels = runtime::allocate(shape, DType::i32, x.device());
  if (out.numel() == 0) return {out.to(x.dtype()), channels};
  Tensor xc = x.contiguous().to(DType::f32), rc = rois.contiguous().to(DType::f32);
  cpu_kernels::RoiAlignParams p{spatial_scale, pooled_h, pooled_w, sampling_ratio, false};
  runtime::launch(x.device(), cpu_kernels::ps_roi_align_spec(out, channels, xc, rc, p), {&xc, &rc}, {&out, &channels});
  return {out.to(x.dtype()), channels};
}

}  // namespace opscope
