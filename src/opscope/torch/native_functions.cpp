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

// opscope::conv2d_act on CPU (and where the device's kernel refuses): the convolution,
// then the activation, as torch's ops.
at::Tensor conv2d_act_cpu(const at::Tensor& x, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                          at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups,
                          c10::string_view act, const c10::optional<at::Tensor>& residual) {
  at::Tensor y = at::conv2d(x, weight, bias, stride, padding, dilation, groups);
  if (residual) y = y + *residual;
  if (act == "relu") return at::relu(y);
  if (act == "relu6") return at::clamp(y, 0, 6);
  if (act == "hardswish") return at::hardswish(y);
  if (act == "silu") return at::silu(y);
  TORCH_CHECK(act.empty(), "opscope::conv2d_act: unknown activation '", std::string(act),
              "' (expected relu, relu6, hardswish or silu)");
  return y;
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
  m.impl("linspace.out", boxed<linspace_kernel>());

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
  for (const char* name : {"div.Tensor_mode", "div.Scalar_mode"}) m.impl(name, boxed<div_mode_kernel<F::functional, false>>());
  for (const char* name : {"div_.Tensor_mode", "div_.Scalar_mode"}) m.impl(name, boxed<div_mode_kernel<F::inplace, false>>());
  for (const char* name : {"div.out_mode", "div.Scalar_mode_out"}) m.impl(name, boxed<div_mode_kernel<F::out, false>>());
  for (const char* name : {"floor_divide", "floor_divide.Scalar"}) m.impl(name, boxed<div_mode_kernel<F::functional, true>>());
  for (const char* name : {"floor_divide_.Tensor", "floor_divide_.Scalar"}) m.impl(name, boxed<div_mode_kernel<F::inplace, true>>());
  m.impl("floor_divide.out", boxed<div_mode_kernel<F::out, true>>());
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
  // remainder.Scalar is composite: it reaches .Tensor with a wrapped number.
  m.impl("remainder.Scalar_Tensor", boxed<binary_kernel<Binary::remainder, F::functional>>());
  m.impl("remainder.Tensor", boxed<binary_kernel<Binary::remainder, F::functional>>());
  m.impl("remainder_.Tensor", boxed<binary_kernel<Binary::remainder, F::inplace>>());
  m.impl("remainder.Tensor_out", boxed<binary_kernel<Binary::remainder, F::out>>());

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
#define OPSCOPE_PARAM_UNARY(name, kind)                                          \
  m.impl(name, boxed<param_unary_kernel<ParamUnary::kind, F::functional>>());    \
  m.impl(name ".out", boxed<param_unary_kernel<ParamUnary::kind, F::out>>());
  OPSCOPE_PARAM_UNARY("leaky_relu", leaky_relu)
  OPSCOPE_PARAM_UNARY("elu", elu)  // selu and celu too: torch computes them with elu
  OPSCOPE_PARAM_UNARY("softplus", softplus)  // no softplus_ in torch
  OPSCOPE_PARAM_UNARY("mish", mish)
  OPSCOPE_PARAM_UNARY("log10", log10)
  OPSCOPE_PARAM_UNARY("exp2", exp2)
#undef OPSCOPE_PARAM_UNARY
#define OPSCOPE_PARAM_UNARY_ALL(name, kind)                                      \
  m.impl(name, boxed<param_unary_kernel<ParamUnary::kind, F::functional>>());    \
  m.impl(name "_", boxed<param_unary_kernel<ParamUnary::kind, F::inplace>>());   \
  m.impl(name ".out", boxed<param_unary_kernel<ParamUnary::kind, F::out>>());
  m.impl("leaky_relu_", boxed<param_unary_kernel<ParamUnary::leaky_relu, F::inplace>>());
  m.impl("elu_", boxed<param_unary_kernel<ParamUnary::elu, F::inplace>>());
  m.impl("mish_", boxed<param_unary_kernel<ParamUnary::mish, F::inplace>>());
  m.impl("log10_", boxed<param_unary_kernel<ParamUnary::log10, F::inplace>>());
  m.impl("exp2_", boxed<param_unary_kernel<ParamUnary::exp2, F::inplace>>());
  OPSCOPE_PARAM_UNARY_ALL("atanh", atanh)
  OPSCOPE_PARAM_UNARY_ALL("frac", frac)
  // lgamma stays torch's: the device's (glibc's lgammaf_r per element) took 2.5-3x its time
#undef OPSCOPE_PARAM_UNARY_ALL
  OPSCOPE_UNARY("floor", floor)
  OPSCOPE_UNARY("ceil", ceil)
  OPSCOPE_UNARY("trunc", trunc)
  OPSCOPE_UNARY("sign", sign)
  OPSCOPE_UNARY("sgn", sign)  // sign for real dtypes; complex ones fall back
  OPSCOPE_UNARY("log2", log2)
  OPSCOPE_UNARY("reciprocal", reciprocal)
  OPSCOPE_UNARY("erf", erf)
  OPSCOPE_UNARY("expm1", expm1)
  OPSCOPE_UNARY("log1p", log1p)
  OPSCOPE_UNARY("tan", tan)
  OPSCOPE_UNARY("atan", atan)
  OPSCOPE_UNARY("asin", asin)
  OPSCOPE_UNARY("acos", acos)
  OPSCOPE_UNARY("sinh", sinh)
  OPSCOPE_UNARY("cosh", cosh)
  OPSCOPE_UNARY("erfinv", erfinv)
#undef OPSCOPE_UNARY
  m.impl("round", boxed<unary_kernel<Unary::round, F::functional>>());
  m.impl("round_", boxed<unary_kernel<Unary::round, F::inplace>>());
  m.impl("round.out", boxed<unary_kernel<Unary::round, F::out>>());

  // ---- comparisons, logic, selection (ops_compare.cpp) ----
#define OPSCOPE_COMPARE(name)                                                            \
  m.impl(#name ".Tensor", boxed<compare_kernel<Compare::name, F::functional>>());        \
  m.impl(#name ".Scalar", boxed<compare_kernel<Compare::name, F::functional>>());        \
  m.impl(#name "_.Tensor", boxed<compare_kernel<Compare::name, F::inplace>>());          \
  m.impl(#name "_.Scalar", boxed<compare_kernel<Compare::name, F::inplace>>());          \
  m.impl(#name ".Tensor_out", boxed<compare_kernel<Compare::name, F::out>>());           \
  m.impl(#name ".Scalar_out", boxed<compare_kernel<Compare::name, F::out>>());
  OPSCOPE_COMPARE(eq)
  OPSCOPE_COMPARE(ne)
  OPSCOPE_COMPARE(lt)
  OPSCOPE_COMPARE(le)
  OPSCOPE_COMPARE(gt)
  OPSCOPE_COMPARE(ge)
#undef OPSCOPE_COMPARE
#define OPSCOPE_LOGICAL(name, kind)                                                       \
  m.impl("logical_" name, boxed<logical_kernel<Logical::kind, F::functional>>());         \
  m.impl("logical_" name "_", boxed<logical_kernel<Logical::kind, F::inplace>>());        \
  m.impl("logical_" name ".out", boxed<logical_kernel<Logical::kind, F::out>>());         \
  m.impl("bitwise_" name ".Tensor", boxed<logical_kernel<Logical::kind, F::functional>>()); \
  m.impl("bitwise_" name "_.Tensor", boxed<logical_kernel<Logical::kind, F::inplace>>());   \
  m.impl("bitwise_" name ".Tensor_out", boxed<logical_kernel<Logical::kind, F::out>>());
  OPSCOPE_LOGICAL("and", and_)
  OPSCOPE_LOGICAL("or", or_)
  OPSCOPE_LOGICAL("xor", xor_)
#undef OPSCOPE_LOGICAL
  m.impl("logical_not", boxed<logical_not_kernel<F::functional>>());
  m.impl("logical_not_", boxed<logical_not_kernel<F::inplace>>());
  m.impl("logical_not.out", boxed<logical_not_kernel<F::out>>());
  m.impl("bitwise_not", boxed<logical_not_kernel<F::functional>>());
  m.impl("bitwise_not_", boxed<logical_not_kernel<F::inplace>>());
  m.impl("bitwise_not.out", boxed<logical_not_kernel<F::out>>());
  m.impl("where.self", boxed<where_kernel<F::functional>>());
  m.impl("where.self_out", boxed<where_kernel<F::out>>());
  m.impl("masked_fill.Scalar", boxed<masked_fill_kernel<F::functional>>());
  m.impl("masked_fill.Tensor", boxed<masked_fill_kernel<F::functional>>());
  m.impl("masked_fill_.Scalar", boxed<masked_fill_kernel<F::inplace>>());
  m.impl("masked_fill_.Tensor", boxed<masked_fill_kernel<F::inplace>>());
  m.impl("clamp", boxed<clamp_kernel<Clamp::both, F::functional>>());
  m.impl("clamp_", boxed<clamp_kernel<Clamp::both, F::inplace>>());
  m.impl("clamp.out", boxed<clamp_kernel<Clamp::both, F::out>>());
  m.impl("clamp_min", boxed<clamp_kernel<Clamp::min, F::functional>>());
  m.impl("clamp_min_", boxed<clamp_kernel<Clamp::min, F::inplace>>());
  m.impl("clamp_min.out", boxed<clamp_kernel<Clamp::min, F::out>>());
  m.impl("clamp_max", boxed<clamp_kernel<Clamp::max, F::functional>>());
  m.impl("clamp_max_", boxed<clamp_kernel<Clamp::max, F::inplace>>());
  m.impl("clamp_max.out", boxed<clamp_kernel<Clamp::max, F::out>>());
  m.impl("hardtanh", boxed<clamp_kernel<Clamp::hardtanh, F::functional>>());  // ReLU6
  m.impl("hardtanh_", boxed<clamp_kernel<Clamp::hardtanh, F::inplace>>());
  m.impl("hardtanh.out", boxed<clamp_kernel<Clamp::hardtanh, F::out>>());
  m.impl("clamp.Tensor", boxed<clamp_tensor_kernel<Clamp::both, F::functional>>());
  m.impl("clamp_.Tensor", boxed<clamp_tensor_kernel<Clamp::both, F::inplace>>());
  m.impl("clamp.Tensor_out", boxed<clamp_tensor_kernel<Clamp::both, F::out>>());
  m.impl("clamp_min.Tensor", boxed<clamp_tensor_kernel<Clamp::min, F::functional>>());
  m.impl("clamp_min_.Tensor", boxed<clamp_tensor_kernel<Clamp::min, F::inplace>>());
  m.impl("clamp_min.Tensor_out", boxed<clamp_tensor_kernel<Clamp::min, F::out>>());
  m.impl("clamp_max.Tensor", boxed<clamp_tensor_kernel<Clamp::max, F::functional>>());
  m.impl("clamp_max_.Tensor", boxed<clamp_tensor_kernel<Clamp::max, F::inplace>>());
  m.impl("clamp_max.Tensor_out", boxed<clamp_tensor_kernel<Clamp::max, F::out>>());
  m.impl("addcmul", boxed<addcmul_kernel<F::functional>>());
  m.impl("addcmul_", boxed<addcmul_kernel<F::inplace>>());
  m.impl("addcmul.out", boxed<addcmul_kernel<F::out>>());
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
  m.impl("native_batch_norm", boxed<batch_norm_kernel>());  // eval, and training (batch statistics)
  m.impl("embedding", boxed<embedding_kernel>());
  m.impl("_embedding_bag_forward_only", boxed<embedding_bag_kernel>());
  m.impl("_embedding_bag", boxed<embedding_bag_kernel>());  // nn.EmbeddingBag's: its weight requires grad
  m.impl("cat", boxed<cat_kernel<F::functional>>());
  m.impl("cat.out", boxed<cat_kernel<F::out>>());

  // ---- CNN windows (ops_conv.cpp): nn.Conv{1,2,3}d, ConvTranspose{1,2,3}d and F.conv*
  // reach convolution (registered here, it overrides torch's composite, which would call
  // _convolution and then convolution_overrideable). max_pool1d/2d (composites) call
  // max_pool2d_with_indices off the CPU ----
  m.impl("convolution", boxed<convolution_kernel>());
  m.impl("convolution_overrideable", boxed<convolution_kernel>());
  m.impl("max_pool2d_with_indices", boxed<max_pool2d_kernel<F::functional>>());
  m.impl("max_pool2d_with_indices.out", boxed<max_pool2d_kernel<F::out>>());

  // ---- pooling and interpolation (ops_pool.cpp); the 1-d forms and adaptive_avg_pool*
  // are composites (adaptive to 1x1 is mean) ----
  m.impl("avg_pool2d", boxed<avg_pool_kernel<2, F::functional>>());
  m.impl("avg_pool2d.out", boxed<avg_pool_kernel<2, F::out>>());
  m.impl("avg_pool3d", boxed<avg_pool_kernel<3, F::functional>>());
  m.impl("avg_pool3d.out", boxed<avg_pool_kernel<3, F::out>>());
  m.impl("_adaptive_avg_pool2d", boxed<adaptive_avg_pool_kernel<2>>());
  m.impl("_adaptive_avg_pool3d", boxed<adaptive_avg_pool_kernel<3>>());
  m.impl("adaptive_max_pool2d", boxed<adaptive_max_pool_kernel<2, F::functional>>());
  m.impl("adaptive_max_pool2d.out", boxed<adaptive_max_pool_kernel<2, F::out>>());
  m.impl("adaptive_max_pool3d", boxed<adaptive_max_pool_kernel<3, F::functional>>());
  m.impl("adaptive_max_pool3d.out", boxed<adaptive_max_pool_kernel<3, F::out>>());
  m.impl("max_pool3d_with_indices", boxed<max_pool3d_kernel<F::functional>>());
  m.impl("max_pool3d_with_indices.out", boxed<max_pool3d_kernel<F::out>>());
#define OPSCOPE_UPSAMPLE(name, I, D)                                              \
  m.impl(name, boxed<upsample_kernel<Interp::I, D, F::functional>>());            \
  m.impl(name ".vec", boxed<upsample_kernel<Interp::I, D, F::functional>>());     \
  m.impl(name ".out", boxed<upsample_kernel<Interp::I, D, F::out>>());
  OPSCOPE_UPSAMPLE("upsample_nearest1d", nearest, 1)
  OPSCOPE_UPSAMPLE("upsample_nearest2d", nearest, 2)
  OPSCOPE_UPSAMPLE("upsample_nearest3d", nearest, 3)
  OPSCOPE_UPSAMPLE("_upsample_nearest_exact1d", nearest_exact, 1)
  OPSCOPE_UPSAMPLE("_upsample_nearest_exact2d", nearest_exact, 2)
  OPSCOPE_UPSAMPLE("_upsample_nearest_exact3d", nearest_exact, 3)
  OPSCOPE_UPSAMPLE("upsample_linear1d", linear, 1)
  OPSCOPE_UPSAMPLE("upsample_bilinear2d", linear, 2)
  OPSCOPE_UPSAMPLE("upsample_trilinear3d", linear, 3)
  OPSCOPE_UPSAMPLE("upsample_bicubic2d", cubic, 2)
#undef OPSCOPE_UPSAMPLE

  m.impl("grid_sampler_2d", boxed<grid_sampler_2d_kernel>());

  // ---- F.pad's reflect and replicate modes (ops_pad.cpp) ----
#define OPSCOPE_PAD(name, mode, D)                                          \
  m.impl(name, boxed<pad_kernel<PadMode::mode, D, F::functional>>()); \
  m.impl(name ".out", boxed<pad_kernel<PadMode::mode, D, F::out>>());
  OPSCOPE_PAD("reflection_pad1d", reflect, 1)
  OPSCOPE_PAD("reflection_pad2d", reflect, 2)
  OPSCOPE_PAD("reflection_pad3d", reflect, 3)
  OPSCOPE_PAD("replication_pad1d", replicate, 1)
  OPSCOPE_PAD("replication_pad2d", replicate, 2)
  OPSCOPE_PAD("replication_pad3d", replicate, 3)
#undef OPSCOPE_PAD

  // ---- F.unfold and F.fold (ops_fold.cpp) ----
  m.impl("im2col", boxed<im2col_kernel<F::functional>>());
  m.impl("im2col.out", boxed<im2col_kernel<F::out>>());
  m.impl("col2im", boxed<col2im_kernel<F::functional>>());
  m.impl("col2im.out", boxed<col2im_kernel<F::out>>());

  // ---- indexing and sorting (ops_index.cpp); index_put (functional), argsort, masked_select
  // and the 1-d/flat forms are composites that reach these ----
  m.impl("index.Tensor", boxed<index_kernel<F::functional>>());
  m.impl("index.Tensor_out", boxed<index_kernel<F::out>>());
  m.impl("index_put_", boxed<index_put_kernel>());
  m.impl("_index_put_impl_", boxed<index_put_kernel>());
  m.impl("index_select", boxed<index_select_kernel<F::functional>>());
  m.impl("index_select.out", boxed<index_select_kernel<F::out>>());
  m.impl("index_add", boxed<index_add_kernel<F::functional>>());
  m.impl("index_add_", boxed<index_add_kernel<F::inplace>>());
  m.impl("index_add.out", boxed<index_add_kernel<F::out>>());
  m.impl("masked_select", boxed<masked_select_kernel<F::functional>>());
  m.impl("masked_select.out", boxed<masked_select_kernel<F::out>>());
  m.impl("masked_scatter_", boxed<masked_scatter_kernel>());
  m.impl("gather", boxed<gather_kernel<F::functional>>());
  m.impl("gather.out", boxed<gather_kernel<F::out>>());
  m.impl("scatter.src", boxed<scatter_kernel<false, F::functional>>());
  m.impl("scatter.value", boxed<scatter_kernel<false, F::functional>>());
  m.impl("scatter_.src", boxed<scatter_kernel<false, F::inplace>>());
  m.impl("scatter_.value", boxed<scatter_kernel<false, F::inplace>>());
  m.impl("scatter.src_out", boxed<scatter_kernel<false, F::out>>());
  m.impl("scatter.value_out", boxed<scatter_kernel<false, F::out>>());
  m.impl("scatter_add", boxed<scatter_kernel<true, F::functional>>());
  m.impl("scatter_add_", boxed<scatter_kernel<true, F::inplace>>());
  m.impl("scatter_add.out", boxed<scatter_kernel<true, F::out>>());
  m.impl("scatter_reduce.two", boxed<scatter_reduce_kernel<F::functional>>());
  m.impl("scatter_reduce_.two", boxed<scatter_reduce_kernel<F::inplace>>());
  m.impl("scatter_reduce.two_out", boxed<scatter_reduce_kernel<F::out>>());
  m.impl("bucketize.Tensor", boxed<bucketize_kernel<F::functional>>());
  m.impl("bucketize.Tensor_out", boxed<bucketize_kernel<F::out>>());
  m.impl("nonzero", boxed<nonzero_kernel<F::functional>>());
  m.impl("nonzero.out", boxed<nonzero_kernel<F::out>>());
  m.impl("roll", boxed<roll_kernel>());
  m.impl("flip", boxed<flip_kernel>());
  m.impl("triu", boxed<triangle_kernel<true, F::functional>>());
  m.impl("triu_", boxed<triangle_kernel<true, F::inplace>>());
  m.impl("triu.out", boxed<triangle_kernel<true, F::out>>());
  m.impl("tril", boxed<triangle_kernel<false, F::functional>>());
  m.impl("tril_", boxed<triangle_kernel<false, F::inplace>>());
  m.impl("tril.out", boxed<triangle_kernel<false, F::out>>());
  m.impl("topk", boxed<topk_kernel<F::functional>>());
  m.impl("topk.values", boxed<topk_kernel<F::out>>());
  m.impl("sort", boxed<sort_kernel<F::functional>>());
  m.impl("sort.stable", boxed<sort_kernel<F::functional>>());
  m.impl("sort.values", boxed<sort_kernel<F::out>>());
  m.impl("sort.values_stable", boxed<sort_kernel<F::out>>());
  m.impl("_unique2", boxed<unique2_kernel>());
  m.impl("max.dim", boxed<max_dim_kernel<true, F::functional>>());
  m.impl("max.dim_max", boxed<max_dim_kernel<true, F::out>>());
  m.impl("min.dim", boxed<max_dim_kernel<false, F::functional>>());
  m.impl("min.dim_min", boxed<max_dim_kernel<false, F::out>>());
  m.impl("max", boxed<max_all_kernel<true>>());
  m.impl("min", boxed<max_all_kernel<false>>());
  m.impl("cumsum", boxed<cumsum_kernel<F::functional>>());
  m.impl("cumsum_", boxed<cumsum_kernel<F::inplace>>());
  m.impl("cumsum.out", boxed<cumsum_kernel<F::out>>());
  m.impl("norm.ScalarOpt_dim", boxed<norm_kernel<F::functional>>());
  m.impl("norm.Scalar", boxed<norm_kernel<F::functional>>());
  m.impl("norm.out", boxed<norm_kernel<F::out>>());

  // ---- more nn (ops_nn_extra.cpp) and recurrent layers (ops_rnn.cpp); these override
  // torch's composites (native_group_norm's would run batch_norm in training mode) ----
  m.impl("baddbmm", boxed<baddbmm_kernel<F::functional>>());
  m.impl("baddbmm_", boxed<baddbmm_kernel<F::inplace>>());
  m.impl("baddbmm.out", boxed<baddbmm_kernel<F::out>>());
  m.impl("addbmm", boxed<addbmm_kernel<F::functional>>());
  m.impl("addbmm_", boxed<addbmm_kernel<F::inplace>>());
  m.impl("addbmm.out", boxed<addbmm_kernel<F::out>>());
  m.impl("addmv", boxed<addmv_kernel<F::functional>>());
  m.impl("addmv_", boxed<addmv_kernel<F::inplace>>());
  m.impl("addmv.out", boxed<addmv_kernel<F::out>>());
  m.impl("glu", boxed<glu_kernel<F::functional>>());
  m.impl("glu.out", boxed<glu_kernel<F::out>>());
  m.impl("_weight_norm_interface", boxed<weight_norm_kernel>());
  m.impl("native_group_norm", boxed<group_norm_kernel>());
  m.impl("_log_softmax", boxed<log_softmax_kernel<F::functional>>());
  m.impl("_log_softmax.out", boxed<log_softmax_kernel<F::out>>());
  m.impl("log_sigmoid_forward", boxed<log_sigmoid_forward_kernel<F::functional>>());
  m.impl("log_sigmoid_forward.output", boxed<log_sigmoid_forward_kernel<F::out>>());
  m.impl("lstm.input", boxed<rnn_kernel<Rnn::lstm>>());
  m.impl("gru.input", boxed<rnn_kernel<Rnn::gru>>());
  m.impl("rnn_tanh.input", boxed<rnn_kernel<Rnn::tanh>>());
  m.impl("rnn_relu.input", boxed<rnn_kernel<Rnn::relu>>());

  // ---- torch's CPU kernel, explicitly: its composite would call
  // convolution_backward_overrideable, which throws for a new backend ----
  m.impl("convolution_backward", boxed<cpu_fallback>());
}

// torchvision's detection ops (ops_detection.cpp): their schemas are torchvision's.
TORCH_LIBRARY_IMPL(torchvision, PrivateUse1, m) {
  m.impl("nms", boxed<nms_kernel>());
  m.impl("roi_align", boxed<roi_align_kernel>());
  m.impl("roi_pool", boxed<roi_pool_kernel>());
  m.impl("ps_roi_align", boxed<ps_roi_align_kernel>());
  m.impl("deform_conv2d", boxed<deform_conv2d_kernel>());
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) { m.fallback(boxed<cpu_fallback>()); }
// 1.13 registers the autograd fallthrough for the built-in backends only: without it, an op
// with no autograd kernel of its own (opscope::rms_norm) cannot reach PrivateUse1.
TORCH_LIBRARY_IMPL(_, AutogradPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

// opscope's own ops: torch.ops.opscope.rms_norm (Python: opscope.ops.rms_norm).
TORCH_LIBRARY(opscope, m) {
  m.def("rms_norm(Tensor x, Tensor weight, float eps=1e-6) -> Tensor");
  // A convolution with a residual added and its activation applied in the kernel's
  // epilogue (opscope.compile's rewrite of conv2d [+ add] [+ relu/relu6/hardswish/silu]):
  // act is one of those names, or "".
  m.def("conv2d_act(Tensor x, Tensor weight, Tensor? bias, int[2] stride, int[2] padding, int[2] dilation, "
        "int groups, str act, Tensor? residual=None) -> Tensor");
  m.def("_test_kernel(Tensor x, int gate, bool fail) -> Tensor");
}
TORCH_LIBRARY_IMPL(opscope, PrivateUse1, m) {
  m.impl("rms_norm", boxed<rms_norm_kernel>());
  m.impl("conv2d_act", boxed<conv2d_act_kernel>());
  m.impl("_test_kernel", boxed<test_kernel>());
}
TORCH_LIBRARY_IMPL(opscope, CPU, m) {
  m.impl("rms_norm", TORCH_FN(rms_norm_cpu));
  m.impl("conv2d_act", TORCH_FN(conv2d_act_cpu));
}

}  // namespace opscope::torch_bridge
