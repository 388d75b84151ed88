// The bridge's kernels for aten ops, as boxed functions (the dispatcher hands them the op
// and its argument stack). Each reads torch's arguments, converts the tensors at the edge
// (bridge.h), calls opscope's op inside the aten op's scope and writes the result back in
// the call's form: a new tensor, self (in-place) or out. An input opscope cannot compute
// (dtype, device mix, an option it lacks) goes to the CPU fallback instead.
#pragma once
#include <ATen/core/stack.h>

#include "opscope/core/error.h"
#include "opscope/torch/bridge.h"

namespace opscope::torch_bridge {

using Stack = torch::jit::Stack;
using BoxedKernel = void(const c10::OperatorHandle& op, Stack* stack);

// The three forms torch's composite rules reach: add, add_, add.out.
enum class Form : uint8_t { functional, inplace, out };

// Reading one call's arguments and writing its result.
class Call {
 public:
  Call(const c10::OperatorHandle& op, Stack* stack)
      : op_(op), stack_(stack), n_(op.schema().arguments().size()), base_(stack->size() - n_) {}
  const c10::IValue& arg(size_t i) const { return (*stack_)[base_ + i]; }
  const at::Tensor& tensor(size_t i) const { return arg(i).toTensor(); }
  c10::optional<at::Tensor> opt_tensor(size_t i) const { return arg(i).toOptional<at::Tensor>(); }
  double number(size_t i) const { return arg(i).toScalar().toDouble(); }
  const at::Tensor& out() const { return tensor(n_ - 1); }
  const char* name() const { return op_.schema().name().c_str(); }  // "aten::add": lives as long as the op
  // Replaces the arguments with the result.
  void ret(at::Tensor t) {
    torch::jit::drop(*stack_, n_);
    stack_->emplace_back(std::move(t));
  }
  template <class... T> void ret_tuple(T&&... ts) {
    torch::jit::drop(*stack_, n_);
    (stack_->emplace_back(std::forward<T>(ts)), ...);
  }
  // Hands the call to torch's CPU kernel (fallback.cpp) or, under fake tracing, to Meta.
  void fall_back() const;
  // opscope refused the call (`e`): out of memory is rethrown naming the aten op and the
  // allocator's state; anything else (a dtype, a shape) goes to torch's CPU kernel, which
  // decides and names any error.
  void refused(const opscope::Error& e) const;
  const c10::OperatorHandle& op() const { return op_; }
  Stack* stack() const { return stack_; }

 private:
  const c10::OperatorHandle& op_;
  Stack* stack_;
  size_t n_, base_;
};

// The result of an opscope op as the call's result: itself, or copied into self / out
// (out resized to the result's shape first, as torch's out= ops do).
at::Tensor deliver(Form f, const Tensor& result, const at::Tensor& dst, const char* op);
// The common shape of a one-input op: r = fn(x) for x = self on opscope, inside the aten
// op's scope, written in form F. An opscope::Error (a dtype or shape opscope refuses)
// hands the call to torch's CPU kernel, which decides (and names any error).
template <Form F, class Fn>
void run_unary(Call& c, Fn&& fn) {
  const at::Tensor& self = c.tensor(0);
  try {
    Tensor x = from_torch(self, c.name());
    AtenScope scope(c.name(), {&x});
    Tensor r = fn(x);
    c.ret(deliver(F, r, F == Form::out ? c.out() : self, c.name()));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

// One operand of a binary op: a device tensor, or a number (a Scalar argument or a 0-dim
// CPU tensor, which torch lets join device ops).
struct Operand {
  at::Tensor t;
  double value = 0;
  bool is_number = false;
};
Operand operand(const c10::IValue& v);
// The value of a 0-dim CPU tensor, read without a dispatcher call.
double cpu_scalar_value(const at::Tensor& t);
// torch's result dtype of a binary op on two arguments (tensors or scalars), without a
// dispatcher call (which a profile would record as an aten::result_type op).
at::ScalarType result_type(const c10::IValue& a, const c10::IValue& b);
// t itself, or a cast of it to d.
inline Tensor as_dtype(const Tensor& t, DType d) { return t.dtype() == d ? t : t.to(d); }
// A list argument of ints (an empty list for None).
std::vector<int64_t> int_list(const c10::IValue& v);

// Writes src (any dtype) into dst (any strides): one copy launch.
void copy_into(const Tensor& dst, const Tensor& src);
// The boxed fallback: torch's CPU kernel on the device's memory (fallback.cpp).
void cpu_fallback(const c10::OperatorHandle& op, Stack* stack);

// ---- the kernels (ops_math.cpp, ops_nn.cpp, ops_conv.cpp); registered by native_functions.cpp ----
enum class Binary : uint8_t { add, sub, mul, div, pow, maximum, minimum, remainder };
enum class Unary : uint8_t {
  neg, abs, exp, log, sqrt, rsqrt, sin, cos, tanh, sigmoid, silu, gelu, relu, hardswish, hardsigmoid,
  floor, ceil, round, trunc, sign, log2, reciprocal, erf, expm1, log1p, tan, atan, asin, acos, sinh, cosh,
  erfinv
};
enum class Reduce : uint8_t { sum, mean, amax, amin };

template <Binary B, Form F> void binary_kernel(const c10::OperatorHandle& op, Stack* s);
// div with rounding_mode "trunc" or "floor" (the *_mode overloads), and floor_divide
// (kFloorDivide: always "floor"), integer dtypes included.
template <Form F, bool kFloorDivide> void div_mode_kernel(const c10::OperatorHandle& op, Stack* s);
// The unboxed fast path of add/sub/mul/div.Tensor (the tiny-op case: two device tensors of
// one floating dtype, alpha 1); anything else goes through binary_kernel.
template <Binary B, class Op, class... Alpha>
at::Tensor binary_fast(const at::Tensor& a, const at::Tensor& b, const Alpha&... alpha);
template <Unary U, Form F> void unary_kernel(const c10::OperatorHandle& op, Stack* s);
// leaky_relu(self, negative_slope), elu(self, alpha, scale, input_scale) (selu and celu
// reach it), softplus(self, beta, threshold), mish, log10, exp2, atanh, frac: floating self
// only (torch refuses integers for the activations and frac; log10/exp2/atanh of integers go
// to torch's kernel).
enum class ParamUnary : uint8_t { leaky_relu, elu, softplus, mish, log10, exp2, atanh, frac };
template <ParamUnary P, Form F> void param_unary_kernel(const c10::OperatorHandle& op, Stack* s);
template <Reduce R, Form F> void reduce_kernel(const c10::OperatorHandle& op, Stack* s);
template <Form F> void argmax_kernel(const c10::OperatorHandle& op, Stack* s);
template <Form F> void var_kernel(const c10::OperatorHandle& op, Stack* s);

template <Form F> void mm_kernel(const c10::OperatorHandle& op, Stack* s);   // mm and bmm
template <Form F> void addmm_kernel(const c10::OperatorHandle& op, Stack* s);
template <Form F> void softmax_kernel(const c10::OperatorHandle& op, Stack* s);
template <Form F> void cat_kernel(const c10::OperatorHandle& op, Stack* s);
// convolution and convolution_overrideable (2-d; the rest falls back as convolution).
void convolution_kernel(const c10::OperatorHandle& op, Stack* s);
// opscope::conv2d_act: conv2d with relu/relu6/hardswish/silu in its epilogue.
void conv2d_act_kernel(const c10::OperatorHandle& op, Stack* s);
template <Form F> void max_pool2d_kernel(const c10::OperatorHandle& op, Stack* s);
void layer_norm_kernel(const c10::OperatorHandle& op, Stack* s);
void batch_norm_kernel(const c10::OperatorHandle& op, Stack* s);
void embedding_kernel(const c10::OperatorHandle& op, Stack* s);
void embedding_bag_kernel(const c10::OperatorHandle& op, Stack* s);  // ops_embedding_bag.cpp
void clone_kernel(const c10::OperatorHandle& op, Stack* s);
void arange_kernel(const c10::OperatorHandle& op, Stack* s);
void linspace_kernel(const c10::OperatorHandle& op, Stack* s);  // linspace.out
void rms_norm_kernel(const c10::OperatorHandle& op, Stack* s);
void test_kernel(const c10::OperatorHandle& op, Stack* s);  // opscope::_test_kernel (waits at a gate)

// ---- comparisons, logic, selection (ops_compare.cpp) ----
enum class Compare : uint8_t { eq, ne, lt, le, gt, ge };
enum class Logical : uint8_t { and_, or_, xor_ };
enum class Clamp : uint8_t { both, min, max, hardtanh };  // clamp, clamp_min, clamp_max, hardtanh
template <Compare C, Form F> void compare_kernel(const c10::OperatorHandle& op, Stack* s);
template <Logical L, Form F> void logical_kernel(const c10::OperatorHandle& op, Stack* s);  // and bitwise on bool
template <Form F> void logical_not_kernel(const c10::OperatorHandle& op, Stack* s);
template <Form F> void where_kernel(const c10::OperatorHandle& op, Stack* s);
template <Form F> void masked_fill_kernel(const c10::OperatorHandle& op, Stack* s);
template <Clamp K, Form F> void clamp_kernel(const c10::OperatorHandle& op, Stack* s);
template <Clamp K, Form F> void clamp_tensor_kernel(const c10::OperatorHandle& op, Stack* s);  // tensor bounds
template <Form F> void addcmul_kernel(const c10::OperatorHandle& op, Stack* s);

// ---- pooling and interpolation (ops_pool.cpp) ----
enum class Interp : uint8_t { nearest, nearest_exact, linear, cubic };
template <int D, Form F> void avg_pool_kernel(const c10::OperatorHandle& op, Stack* s);
template <int D> void adaptive_avg_pool_kernel(const c10::OperatorHandle& op, Stack* s);
template <int D, Form F> void adaptive_max_pool_kernel(const c10::OperatorHandle& op, Stack* s);
template <Form F> void max_pool3d_kernel(const c10::OperatorHandle& op, Stack* s);
template <Interp I, int D, Form F> void upsample_kernel(const c10::OperatorHandle& op, Stack* s);
void grid_sampler_2d_kernel(const c10::OperatorHandle& op, Stack* s);

// ---- F.pad's reflect and replicate modes (ops_pad.cpp) ----
enum class PadMode : uint8_t { reflect, replicate };
template <PadMode M, int D, Form F> void pad_kernel(const c10::OperatorHandle& op, Stack* s);

// ---- F.unfold and F.fold (ops_fold.cpp) ----
template <Form F> void im2col_kernel(const c10::OperatorHandle& op, Stack* s);
template <Form F> void col2im_kernel(const c10::OperatorHandle& op, Stack* s);

// ---- indexing, sorting (ops_index.cpp) ----
template <Form F> void index_kernel(const c10::OperatorHandle& op, Stack* s);
void index_put_kernel(const c10::OperatorHandle& op, Stack* s);  // index_put_, _index_put_impl_
template <Form F> void index_select_kernel(const c10::OperatorHandle& op, Stack* s);
template <Form F> void index_add_kernel(const c10::OperatorHandle& op, Stack* s);
template <Form F> void masked_select_kernel(const c10::OperatorHandle& op, Stack* s);
void masked_scatter_kernel(const c10::OperatorHandle& op, Stack* s);
template <Form F> void gather_kernel(const c10::OperatorHandle& op, Stack* s);
template <bool kAdd, Form F> void scatter_kernel(const c10::OperatorHandle& op, Stack* s);
template <Form F> void scatter_reduce_kernel(const c10::OperatorHandle& op, Stack* s);
template <Form F> void bucketize_kernel(const c10::OperatorHandle& op, Stack* s);
template <Form F> void nonzero_kernel(const c10::OperatorHandle& op, Stack* s);
void roll_kernel(const c10::OperatorHandle& op, Stack* s);
void flip_kernel(const c10::OperatorHandle& op, Stack* s);
template <bool kUpper, Form F> void triangle_kernel(const c10::OperatorHandle& op, Stack* s);  // triu, tril
template <Form F> void topk_kernel(const c10::OperatorHandle& op, Stack* s);
template <Form F> void sort_kernel(const c10::OperatorHandle& op, Stack* s);
void unique2_kernel(const c10::OperatorHandle& op, Stack* s);
template <bool kMax, Form F> void max_dim_kernel(const c10::OperatorHandle& op, Stack* s);  // max.dim, min.dim
template <bool kMax> void max_all_kernel(const c10::OperatorHandle& op, Stack* s);         // max(), min()
template <Form F> void cumsum_kernel(const c10::OperatorHandle& op, Stack* s);
template <Form F> void norm_kernel(const c10::OperatorHandle& op, Stack* s);  // norm.ScalarOpt_dim and its out

// ---- detection (ops_detection.cpp): torchvision's ops ----
void nms_kernel(const c10::OperatorHandle& op, Stack* s);
void roi_align_kernel(const c10::OperatorHandle& op, Stack* s);
void roi_pool_kernel(const c10::OperatorHandle& op, Stack* s);
void deform_conv2d_kernel(const c10::OperatorHandle& op, Stack* s);
void ps_roi_align_kernel(const c10::OperatorHandle& op, Stack* s);

// ---- more nn (ops_nn_extra.cpp) ----
template <Form F> void baddbmm_kernel(const c10::OperatorHandle& op, Stack* s);
template <Form F> void addbmm_kernel(const c10::OperatorHandle& op, Stack* s);
template <Form F> void addmv_kernel(const c10::OperatorHandle& op, Stack* s);
template <Form F> void glu_kernel(const c10::OperatorHandle& op, Stack* s);
void weight_norm_kernel(const c10::OperatorHandle& op, Stack* s);  // _weight_norm_interface
void group_norm_kernel(const c10::OperatorHandle& op, Stack* s);   // native_group_norm
template <Form F> void log_softmax_kernel(const c10::OperatorHandle& op, Stack* s);
template <Form F> void log_sigmoid_forward_kernel(const c10::OperatorHandle& op, Stack* s);  // F.logsigmoid

// ---- recurrent layers (ops_rnn.cpp): lstm/gru/rnn_tanh/rnn_relu.input ----
enum class Rnn : uint8_t { lstm, gru, tanh, relu };
template <Rnn R> void rnn_kernel(const c10::OperatorHandle& op, Stack* s);
void test_kernel(const c10::OperatorHandle& op, Stack* s);  // opscope::_test_kernel

}  // namespace opscope::torch_bridge
