// The table of what runs natively on opscope: every aten op registered for privateuseone,
// one line each (as torch_xla's xla_native_functions.yaml). Anything not listed goes to
// the boxed CPU fallback (fallback.cpp), which counts and reports it.
#include <torch/library.h>

#include <ATen/ops/add_ops.h>
#include <ATen/ops/div_ops.h>
#include <ATen/ops/mul_ops.h>
#include <ATen/ops/sub_ops.h>

#include "opscope/torch/factories.h"
#include "opscope/torch/kernels.h"

namespace opscope::torch_bridge {
namespace {

template <BoxedKernel* K>
torch::CppFunction boxed() {
  return torch::CppFunction::makeFromBoxedFunction<K>();
}

// The reference of opscope::rms_norm on CPU: what the fused kernel computes (f32 math).
at::Tensor rms_norm_cpu(const at::Tensor& x, const at::Tensor& weight, double eps) {
  at::Tensor xf = x.to(at::kFloat);
  at::Tensor y = xf * at::rsqrt(xf.pow(2).mean(-1, true) + eps) * weight.to(at::kFloat);
  return y.to(x.scalar_type());
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using F = Form;
  // ---- memory, copies, views (copy.cpp) ----
  m.impl("empty.memory_format", TORCH_FN(empty));
  m.impl("empty_strided", TORCH_FN(empty_strided));
  m.impl("_copy_from", TORCH_FN(copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
  m.impl("resize_", TORCH_FN(resize_kernel));
  m.impl("_local_scalar_dense", TORCH_FN(local_scalar_dense));
  m.impl("view", TORCH_FN(view));
  m.impl("as_strided", TORCH_FN(as_strided));
  m.impl("_reshape_alias", TORCH_FN(reshape_alias));
  m.impl("unfold", TORCH_FN(unfold));
  m.impl("view_as_real", TORCH_FN(view_as_real));
  m.impl("view_as_complex", TORCH_FN(view_as_complex));
  m.impl("fill_.Scalar", TORCH_FN(fill_scalar_));
  m.impl("fill_.Tensor", TORCH_FN(fill_tensor_));
  m.impl("zero_", TORCH_FN(zero_kernel));
  m.impl("clone", boxed<clone_kernel>());
  m.impl("arange.start_out", boxed<arange_kernel>());

  // ---- binary (ops_math.cpp); the .Scalar forms are composite and reach .Tensor, whose
  // functional form has an unboxed fast path ----
#define OPSCOPE_BINARY(kind, ...)                                                            \
  m.impl(#kind ".Tensor", TORCH_FN((binary_fast<Binary::kind, at::_ops::kind##_Tensor, ##__VA_ARGS__>))); \
  m.impl(#kind "_.Tensor", boxed<binary_kernel<Binary::kind, F::inplace>>());                          \
  m.impl(#kind ".out", boxed<binary_kernel<Binary::kind, F::out>>());
  OPSCOPE_BINARY(add, at::Scalar)
  OPSCOPE_BINARY(sub, at::Scalar)
  OPSCOPE_BINARY(mul)
  OPSCOPE_BINARY(div)
#undef OPSCOPE_BINARY
  m.impl("pow.Tensor_Tensor", boxed<binary_kernel<Binary::pow, F::functional>>());
  m.impl("pow_.Tensor", boxed<binary_kernel<Binary::pow, F::inplace>>());
  m.impl("pow.Tensor_Tensor_out", boxed<binary_kernel<Binary::pow, F::out>>());
  m.impl("pow.Tensor_Scalar", boxed<binary_kernel<Binary::pow, F::functional>>());
  m.impl("pow_.Scalar", boxed<binary_kernel<Binary::pow, F::inplace>>());
  m.impl("pow.Tensor_Scalar_out", boxed<binary_kernel<Binary::pow, F::out>>());
  m.impl("maximum", boxed<binary_kernel<Binary::maximum, F::functional>>());
  m.impl("maximum.out", boxed<binary_kernel<Binary::maximum, F::out>>());
  m.impl("minimum", boxed<binary_kernel<Binary::minimum, F::functional>>());
  m.impl("minimum.out", boxed<binary_kernel<Binary::minimum, F::out>>());

  // ---- unary ----
#define OPSCOPE_UNARY(name, kind)                                              \
  m.impl(name, boxed<unary_kernel<Unary::kind, F::functional>>());         \
  m.impl(name "_", boxed<unary_kernel<Unary::kind, F::inplace>>());        \
  m.impl(name ".out", boxed<unary_kernel<Unary::kind, F::out>>());
  OPSCOPE_UNARY("neg", neg)
  OPSCOPE_UNARY("abs", abs)
  OPSCOPE_UNARY("exp", exp)
  OPSCOPE_UNARY("log", log)
  OPSCOPE_UNARY("sqrt", sqrt)
  OPSCOPE_UNARY("rsqrt", rsqrt)
  OPSCOPE_UNARY("sin", sin)
  OPSCOPE_UNARY("cos", cos)
  OPSCOPE_UNARY("tanh", tanh)
  OPSCOPE_UNARY("sigmoid", sigmoid)
  OPSCOPE_UNARY("silu", silu)
  OPSCOPE_UNARY("gelu", gelu)  // both approximations: none (erf) and tanh
  OPSCOPE_UNARY("hardswish", hardswish)
  OPSCOPE_UNARY("hardsigmoid", hardsigmoid)
#undef OPSCOPE_UNARY
  m.impl("relu", boxed<unary_kernel<Unary::relu, F::functional>>());
  m.impl("relu_", boxed<unary_kernel<Unary::relu, F::inplace>>());

  // ---- reductions ----
  m.impl("sum", boxed<reduce_kernel<Reduce::sum, F::functional>>());
  m.impl("sum.dim_IntList", boxed<reduce_kernel<Reduce::sum, F::functional>>());
  m.impl("sum.IntList_out", boxed<reduce_kernel<Reduce::sum, F::out>>());
  m.impl("mean", boxed<reduce_kernel<Reduce::mean, F::functional>>());
  m.impl("mean.dim", boxed<reduce_kernel<Reduce::mean, F::functional>>());
  m.impl("mean.out", boxed<reduce_kernel<Reduce::mean, F::out>>());
  m.impl("amax", boxed<reduce_kernel<Reduce::amax, F::functional>>());
  m.impl("amax.out", boxed<reduce_kernel<Reduce::amax, F::out>>());
  m.impl("amin", boxed<reduce_kernel<Reduce::amin, F::functional>>());
  m.impl("amin.out", boxed<reduce_kernel<Reduce::amin, F::out>>());
  m.impl("argmax", boxed<argmax_kernel<F::functional>>());
  m.impl("argmax.out", boxed<argmax_kernel<F::out>>());
  m.impl("var.correction", boxed<var_kernel<F::functional>>());
  m.impl("var.correction_out", boxed<var_kernel<F::out>>());

  // ---- linear algebra, nn, shape (ops_nn.cpp); matmul and linear are composite ----
  m.impl("mm", boxed<mm_kernel<F::functional>>());
  m.impl("mm.out", boxed<mm_kernel<F::out>>());
  m.impl("bmm", boxed<mm_kernel<F::functional>>());
  m.impl("bmm.out", boxed<mm_kernel<F::out>>());
  m.impl("addmm", boxed<addmm_kernel<F::functional>>());
  m.impl("addmm.out", boxed<addmm_kernel<F::out>>());
  m.impl("_softmax", boxed<softmax_kernel<F::functional>>());
  m.impl("_softmax.out", boxed<softmax_kernel<F::out>>());
  m.impl("native_layer_norm", boxed<layer_norm_kernel>());
  m.impl("native_batch_norm", boxed<batch_norm_kernel>());  // eval; training falls back
  m.impl("embedding", boxed<embedding_kernel>());
  m.impl("cat", boxed<cat_kernel<F::functional>>());
  m.impl("cat.out", boxed<cat_kernel<F::out>>());

  // ---- CNN windows (ops_conv.cpp): nn.Conv2d and F.conv2d reach convolution (registered
  // here, it overrides torch's composite, which would call _convolution and then
  // convolution_overrideable); 1-d, 3-d and transposed ones fall back to torch's CPU
  // convolution. max_pool2d (composite) calls max_pool2d_with_indices off the CPU ----
  m.impl("convolution", boxed<convolution_kernel>());
  m.impl("convolution_overrideable", boxed<convolution_kernel>());
  m.impl("max_pool2d_with_indices", boxed<max_pool2d_kernel<F::functional>>());
  m.impl("max_pool2d_with_indices.out", boxed<max_pool2d_kernel<F::out>>());

  // ---- torch's CPU kernel, explicitly: its composite would call
  // convolution_backward_overrideable, which throws for a new backend ----
  m.impl("convolution_backward", boxed<cpu_fallback>());
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) { m.fallback(boxed<cpu_fallback>()); }
// 1.13 registers the autograd fallthrough for the built-in backends only: without it, an op
// with no autograd kernel of its own (opscope::rms_norm) cannot reach PrivateUse1.
TORCH_LIBRARY_IMPL(_, AutogradPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

// opscope's own ops: torch.ops.opscope.rms_norm (Python: opscope.ops.rms_norm).
TORCH_LIBRARY(opscope, m) {
  m.def("rms_norm(Tensor x, Tensor weight, float eps=1e-6) -> Tensor");
  m.def("_test_kernel(Tensor x, int gate, bool fail) -> Tensor");
}
TORCH_LIBRARY_IMPL(opscope, PrivateUse1, m) {
  m.impl("rms_norm", boxed<rms_norm_kernel>());
  m.impl("_test_kernel", boxed<test_kernel>());
}
TORCH_LIBRARY_IMPL(opscope, CPU, m) { m.impl("rms_norm", TORCH_FN(rms_norm_cpu)); }

}  // namespace opscope::torch_bridge
