// CNN window ops: convolution (1-, 2- and 3-d, transposed or not) and
// max_pool2d_with_indices. Anything opscope refuses runs torch's CPU kernel through the
// counted fallback.
#include <optional>
#include <string>

#include "opscope/core/error.h"
#include "opscope/ops/ops.h"
#include "opscope/ops/spatial.h"
#include "opscope/torch/kernels.h"

namespace opscope::torch_bridge {

namespace {

// convolution_overrideable has convolution's arguments, but its CPU kernel only throws:
// both are read, and fall back, as convolution.
const c10::OperatorHandle& convolution_op() {
  static const c10::OperatorHandle h = c10::Dispatcher::singleton().findSchemaOrThrow("aten::convolution", "");
  return h;
}

// A 2-d parameter list as torch writes it: (h, w), or one value for both; `empty` stands
// for an empty list (max_pool2d's stride: the kernel). nullopt: a form opscope leaves to torch.
std::optional<Size2> size2(const c10::IValue& v, std::optional<Size2> empty = std::nullopt) {
  std::vector<int64_t> l = v.toIntVector();
  if (l.size() == 2) return Size2{l[0], l[1]};
  if (l.size() == 1) return Size2{l[0], l[0]};
  if (l.empty()) return empty;
  return std::nullopt;
}

}  // namespace

// convolution / convolution_overrideable(input, weight, bias?, stride, padding, dilation,
// transposed, output_padding, groups): 1, 2 or 3 spatial axes, transposed or not (torch's
// conv*d composites have batched the input already).
void convolution_kernel(const c10::OperatorHandle&, Stack* s) {
  Call c(convolution_op(), s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor &input = c.tensor(0), &weight = c.tensor(1);
  c10::optional<at::Tensor> b = c.opt_tensor(2);
  at::Tensor bt = b ? *b : at::Tensor();
  if (on_device(input) != on_device(weight)) two_devices(c.name(), input, weight);
  bool same_dtype = weight.scalar_type() == input.scalar_type() && (!bt.defined() || bt.scalar_type() == input.scalar_type());
  // No input channels: torch's CPU convolution returns an empty (N, 0, ...) tensor there,
  // not the bias; its kernel decides.
  if (input.dim() < 3 || input.dim() > 5 || weight.dim() != input.dim() || !has_kernels({&input, &weight, &bt}) ||
      !same_dtype || input.size(1) == 0)
    return c.fall_back();
  try {
    Tensor x = from_torch(input, c.name()), w = from_torch(weight, c.name());
    Tensor bias = from_torch_opt(bt, c.name());
    AtenScope scope(c.name(), {&x, &w});
    c.ret(to_torch(conv(x, w, bias, int_list(c.arg(3)), int_list(c.arg(4)), int_list(c.arg(5)), c.arg(8).toInt(),
                        c.arg(6).toBool(), int_list(c.arg(7)))));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

// opscope::conv2d_act(x, weight, bias?, stride, padding, dilation, groups, act, residual?):
// 2-d, the residual added and the activation applied in the kernel's epilogue; what opscope
// refuses runs the CPU reference.
void conv2d_act_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor &input = c.tensor(0), &weight = c.tensor(1);
  c10::optional<at::Tensor> b = c.opt_tensor(2);
  at::Tensor bt = b ? *b : at::Tensor();
  c10::optional<at::Tensor> r = c.opt_tensor(8);
  at::Tensor rt = r ? *r : at::Tensor();
  if (on_device(input) != on_device(weight)) two_devices(c.name(), input, weight);
  if (rt.defined() && on_device(input) != on_device(rt)) two_devices(c.name(), input, rt);
  Activation act;
  std::string name = c.arg(7).toStringRef();
  if (!activation_from_name(name, act))
    fail(c.name(), "unknown activation '{}' (expected relu, relu6, hardswish or silu)", name);
  std::optional<Size2> stride = size2(c.arg(3)), padding = size2(c.arg(4)), dilation = size2(c.arg(5));
  if (input.dim() != 4 || weight.dim() != 4 || !stride || !padding || !dilation ||
      !has_kernels({&input, &weight, &bt, &rt}))
    return c.fall_back();
  try {
    Tensor x = from_torch(input, c.name()), w = from_torch(weight, c.name());
    Tensor bias = from_torch_opt(bt, c.name());
    Tensor residual = from_torch_opt(rt, c.name());
    AtenScope scope(c.name(), {&x, &w});
    c.ret(to_torch(conv2d(x, w, bias, *stride, *padding, *dilation, c.arg(6).toInt(), act, residual)));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

// max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode) and its
// out form (..., *, out, indices): (N, C, H, W) or unbatched (C, H, W).
template <Form F>
void max_pool2d_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  auto kernel = size2(c.arg(1));
  auto stride = kernel ? size2(c.arg(2), kernel) : std::nullopt;
  auto padding = size2(c.arg(3)), dilation = size2(c.arg(4));
  if ((self.dim() != 3 && self.dim() != 4) || !has_kernels({&self}) || !kernel || !stride || !padding || !dilation)
    return c.fall_back();
  try {
    Tensor x = from_torch(self, c.name());
    AtenScope scope(c.name(), {&x});
    bool unbatched = x.ndim() == 3;
    auto [y, idx] = max_pool2d_with_indices(unbatched ? x.unsqueeze(0) : x, *kernel, *stride, *padding, *dilation,
                                            c.arg(5).toBool());
    if (unbatched) y = y.squeeze(0), idx = idx.squeeze(0);
    if (F == Form::out) {
      at::Tensor out = c.tensor(6), indices = c.tensor(7);
      c.ret_tuple(deliver(F, y, out, c.name()), deliver(F, idx, indices, c.name()));
    } else {
      c.ret_tuple(to_torch(y), to_torch(idx));
    }
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

template void max_pool2d_kernel<Form::functional>(const c10::OperatorHandle&, Stack*);
template void max_pool2d_kernel<Form::out>(const c10::OperatorHandle&, Stack*);

}  // namespace opscope::torch_bridge
