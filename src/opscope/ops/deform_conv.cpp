// deform_conv2d: the checks, the sampled columns (kernels/cpu/deform_conv) and the product
// with the weight, a matmul per group.
#include "opscope/core/error.h"
#include "opscope/kernels/cpu/deform_conv.h"
#include "opscope/kernels/dispatch.h"
#include "opscope/ops/detection.h"
#include "opscope/ops/ops.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/runtime.h"

namespace opscope {

namespace {

constexpr const char* kOp = "deform_conv2d";

void check_4d(const char* what, const Tensor& t, const char* dims) {
  if (t.ndim() != 4) fail(kOp, "{} has shape {}; it must be {}", what, t.shape().str(), dims);
}

void check_shape(const char* what, const Tensor& t, const Shape& want) {
  if (t.shape() != want) fail(kOp, "{} has shape {}; it must be {}", what, t.shape().str(), want.str());
}

void check_operands(const Tensor& x, const Tensor& weight, const Tensor& offset, const Tensor& mask,
                    const Tensor& bias) {
  if (!x.defined() || !weight.defined() || !offset.defined())
    fail(kOp, "x, weight and offset must be defined (a default-constructed Tensor was given)");
  for (const Tensor* t : {&weight, &offset, &mask, &bias}) {
    if (!t->defined()) continue;
    if (!is_floating(t->dtype()) || t->dtype() != x.dtype())
      fail(kOp, "every operand must have x's floating dtype: x {}, weight {}, offset {}{}{}", dtype_name(x.dtype()),
           dtype_name(weight.dtype()), dtype_name(offset.dtype()),
           mask.defined() ? fmt::format(", mask {}", dtype_name(mask.dtype())) : "",
           bias.defined() ? fmt::format(", bias {}", dtype_name(bias.dtype())) : "");
    if (&t->device() != &x.device()) fail(kOp, "the operands are on different devices");
  }
  ops_detail::cpu_only(kOp, x.device());
}

}  // namespace

Tensor deform_conv2d(const Tensor& x, const Tensor& weight, const Tensor& offset, const Tensor& mask,
                     const Tensor& bias, std::array<int64_t, 2> stride, std::array<int64_t, 2> padding,
                     std::array<int64_t, 2> dilation, int64_t groups, int64_t offset_groups) {
  OPSCOPE_OP("deform_conv2d", &x, &weight, &offset);
  check_operands(x, weight, offset, mask, bias);
  check_4d("x", x, "(N, C, H, W)");
  check_4d("weight", weight, "(OC, C / groups, KH, KW)");
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t OC = weight.shape()[0], KH = weight.shape()[2], KW = weight.shape()[3];
  if (KH < 1 || KW < 1) fail(kOp, "the kernel {}x{} must be at least 1x1", KH, KW);
  if (stride[0] < 1 || stride[1] < 1) fail(kOp, "stride ({}, {}) must be at least 1", stride[0], stride[1]);
  if (padding[0] < 0 || padding[1] < 0) fail(kOp, "padding ({}, {}) must not be negative", padding[0], padding[1]);
  if (dilation[0] < 1 || dilation[1] < 1) fail(kOp, "dilation ({}, {}) must be at least 1", dilation[0], dilation[1]);
  if (groups < 1 || weight.shape()[1] * groups != C || OC % groups != 0)
    fail(kOp, "weight {} with {} groups does not fit x's {} channels: it must be (OC, C / groups, KH, KW) with OC "
         "a multiple of groups", weight.shape().str(), groups, C);
  if (offset_groups < 1 || C % offset_groups != 0)
    fail(kOp, "{} offset groups do not divide x's {} channels", offset_groups, C);
  // The padded input's reach past the dilated kernel: negative when the kernel does not fit
  // (divided first, -1 / 2 would truncate to an output of one row).
  const int64_t reach_h = H + 2 * padding[0] - dilation[0] * (KH - 1) - 1;
  const int64_t reach_w = W + 2 * padding[1] - dilation[1] * (KW - 1) - 1;
  if (reach_h < 0 || reach_w < 0)
    fail(kOp, "x {} padded by ({}, {}) is smaller than the {}x{} kernel dilated by ({}, {})", x.shape().str(),
         padding[0], padding[1], KH, KW, dilation[0], dilation[1]);
  const int64_t OH = reach_h / stride[0] + 1, OW = reach_w / stride[1] + 1;
  check_shape("offset", offset, {N, 2 * offset_groups * KH * KW, OH, OW});
  if (mask.defined()) check_shape("mask", mask, {N, offset_groups * KH * KW, OH, OW});
  if (bias.defined() && (bias.ndim() != 1 || bias.shape()[0] != OC))
    fail(kOp, "bias has shape {}; it must be ({})", bias.shape().str(), OC);

  Device& dev = x.device();
  Tensor out;
  if (N * OC == 0 || C == 0) {  // no samples to take: zeros, plus the bias
    out = zeros({N, OC, OH, OW}, DType::f32, &dev);
  } else {
    Tensor xc = x.contiguous().to(DType::f32), oc = offset.contiguous().to(DType::f32);
    Tensor mc = mask.defined() ? mask.contiguous().to(DType::f32) : Tensor();
    const int64_t L = OH * OW, rows = C / groups * KH * KW;
    Tensor cols = runtime::allocate({N, C * KH * KW, L}, DType::f32, dev);
    cpu_kernels::DeformParams p{KH, KW, stride[0], stride[1], padding[0], padding[1], dilation[0], dilation[1],
                                offset_groups};
    if (mc.defined()) {
      runtime::launch(dev, cpu_kernels::deform_im2col_spec(cols, xc, oc, &mc, p), {&xc, &oc, &mc}, {&cols});
    } else {
      runtime::launch(dev, cpu_kernels::deform_im2col_spec(cols, xc, oc, nullptr, p), {&xc, &oc}, {&cols});
    }
    // (groups, OC / groups, rows) @ (N, groups, rows, L): a matmul per image and group.
    Tensor w = weight.contiguous().to(DType::f32).view({groups, OC / groups, rows});
    out = matmul(w, cols.view({N, groups, rows, L})).view({N, OC, OH, OW});
  }
  if (bias.defined()) out = add(out, bias.contiguous().to(DType::f32).view({1, OC, 1, 1}));
  return out.to(x.dtype());
}

}  // namespace opscope
