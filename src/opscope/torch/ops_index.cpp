// Indexing and sorting: aten's index.Tensor, index_put_, index_select, gather, scatter,
// scatter_add, nonzero, roll, flip, triu, tril, topk, sort, unique, max/min (with dim and without), cumsum and
// norm, on opscope's kernels (ops/indexing.h). Index tensors on the CPU (torch allows
// them for device tensors) are copied to the device first.
#include "opscope/core/error.h"
#include "opscope/ops/indexing.h"
#include "opscope/ops/ops.h"
#include "opscope/torch/kernels.h"

namespace opscope::torch_bridge {

namespace {

// An index tensor as an opscope tensor on the device; nullopt when opscope cannot take it.
std::optional<Tensor> index_tensor(const at::Tensor& t, const char* op) {
  at::ScalarType st = t.scalar_type();
  if (st != at::kLong && st != at::kInt && st != at::kBool) return std::nullopt;
  if (t.dim() > kMaxDims) return std::nullopt;
  if (on_device(t)) return from_torch(t, op);
  if (t.device().is_cpu()) return from_torch(to_device_copy(t), op);
  return std::nullopt;
}

// A Tensor?[] argument; nullopt when one entry cannot be taken.
std::optional<std::vector<Tensor>> index_list(const c10::IValue& v, const char* op) {
  std::vector<Tensor> r;
  for (const c10::IValue& e : v.toListRef()) {
    if (e.isNone()) {
      r.push_back(Tensor());
      continue;
    }
    const at::Tensor& t = e.toTensor();
    if (!t.defined()) {
      r.push_back(Tensor());
      continue;
    }
    auto it = index_tensor(t, op);
    if (!it) return std::nullopt;
    r.push_back(*it);
  }
  return r;
}

template <class Fn>
void run_pair(Call& c, Form f, size_t out_values, Fn&& fn) {
  const at::Tensor& self = c.tensor(0);
  try {
    Tensor x = from_torch(self, c.name());
    AtenScope scope(c.name(), {&x});
    auto [v, i] = fn(x);
    if (f == Form::out)
      c.ret_tuple(deliver(f, v, c.tensor(out_values), c.name()), deliver(f, i, c.tensor(out_values + 1), c.name()));
    else
      c.ret_tuple(to_torch(v), to_torch(i));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

}  // namespace

// index.Tensor(self, Tensor?[] indices) and index.Tensor_out.
template <Form F>
void index_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  if (!has_kernels({&self}, false)) return c.fall_back();
  try {
    auto idx = index_list(c.arg(1), c.name());
    if (!idx) return c.fall_back();
    Tensor x = from_torch(self, c.name());
    AtenScope scope(c.name(), {&x});
    c.ret(deliver(F, index(x, *idx), F == Form::out ? c.out() : self, c.name()));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

// index_put_(self, Tensor?[] indices, values, accumulate) and _index_put_impl_(..., unsafe).
void index_put_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor &self = c.tensor(0), &values = c.tensor(2);
  if (!has_kernels({&self}, false) || !(on_device(values) || is_cpu_scalar(values))) return c.fall_back();
  if (on_device(values) && !has_kernels({&values}, false)) return c.fall_back();
  try {
    auto idx = index_list(c.arg(1), c.name());
    if (!idx) return c.fall_back();
    Tensor x = from_torch(self, c.name());
    AtenScope scope(c.name(), {&x});
    Tensor v = is_cpu_scalar(values) ? full(Shape{}, cpu_scalar_value(values), x.dtype(), &x.device())
                                     : as_dtype(from_torch(values, c.name()), x.dtype());
    index_put_(x, *idx, v, c.arg(3).toBool());
    c.ret(self);
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

// index_select(self, dim, index) and its out form.
template <Form F>
void index_select_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor &self = c.tensor(0), &index = c.tensor(2);
  if (!has_kernels({&self}, false) || index.scalar_type() == at::kBool) return c.fall_back();
  try {
    auto i = index_tensor(index, c.name());
    if (!i) return c.fall_back();
    Tensor x = from_torch(self, c.name());
    AtenScope scope(c.name(), {&x});
    c.ret(deliver(F, index_select(x, c.arg(1).toInt(), *i), F == Form::out ? c.out() : self, c.name()));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

// gather(self, dim, index, sparse_grad) and its out form.
template <Form F>
void gather_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor &self = c.tensor(0), &index = c.tensor(2);
  if (!has_kernels({&self}, false) || index.scalar_type() != at::kLong || !on_device(index)) return c.fall_back();
  try {
    Tensor x = from_torch(self, c.name()), i = from_torch(index, c.name());
    AtenScope scope(c.name(), {&x, &i});
    c.ret(deliver(F, gather(x, c.arg(1).toInt(), i), F == Form::out ? c.out() : self, c.name()));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

// scatter.src/.value(self, dim, index, src | value), scatter_add(self, dim, index, src):
// functional, in-place and out forms. The .reduce overloads fall back.
template <bool kAdd, Form F>
void scatter_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor &self = c.tensor(0), &index = c.tensor(2);
  if (!has_kernels({&self}, false) || index.scalar_type() != at::kLong || !on_device(index)) return c.fall_back();
  const c10::IValue& src = c.arg(3);
  if (src.isTensor() && !has_kernels({&src.toTensor()}, false)) return c.fall_back();
  try {
    Tensor x = from_torch(self, c.name()), i = from_torch(index, c.name());
    AtenScope scope(c.name(), {&x, &i});
    Tensor v = src.isTensor() ? as_dtype(from_torch(src.toTensor(), c.name()), x.dtype())
                              : full(Shape{}, src.toScalar().toDouble(), x.dtype(), &x.device());
    c.ret(deliver(F, scatter(x, c.arg(1).toInt(), i, v, kAdd), F == Form::out ? c.out() : self, c.name()));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

// scatter_reduce(self, dim, index, src, reduce, include_self): sum, prod, mean, amax, amin
// (PyG's message aggregation). Integer means and bools take torch's kernel; a bad reduce
// string gets torch's error.
template <Form F>
void scatter_reduce_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor &self = c.tensor(0), &index = c.tensor(2), &src = c.tensor(3);
  const std::string& reduce = c.arg(4).toStringRef();
  const bool known = reduce == "sum" || reduce == "prod" || reduce == "mean" || reduce == "amax" || reduce == "amin";
  if (!known || !has_kernels({&self, &src}, false) || self.scalar_type() == at::kBool ||
      src.scalar_type() != self.scalar_type() || index.scalar_type() != at::kLong || !on_device(index) ||
      (reduce == "mean" && !at::isFloatingType(self.scalar_type())))
    return c.fall_back();
  try {
    Tensor x = from_torch(self, c.name()), i = from_torch(index, c.name()), v = from_torch(src, c.name());
    AtenScope scope(c.name(), {&x, &i, &v});
    Tensor r = scatter_reduce(x, c.arg(1).toInt(), i, v, reduce, c.arg(5).toBool());
    c.ret(deliver(F, r, F == Form::out ? c.out() : self, c.name()));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

// bucketize(self, boundaries, out_int32, right): boundaries 1-d of self's dtype; other
// dtypes (torch promotes them) take torch's kernel.
template <Form F>
void bucketize_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor &self = c.tensor(0), &boundaries = c.tensor(1);
  if (!has_kernels({&self, &boundaries}, false) || self.scalar_type() == at::kBool || boundaries.dim() != 1 ||
      boundaries.scalar_type() != self.scalar_type())
    return c.fall_back();
  try {
    Tensor x = from_torch(self, c.name()), b = from_torch(boundaries, c.name());
    AtenScope scope(c.name(), {&x, &b});
    Tensor r = bucketize(x, b, c.arg(3).toBool(), c.arg(2).toBool());
    c.ret(deliver(F, r, F == Form::out ? c.out() : self, c.name()));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

// nonzero(self) and nonzero.out.
template <Form F>
void nonzero_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  if (!has_kernels({&self}, false)) return c.fall_back();
  run_unary<F>(c, [](const Tensor& x) { return nonzero(x); });
}

// roll(self, shifts, dims)
void roll_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  if (!has_kernels({&self}, false)) return c.fall_back();
  run_unary<Form::functional>(c, [&](const Tensor& x) { return roll(x, int_list(c.arg(1)), int_list(c.arg(2))); });
}

// flip(self, dims)
void flip_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  if (!has_kernels({&self}, false)) return c.fall_back();
  run_unary<Form::functional>(c, [&](const Tensor& x) { return flip(x, int_list(c.arg(1))); });
}

// triu(self, diagonal), triu_ and triu.out (..., *, out); tril the same.
template <bool kUpper, Form F>
void triangle_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  if (!has_kernels({&self}, false)) return c.fall_back();
  const int64_t diagonal = c.arg(1).toInt();
  run_unary<F>(c, [&](const Tensor& x) { return kUpper ? triu(x, diagonal) : tril(x, diagonal); });
}

// topk(self, k, dim, largest, sorted) -> (values, indices) and topk.values (..., *, values, indices).
template <Form F>
void topk_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  if (!has_kernels({&self}, false) || self.scalar_type() == at::kBool) return c.fall_back();
  run_pair(c, F, 5, [&](const Tensor& x) { return topk(x, c.arg(1).toInt(), c.arg(2).toInt(), c.arg(3).toBool()); });
}

// sort(self, dim, descending), sort.stable(self, *, stable?, dim, descending) and
// sort.values_stable (..., *, values, indices): always stable.
template <Form F>
void sort_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  if (!has_kernels({&self}, false)) return c.fall_back();
  bool with_stable = op.schema().overload_name().find("stable") != std::string::npos;
  size_t dim_arg = with_stable ? 2 : 1;
  run_pair(c, F, dim_arg + 2,
           [&](const Tensor& x) { return sort(x, c.arg(dim_arg).toInt(), c.arg(dim_arg + 1).toBool()); });
}

// _unique2(self, sorted, return_inverse, return_counts) -> (values, inverse, counts): what
// torch.unique calls. Always sorted (torch's CPU kernel leaves the order of sorted=False
// unspecified); an output not asked for is empty, as torch's.
void unique2_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  if (!has_kernels({&self}, false) || self.scalar_type() == at::kBool) return c.fall_back();
  try {
    Tensor x = from_torch(self, c.name());
    AtenScope scope(c.name(), {&x});
    Unique u = unique(x);
    Device* dev = &x.device();
    Tensor inverse = c.arg(2).toBool() ? u.inverse : empty({0}, DType::i64, dev);
    Tensor counts = c.arg(3).toBool() ? u.counts : empty({0}, DType::i64, dev);
    c.ret_tuple(to_torch(u.values), to_torch(inverse), to_torch(counts));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

// max.dim / min.dim(self, dim, keepdim) -> (values, indices), and max.dim_max / min.dim_min.
template <bool kMax, Form F>
void max_dim_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  if (!has_kernels({&self}, false) || self.numel() == 0) return c.fall_back();  // torch's error for empty
  run_pair(c, F, 3, [&](const Tensor& x) {
    return kMax ? max_with_index(x, c.arg(1).toInt(), c.arg(2).toBool())
                : min_with_index(x, c.arg(1).toInt(), c.arg(2).toBool());
  });
}

// max(self) / min(self): the extreme of all elements (an empty self is torch's error).
template <bool kMax>
void max_all_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  if (!has_kernels({&self}, false) || self.numel() == 0 || self.scalar_type() == at::kBool) return c.fall_back();
  run_unary<Form::functional>(c, [](const Tensor& x) { return kMax ? max(x) : min(x); });
}

// cumsum(self, dim, *, dtype?) and its out and in-place forms.
template <Form F>
void cumsum_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  auto dtype = c.arg(2).toOptional<at::ScalarType>();
  if (!has_kernels({&self}, false) || (dtype && !to_dtype(*dtype))) return c.fall_back();
  run_unary<F>(c, [&](const Tensor& x) {
    Tensor in = dtype ? as_dtype(x, *to_dtype(*dtype)) : x;
    return cumsum(in, c.arg(1).toInt());
  });
}

// norm.ScalarOpt_dim(self, p?, dim, keepdim), norm.Scalar(self, p) and norm.out(self, p?,
// dim, keepdim, *, out).
template <Form F>
void norm_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  if (!has_kernels({&self})) return c.fall_back();
  double p = c.arg(1).isNone() ? 2.0 : c.number(1);
  bool full = op.schema().overload_name() == "Scalar";
  std::vector<int64_t> dims = full ? std::vector<int64_t>{} : int_list(c.arg(2));
  bool keepdim = !full && c.arg(3).toBool();
  run_unary<F>(c, [&](const Tensor& x) { return norm(x, p, dims, keepdim); });
}

template void index_kernel<Form::functional>(const c10::OperatorHandle&, Stack*);
template void index_kernel<Form::out>(const c10::OperatorHandle&, Stack*);
template void index_select_kernel<Form::functional>(const c10::OperatorHandle&, Stack*);
template void index_select_kernel<Form::out>(const c10::OperatorHandle&, Stack*);
template void gather_kernel<Form::functional>(const c10::OperatorHandle&, Stack*);
template void gather_kernel<Form::out>(const c10::OperatorHandle&, Stack*);
#define OPSCOPE_FORMS(KERNEL, ...)                                                                   \
  template void KERNEL<__VA_ARGS__ __VA_OPT__(, ) Form::functional>(const c10::OperatorHandle&, Stack*); \
  template void KERNEL<__VA_ARGS__ __VA_OPT__(, ) Form::inplace>(const c10::OperatorHandle&, Stack*);    \
  template void KERNEL<__VA_ARGS__ __VA_OPT__(, ) Form::out>(const c10::OperatorHandle&, Stack*);
OPSCOPE_FORMS(scatter_kernel, false)
OPSCOPE_FORMS(scatter_kernel, true)
OPSCOPE_FORMS(scatter_reduce_kernel)
OPSCOPE_FORMS(cumsum_kernel)
OPSCOPE_FORMS(triangle_kernel, true)
OPSCOPE_FORMS(triangle_kernel, false)
#undef OPSCOPE_FORMS
template void bucketize_kernel<Form::functional>(const c10::OperatorHandle&, Stack*);
template void bucketize_kernel<Form::out>(const c10::OperatorHandle&, Stack*);
template void nonzero_kernel<Form::functional>(const c10::OperatorHandle&, Stack*);
template void nonzero_kernel<Form::out>(const c10::OperatorHandle&, Stack*);
template void topk_kernel<Form::functional>(const c10::OperatorHandle&, Stack*);
template void topk_kernel<Form::out>(const c10::OperatorHandle&, Stack*);
template void sort_kernel<Form::functional>(const c10::OperatorHandle&, Stack*);
template void sort_kernel<Form::out>(const c10::OperatorHandle&, Stack*);
template void max_dim_kernel<true, Form::functional>(const c10::OperatorHandle&, Stack*);
template void max_dim_kernel<true, Form::out>(const c10::OperatorHandle&, Stack*);
template void max_dim_kernel<false, Form::functional>(const c10::OperatorHandle&, Stack*);
template void max_dim_kernel<false, Form::out>(const c10::OperatorHandle&, Stack*);
template void max_all_kernel<true>(const c10::OperatorHandle&, Stack*);
// index_add(self, dim, index, source, alpha): self with alpha * source's slices added at
// index along dim (GNN message passing), as index_put_ with accumulate on self's slices
// (repeated indices add up). Functional, in-place and out= forms.
template <Form F>
void index_add_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor &self = c.tensor(0), &index = c.tensor(2), &source = c.tensor(3);
  if (on_device(self) != on_device(source)) two_devices(c.name(), self, source);
  if (!has_kernels({&self, &source}, false) || self.scalar_type() != source.scalar_type() || self.dim() == 0 ||
      self.dim() != source.dim() || index.dim() > 1 || index.scalar_type() == at::kBool)
    return c.fall_back();  // 0-dim, ranks that differ, a bool index: torch's kernel or its error
  int64_t dim = c.arg(1).toInt();
  dim = dim < 0 ? dim + self.dim() : dim;
  if (dim < 0 || dim >= self.dim() || source.size(dim) != index.numel()) return c.fall_back();
  for (int64_t d = 0; d < self.dim(); ++d)
    if (d != dim && source.size(d) != self.size(d)) return c.fall_back();
  try {
    auto idx = index_tensor(index, c.name());
    if (!idx) return c.fall_back();
    Tensor x = from_torch(self, c.name()), src = from_torch(source, c.name());
    AtenScope scope(c.name(), {&x, &src});
    Tensor out = F == Form::inplace ? x : x.clone();
    double alpha = c.number(4);
    Tensor v = alpha == 1.0 ? src : mul(src, alpha);
    index_put_(dim == 0 ? out : out.transpose(0, dim), {idx->reshape({idx->numel()})},
               dim == 0 ? v : v.transpose(0, dim), /*accumulate=*/true);
    if constexpr (F == Form::inplace) c.ret(self);
    else c.ret(deliver(F, out, F == Form::out ? c.out() : self, c.name()));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

// masked_select(self, mask): the elements where the mask (broadcast with self) is true, in
// order, as the boolean index of the broadcast pair.
template <Form F>
void masked_select_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor &self = c.tensor(0), &mask = c.tensor(1);
  if (!has_kernels({&self}, false) || mask.scalar_type() != at::kBool || !on_device(mask)) return c.fall_back();
  try {
    Tensor x = from_torch(self, c.name()), m = from_torch(mask, c.name());
    AtenScope scope(c.name(), {&x, &m});
    Shape shape = broadcast_shapes(x.shape(), m.shape(), c.name());
    Tensor r = index(x.expand(shape), {m.expand(shape)});
    c.ret(deliver(F, r, F == Form::out ? c.out() : self, c.name()));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

// masked_scatter_(self, mask, source): source's elements, in order, written where the mask
// (broadcast to self) is true, as an index_put_ at the mask's coordinates. The count of true
// elements is read on the host (nonzero synchronizes in torch's kernel too); a source with
// fewer elements gets torch's error. masked_scatter (functional) is torch's clone and this.
void masked_scatter_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor &self = c.tensor(0), &mask = c.tensor(1), &source = c.tensor(2);
  if (!has_kernels({&self, &source}, false) || mask.scalar_type() != at::kBool || !on_device(mask) ||
      source.scalar_type() != self.scalar_type() || mask.dim() > self.dim())
    return c.fall_back();
  for (int64_t d = 1; d <= mask.dim(); ++d)  // the mask broadcasts to self as it is, or torch's error
    if (mask.size(-d) != 1 && mask.size(-d) != self.size(-d)) return c.fall_back();
  try {
    Tensor x = from_torch(self, c.name()), m = from_torch(mask, c.name()), src = from_torch(source, c.name());
    AtenScope scope(c.name(), {&x, &m, &src});
    // The mask's coordinates once: their count is checked, and they index the write (a bool
    // index would make index_put_ find them again).
    const Tensor coords = nonzero(m.expand(x.shape()));
    const int64_t count = coords.shape()[0];
    if (src.numel() < count) return c.fall_back();  // torch's error names the shortfall
    std::vector<Tensor> at;
    for (int d = 0; d < x.ndim(); ++d) at.push_back(coords.slice(1, d, d + 1).squeeze(1));
    index_put_(x, at, src.contiguous().reshape({src.numel()}).slice(0, 0, count));
    c.ret(self);
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

template void index_add_kernel<Form::functional>(const c10::OperatorHandle&, Stack*);
template void index_add_kernel<Form::inplace>(const c10::OperatorHandle&, Stack*);
template void index_add_kernel<Form::out>(const c10::OperatorHandle&, Stack*);
template void masked_select_kernel<Form::functional>(const c10::OperatorHandle&, Stack*);
template void masked_select_kernel<Form::out>(const c10::OperatorHandle&, Stack*);
template void max_all_kernel<false>(const c10::OperatorHandle&, Stack*);
template void norm_kernel<Form::functional>(const c10::OperatorHandle&, Stack*);
template void norm_kernel<Form::out>(const c10::OperatorHandle&, Stack*);

}  // namespace opscope::torch_bridge
