// More nn ops as compositions of opscope's ops: baddbmm/addbmm (attention with a mask),
// glu (Conformer), _weight_norm_interface (wav2vec2's positional convolution),
// native_group_norm (wav2vec2's feature extractor), _log_softmax, log_sigmoid_forward.
#include <c10/core/GradMode.h>

#include "opscope/core/error.h"
#include "opscope/ops/ops.h"
#include "opscope/torch/kernels.h"

namespace opscope::torch_bridge {

namespace {

// beta * self + alpha * product, skipping the terms torch skips (beta = 0 ignores self,
// NaN included).
Tensor scaled_sum(const Tensor& self, const Tensor& product, double beta, double alpha) {
  Tensor r = alpha == 1.0 ? product : mul(product, alpha);
  if (beta == 0.0) return r;
  return add(r, beta == 1.0 ? self : mul(self, beta));
}

}  // namespace

// baddbmm(self, batch1, batch2, beta, alpha) = beta self + alpha (batch1 @ batch2), and its
// in-place and out forms.
template <Form F>
void baddbmm_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor &self = c.tensor(0), &a = c.tensor(1), &b = c.tensor(2);
  if (on_device(a) != on_device(b)) two_devices(c.name(), a, b);
  if (!has_kernels({&self, &a, &b}) || a.scalar_type() != b.scalar_type() || self.scalar_type() != a.scalar_type() ||
      a.dim() != 3 || b.dim() != 3)
    return c.fall_back();
  try {
    Tensor x = from_torch(self, c.name()), p = from_torch(a, c.name()), q = from_torch(b, c.name());
    AtenScope scope(c.name(), {&x, &p, &q});
    Tensor r = scaled_sum(x, matmul(p, q), c.number(3), c.number(4));
    c.ret(deliver(F, r, F == Form::out ? c.out() : self, c.name()));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

// addmv(self, mat, vec, beta, alpha) = beta self + alpha (mat @ vec), and its forms.
template <Form F>
void addmv_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor &self = c.tensor(0), &a = c.tensor(1), &b = c.tensor(2);
  if (on_device(a) != on_device(b)) two_devices(c.name(), a, b);
  if (!has_kernels({&self, &a, &b}) || a.scalar_type() != b.scalar_type() || self.scalar_type() != a.scalar_type() ||
      a.dim() != 2 || b.dim() != 1 || a.size(1) != b.size(0) || self.dim() > 1 ||
      (self.dim() == 1 && self.size(0) != a.size(0) && self.size(0) != 1))
    return c.fall_back();  // torch's error
  try {
    Tensor x = from_torch(self, c.name()), p = from_torch(a, c.name()), q = from_torch(b, c.name());
    AtenScope scope(c.name(), {&x, &p, &q});
    Tensor product = q.numel() ? matmul(p, q) : zeros({p.shape()[0]}, p.dtype(), &p.device());
    Tensor r = scaled_sum(x, product, c.number(3), c.number(4));  // self broadcasts to (N)
    c.ret(deliver(F, r, F == Form::out ? c.out() : self, c.name()));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

// addbmm(self, batch1, batch2, beta, alpha) = beta self + alpha sum_b (batch1[b] @ batch2[b]).
template <Form F>
void addbmm_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor &self = c.tensor(0), &a = c.tensor(1), &b = c.tensor(2);
  if (on_device(a) != on_device(b)) two_devices(c.name(), a, b);
  if (!has_kernels({&self, &a, &b}) || a.scalar_type() != b.scalar_type() || self.scalar_type() != a.scalar_type() ||
      a.dim() != 3 || b.dim() != 3)
    return c.fall_back();
  try {
    Tensor x = from_torch(self, c.name()), p = from_torch(a, c.name()), q = from_torch(b, c.name());
    AtenScope scope(c.name(), {&x, &p, &q});
    // sum_b A_b B_b = [A_0 .. A_{n-1}] (M, n K) @ [B_0; ..; B_{n-1}] (n K, N): one gemm.
    int64_t n = p.shape()[0], M = p.shape()[1], K = p.shape()[2], N = q.shape()[2];
    Tensor lhs = p.permute({1, 0, 2}).reshape({M, n * K}), rhs = q.reshape({n * K, N});
    Tensor r = scaled_sum(x, n * K > 0 ? matmul(lhs, rhs) : zeros({M, N}, x.dtype(), &x.device()), c.number(3), c.number(4));
    c.ret(deliver(F, r, F == Form::out ? c.out() : self, c.name()));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

// glu(self, dim) = a * sigmoid(b) for the halves a, b of self along dim, and glu.out.
template <Form F>
void glu_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  if (!has_kernels({&self}) || self.dim() == 0) return c.fall_back();
  int64_t dim = c.arg(1).toInt();
  int64_t d = dim < 0 ? dim + self.dim() : dim;
  if (d < 0 || d >= self.dim() || self.size(d) % 2) return c.fall_back();  // torch's error
  run_unary<F>(c, [&](const Tensor& x) {
    int64_t h = x.shape()[int(d)] / 2;
    return mul(x.slice(d, 0, h), sigmoid(x.slice(d, h, 2 * h)));
  });
}

// _weight_norm_interface(v, g, dim) -> (v * g / ||v||, ||v||), the norm over every dim but
// `dim` (all of them for dim -1), of g's shape.
void weight_norm_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor &v = c.tensor(0), &g = c.tensor(1);
  if (on_device(v) != on_device(g)) two_devices(c.name(), v, g);
  if (!has_kernels({&v, &g}) || v.scalar_type() != g.scalar_type()) return c.fall_back();
  int64_t dim = c.arg(2).toInt();
  try {
    Tensor x = from_torch(v, c.name()), gt = from_torch(g, c.name());
    AtenScope scope(c.name(), {&x, &gt});
    std::vector<int64_t> axes;
    for (int64_t a = 0; a < x.ndim(); ++a)
      if (dim == -1 || a != dim) axes.push_back(a);
    Tensor n = norm(x, 2.0, axes, true);  // 1 along the normed dims: broadcasts against v
    if (gt.numel() != n.numel()) return c.fall_back();  // torch's error
    Tensor w = mul(x, div(gt.reshape(n.shape()), n));
    c.ret_tuple(to_torch(w), to_torch(n.reshape(gt.shape())));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

// native_group_norm(input, weight?, bias?, N, C, HxW, group, eps) -> (out, mean, rstd):
// a layer norm over each (n, group)'s C / group x HxW elements, then the per-channel
// affine. mean and rstd (N, group) only when autograd may need them.
void group_norm_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& input = c.tensor(0);
  c10::optional<at::Tensor> w = c.opt_tensor(1), b = c.opt_tensor(2);
  at::Tensor wt = w ? *w : at::Tensor(), bt = b ? *b : at::Tensor();
  int64_t N = c.arg(3).toInt(), C = c.arg(4).toInt(), HxW = c.arg(5).toInt(), G = c.arg(6).toInt();
  if (!has_kernels({&input, &wt, &bt}) || G < 1 || C % G || input.numel() != N * C * HxW || input.numel() == 0)
    return c.fall_back();
  try {
    Tensor x = from_torch(input, c.name());
    AtenScope scope(c.name(), {&x});
    int64_t inner = C / G * HxW;
    Tensor ones_row = ones({inner}, x.dtype(), &x.device()), zero_row = zeros({inner}, x.dtype(), &x.device());
    Tensor xf = x.reshape({N * G, inner});
    Tensor y = layer_norm(xf, ones_row, zero_row, c.arg(7).toDouble()).reshape({N, C, HxW});
    if (wt.defined()) y = mul(y, from_torch(wt, c.name()).reshape({C, 1}));
    if (bt.defined()) y = add(y, from_torch(bt, c.name()).reshape({C, 1}));
    at::Tensor mean_t, rstd_t;
    if (c10::GradMode::is_enabled() && (input.requires_grad() || wt.requires_grad() || bt.requires_grad())) {
      Tensor x32 = as_dtype(xf, DType::f32);
      mean_t = to_torch(mean(x32, {-1}).reshape({N, G}));
      rstd_t = to_torch(rsqrt(add(var(x32, {-1}, false, 0), c.arg(7).toDouble())).reshape({N, G}));
    } else {
      mean_t = at::empty({N, G}, input.options());
      rstd_t = at::empty({N, G}, input.options());
    }
    c.ret_tuple(to_torch(y.reshape(x.shape())), std::move(mean_t), std::move(rstd_t));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

// log_sigmoid_forward(self) -> (output, buffer): F.logsigmoid's op. buffer is e^-|x|, which
// torch's CPU backward reads: computed only when autograd may need it, else empty (as
// torch's CUDA kernel leaves it). The out form (log_sigmoid.out reaches it) fills both.
template <Form F>
void log_sigmoid_forward_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  if (!has_kernels({&self}, true)) return c.fall_back();
  if constexpr (F == Form::out) {
    if (c.tensor(1).scalar_type() != self.scalar_type() || c.tensor(2).scalar_type() != self.scalar_type())
      return c.fall_back();  // torch's error
  }
  try {
    Tensor x = from_torch(self, c.name());
    AtenScope scope(c.name(), {&x});
    Tensor y = log_sigmoid(x);
    if constexpr (F == Form::out) {
      c.ret_tuple(deliver(F, y, c.tensor(1), c.name()), deliver(F, exp(neg(abs(x))), c.tensor(2), c.name()));
    } else {
      at::Tensor buffer = c10::GradMode::is_enabled() && self.requires_grad() ? to_torch(exp(neg(abs(x))))
                                                                              : at::empty({0}, self.options());
      c.ret_tuple(to_torch(y), std::move(buffer));
    }
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

// _log_softmax(self, dim, half_to_float) = (x - max) - log(sum(exp(x - max))), and its out form.
template <Form F>
void log_softmax_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  if (!has_kernels({&self}) || c.arg(2).toBool()) return c.fall_back();
  run_unary<F>(c, [&](const Tensor& x) {
    if (x.numel() == 0) return x.clone();
    int64_t d = c.arg(1).toInt();
    Tensor shifted = sub(x, max(x, {d}, true));
    return sub(shifted, log(sum(exp(shifted), {d}, true)));
  });
}

template void baddbmm_kernel<Form::functional>(const c10::OperatorHandle&, Stack*);
template void baddbmm_kernel<Form::inplace>(const c10::OperatorHandle&, Stack*);
template void baddbmm_kernel<Form::out>(const c10::OperatorHandle&, Stack*);
template void addmv_kernel<Form::functional>(const c10::OperatorHandle&, Stack*);
template void addmv_kernel<Form::inplace>(const c10::OperatorHandle&, Stack*);
template void addmv_kernel<Form::out>(const c10::OperatorHandle&, Stack*);
template void addbmm_kernel<Form::functional>(const c10::OperatorHandle&, Stack*);
template void addbmm_kernel<Form::inplace>(const c10::OperatorHandle&, Stack*);
template void addbmm_kernel<Form::out>(const c10::OperatorHandle&, Stack*);
template void glu_kernel<Form::functional>(const c10::OperatorHandle&, Stack*);
template void glu_kernel<Form::out>(const c10::OperatorHandle&, Stack*);
template void log_softmax_kernel<Form::functional>(const c10::OperatorHandle&, Stack*);
template void log_softmax_kernel<Form::out>(const c10::OperatorHandle&, Stack*);
template void log_sigmoid_forward_kernel<Form::functional>(const c10::OperatorHandle&, Stack*);
template void log_sigmoid_forward_kernel<Form::out>(const c10::OperatorHandle&, Stack*);

}  // namespace opscope::torch_bridge
