// Advanced indexing (index, index_put_), index_select, gather, scatter, nonzero: the
// framework steps (kernels/cpu/gather). Bool masks become their nonzero coordinates.
#include "opscope/ops/indexing.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string_view>

#include "opscope/core/error.h"
#include "opscope/kernels/cpu/gather.h"
#include "opscope/kernels/dispatch.h"
#include "opscope/ops/ops.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/runtime.h"

namespace opscope {

namespace {

using cpu_kernels::IndexPlan;

void check_index_dtype(const char* op, const Tensor& t) {
  if (t.dtype() != DType::i64 && t.dtype() != DType::i32 && t.dtype() != DType::b8)
    fail(op, "an index has dtype {}; indices must be i64, i32 or bool", dtype_name(t.dtype()));
}

// The indexing of x resolved: x's dims reordered so that the indexed ones are adjacent
// (`order`, the identity when they already are), the i64 index tensors broadcast to one
// shape, and the kernel's plan.
struct Resolved {
  std::vector<int64_t> order;
  Tensor xp;                // x permuted by `order` (a view)
  std::vector<Tensor> idx;  // contiguous i64, one per indexed dim
  IndexPlan plan;
  Shape out_shape;  // (pre dims, broadcast shape, post dims)
  bool identity = true;
};

Resolved resolve(const char* op, const Tensor& x, const std::vector<Tensor>& indices) {
  if (!x.defined()) fail(op, "x is undefined (a default-constructed Tensor)");
  if (indices.size() > size_t(x.ndim()))
    fail(op, "too many indices ({}) for x of shape {}", indices.size(), x.shape().str());
  // One entry per dim of x: masks expand into their coordinates.
  std::vector<Tensor> per_dim;
  for (const Tensor& t : indices) {
    if (!t.defined()) {
      per_dim.push_back(Tensor());
      continue;
    }
    check_index_dtype(op, t);
    if (&t.device() != &x.device()) fail(op, "an index is on {} but x is on {}", t.device().name(), x.device().name());
    if (t.dtype() != DType::b8) {
      per_dim.push_back(t.to(DType::i64));
      continue;
    }
    size_t d0 = per_dim.size();
    if (d0 + size_t(t.ndim()) > size_t(x.ndim()))
      fail(op, "a mask of shape {} at dim {} does not fit x of shape {}", t.shape().str(), d0, x.shape().str());
    for (int j = 0; j < t.ndim(); ++j)
      if (t.shape()[j] != x.shape()[int(d0) + j])
        fail(op, "the mask of shape {} does not match x's shape {} at dim {}", t.shape().str(), x.shape().str(),
             d0 + size_t(j));
    Tensor coords = nonzero(t);  // (count, mask dims)
    for (int j = 0; j < t.ndim(); ++j) per_dim.push_back(coords.slice(1, j, j + 1).squeeze(1));
  }
  per_dim.resize(size_t(x.ndim()));
  std::vector<int64_t> indexed, rest;
  for (int d = 0; d < x.ndim(); ++d) (per_dim[size_t(d)].defined() ? indexed : rest).push_back(d);
  if (indexed.empty()) fail(op, "no index tensor given");
  Resolved r;
  bool adjacent = indexed.back() - indexed.front() + 1 == int64_t(indexed.size());
  int64_t first = indexed.front();
  if (adjacent) {
    r.order.resize(size_t(x.ndim()));
    std::iota(r.order.begin(), r.order.end(), 0);
  } else {  // the indexed dims go in front, as numpy and torch do
    r.order = indexed;
    r.order.insert(r.order.end(), rest.begin(), rest.end());
    first = 0;
    r.identity = false;
  }
  r.xp = r.identity ? x : x.permute(r.order);
  Shape b;
  for (int64_t d : indexed) b = broadcast_shapes(b, per_dim[size_t(d)].shape(), op);
  int64_t last = first + int64_t(indexed.size());
  for (int64_t d = 0; d < first; ++d) r.out_shape.push_back(r.xp.shape()[int(d)]), r.plan.pre *= r.xp.shape()[int(d)];
  for (int d = 0; d < b.size(); ++d) r.out_shape.push_back(b[d]);
  for (int64_t d = last; d < x.ndim(); ++d) r.out_shape.push_back(r.xp.shape()[int(d)]), r.plan.post *= r.xp.shape()[int(d)];
  if (r.out_shape.size() > kMaxDims) fail(op, "the result would have {} dims (at most {})", r.out_shape.size(), kMaxDims);
  r.plan.count = b.numel();
  Strides cs = contiguous_strides(r.xp.shape());
  r.plan.pre_stride = first > 0 ? cs[int(first) - 1] : 0;
  for (int64_t k = 0; k < int64_t(indexed.size()); ++k) {
    r.plan.sizes.push_back(r.xp.shape()[int(first + k)]);
    r.plan.strides.push_back(cs[int(first + k)]);
    r.idx.push_back(per_dim[size_t(indexed[size_t(k)])].expand(b).contiguous());
  }
  return r;
}

template <class T> bool is_nonzero(T v) {
  if constexpr (std::is_integral_v<T>) return v != 0;
  else return to_f32(v) != 0.0f;  // NaN is nonzero
}

// A launch that reads x and the index tensors and writes `out`.
void launch_indexed(LaunchSpec spec, const Tensor& x, const std::vector<Tensor>& idx, const Tensor& out) {
  std::vector<const Tensor*> reads{&x};
  for (const Tensor& t : idx) reads.push_back(&t);
  const Tensor* writes[] = {&out};
  runtime::launch(out.device(), std::move(spec), std::span<const Tensor* const>(reads),
                  std::span<const Tensor* const>(writes));
}

}  // namespace

Tensor index(const Tensor& x, const std::vector<Tensor>& indices) {
  OPSCOPE_OP("index", &x);
  Resolved r = resolve("index", x, indices);
  ops_detail::cpu_only("index", x.device());
  Tensor xc = r.xp.contiguous();
  Tensor out = runtime::allocate(r.out_shape, x.dtype(), x.device());
  if (out.numel() == 0) return out;
  if (r.plan.pre * r.plan.post > 0 && xc.numel() == 0)
    fail("index", "x of shape {} is empty: no index is in range", x.shape().str());
  launch_indexed(cpu_kernels::index_gather_spec(out, xc, r.idx, r.plan), xc, r.idx, out);
  return out;
}

void index_put_(const Tensor& x, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate) {
  OPSCOPE_OP("index_put_", &x, &values);
  if (!values.defined()) fail("index_put_", "values are undefined (a default-constructed Tensor)");
  Resolved r = resolve("index_put_", x, indices);
  if (values.dtype() != x.dtype())
    fail("index_put_", "values have dtype {} but x has {}", dtype_name(values.dtype()), dtype_name(x.dtype()));
  if (accumulate && x.dtype() == DType::b8) fail("index_put_", "accumulate is not defined for bool");
  if (broadcast_shapes(values.shape(), r.out_shape, "index_put_") != r.out_shape)
    fail("index_put_", "values of shape {} do not broadcast to the indexed shape {}", values.shape().str(),
         r.out_shape.str());
  ops_detail::cpu_only("index_put_", x.device());
  if (r.out_shape.numel() == 0) return;
  Tensor v = values.expand(r.out_shape).contiguous();
  // The kernel writes a contiguous x in place; another layout goes through a copy.
  bool direct = r.identity && x.is_contiguous();
  Tensor target = direct ? x : r.xp.contiguous();
  launch_indexed(cpu_kernels::index_put_spec(target, v, r.idx, r.plan, accumulate), v, r.idx, target);
  if (!direct) kernels::launch_copy(r.xp, target);
}

Tensor index_select(const Tensor& x, int64_t axis, const Tensor& idx) {
  OPSCOPE_OP("index_select", &x, &idx);
  if (!x.defined() || !idx.defined()) fail("index_select", "an operand is undefined (a default-constructed Tensor)");
  if (idx.ndim() > 1 || idx.dtype() == DType::b8)
    fail("index_select", "index has shape {} and dtype {}; it must be a 1-d integer tensor", idx.shape().str(),
         dtype_name(idx.dtype()));
  int a = normalize_axis(axis, std::max(x.ndim(), 1), "index_select");
  if (x.ndim() == 0) return index(x.reshape({1}), {idx.reshape({idx.numel()})}).reshape(idx.shape());
  std::vector<Tensor> per_dim(size_t(a) + 1);
  per_dim[size_t(a)] = idx.reshape({idx.numel()});
  return index(x, per_dim);
}

Tensor gather(const Tensor& x, int64_t axis, const Tensor& index) {
  OPSCOPE_OP("gather", &x, &index);
  if (!x.defined() || !index.defined()) fail("gather", "an operand is undefined (a default-constructed Tensor)");
  if (index.dtype() != DType::i64 && index.dtype() != DType::i32)
    fail("gather", "index has dtype {}; it must be i64 or i32", dtype_name(index.dtype()));
  int nd = std::max(x.ndim(), 1);
  int a = normalize_axis(axis, nd, "gather");
  if (std::max(index.ndim(), 1) != nd)
    fail("gather", "index has shape {} but x has {}: they must have the same number of dims", index.shape().str(),
         x.shape().str());
  Tensor xv = x.ndim() ? x : x.reshape({1}), iv = index.ndim() ? index : index.reshape({1});
  for (int d = 0; d < nd; ++d)
    if (d != a && iv.shape()[d] > xv.shape()[d])
      fail("gather", "index has shape {} but x has {}: index must not be larger than x in dim {}", index.shape().str(),
           x.shape().str(), d);
  ops_detail::cpu_only("gather", x.device());
  Tensor ic = iv.to(DType::i64).contiguous();
  Tensor out = runtime::allocate(iv.shape(), x.dtype(), x.device());
  if (out.numel())
    runtime::launch(x.device(), cpu_kernels::gather_spec(out, xv, ic, a), {&xv, &ic}, {&out});
  return out.reshape(index.shape());
}

namespace {

// scatter's operands checked and shaped for the kernel: x (at least 1-d), the axis, the
// i64 index, and src at index's shape (a 0-dim src broadcast).
struct ScatterOperands {
  Tensor x, index, src;
  int axis;
};

ScatterOperands scatter_operands(const char* op, const Tensor& x, int64_t axis, const Tensor& index, const Tensor& src) {
  if (!x.defined() || !index.defined() || !src.defined()) fail(op, "an operand is undefined (a default-constructed Tensor)");
  if (index.dtype() != DType::i64 && index.dtype() != DType::i32)
    fail(op, "index has dtype {}; it must be i64 or i32", dtype_name(index.dtype()));
  if (src.dtype() != x.dtype()) fail(op, "src has dtype {} but x has {}", dtype_name(src.dtype()), dtype_name(x.dtype()));
  int nd = std::max(x.ndim(), 1);
  int a = normalize_axis(axis, nd, op);
  Tensor xv = x.ndim() ? x : x.reshape({1}), iv = index.ndim() ? index : index.reshape({1});
  if (iv.ndim() != nd) fail(op, "index has shape {} but x has {}", index.shape().str(), x.shape().str());
  // src is either a broadcast number (0-dim) or at least index's size in every dim.
  Shape ones;
  ones.resize(nd, 1);
  Tensor sv = src.ndim() == 0 ? src.reshape(ones).expand(iv.shape()) : src;
  for (int d = 0; d < nd; ++d)
    if ((d != a && iv.shape()[d] > xv.shape()[d]) || iv.shape()[d] > sv.shape()[d])
      fail(op, "index has shape {}, x {} and src {}: index must not be larger than x (but in dim {}) nor src",
           index.shape().str(), x.shape().str(), src.shape().str(), a);
  ops_detail::cpu_only(op, x.device());
  return {xv, iv.to(DType::i64).contiguous(), sv, a};
}

void launch_scatter(const Tensor& out, const ScatterOperands& o, const Tensor& src, cpu_kernels::ScatterReduce r) {
  if (o.index.numel())
    runtime::launch(out.device(), cpu_kernels::scatter_spec(out, o.index, src, o.axis, r), {&o.index, &src}, {&out});
}

// The value a reduction starts from where include_self is false, a 0-dim tensor of dt:
// integers' limits made exactly (INT64_MAX is no double).
Tensor scatter_identity(std::string_view reduce, DType dt, Device& dev) {
  const bool top = reduce == "amin", bottom = reduce == "amax";
  if (!is_floating(dt) && (top || bottom)) {
    const int64_t v = dt == DType::i32 ? (top ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int32_t>::min())
                                       : (top ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min());
    return from_host_i64({v}, {1}, &dev).to(dt).reshape(Shape{});
  }
  const double inf = std::numeric_limits<double>::infinity();
  return full(Shape{}, top ? inf : bottom ? -inf : reduce == "prod" ? 1.0 : 0.0, dt, &dev);
}

}  // namespace

Tensor scatter(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& src, bool add) {
  OPSCOPE_OP("scatter", &x, &index, &src);
  ScatterOperands o = scatter_operands("scatter", x, axis, index, src);
  Tensor out = x.clone().reshape(o.x.shape());
  launch_scatter(out, o, o.src, add ? cpu_kernels::ScatterReduce::sum : cpu_kernels::ScatterReduce::none);
  return out.reshape(x.shape());
}

Tensor scatter_reduce(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& src, std::string_view reduce,
                      bool include_self) {
  OPSCOPE_OP("scatter_reduce", &x, &index, &src);
  using R = cpu_kernels::ScatterReduce;
  R r = reduce == "sum" || reduce == "mean" ? R::sum
        : reduce == "prod"                  ? R::prod
        : reduce == "amax"                  ? R::amax
        : reduce == "amin"                  ? R::amin
                                            : R::none;
  if (r == R::none) fail("scatter_reduce", "reduce '{}' is not one of sum, prod, mean, amax, amin", reduce);
  if (x.dtype() == DType::b8) fail("scatter_reduce", "dtype bool is not supported");
  if (reduce == "mean" && !is_floating(x.dtype()))
    fail("scatter_reduce", "reduce 'mean' of {} is not supported (torch floors integer means)", dtype_name(x.dtype()));
  ScatterOperands o = scatter_operands("scatter_reduce", x, axis, index, src);
  Tensor out = x.clone().reshape(o.x.shape());
  if (!include_self) {  // the targets start from the reduction's identity, the others keep x
    Tensor start = scatter_identity(reduce, x.dtype(), x.device()).expand(o.index.shape());
    launch_scatter(out, o, start, R::none);
  }
  launch_scatter(out, o, o.src, r);
  if (reduce == "mean") {  // the sum over the count of terms: those scattered, and x's own
    Tensor count = full(o.x.shape(), include_self ? 1.0 : 0.0, x.dtype(), &x.device());
    launch_scatter(count, o, full(Shape{}, 1.0, x.dtype(), &x.device()).expand(o.index.shape()), R::sum);
    out = where(gt(count, 0.0), div(out, count), out);
  }
  return out.reshape(x.shape());
}

Tensor nonzero(const Tensor& x) {
  OPSCOPE_OP("nonzero", &x);
  if (!x.defined()) fail("nonzero", "x is undefined (a default-constructed Tensor)");
  ops_detail::cpu_only("nonzero", x.device());
  Tensor xc = x.contiguous();
  runtime::wait_written(xc);  // the count sets the output's shape: read on the host
  int64_t n = xc.numel(), blocks = (n + cpu_kernels::kNonzeroBlock - 1) / cpu_kernels::kNonzeroBlock;
  auto start = std::make_shared<std::vector<int64_t>>(size_t(blocks));
  int64_t count = 0;
  OPSCOPE_DISPATCH_ALL_AND_BOOL(xc.dtype(), T, [&] {
    const T* p = xc.data<T>();
    for (int64_t b = 0; b < blocks; ++b) {
      (*start)[size_t(b)] = count;
      for (int64_t i = b * cpu_kernels::kNonzeroBlock, e = std::min(n, i + cpu_kernels::kNonzeroBlock); i < e; ++i)
        count += is_nonzero(p[i]);
    }
  });
  Tensor out = runtime::allocate({count, int64_t(x.ndim())}, DType::i64, x.device());
  if (out.numel()) runtime::launch(x.device(), cpu_kernels::nonzero_spec(out, xc, start), {&xc}, {&out});
  return out;
}

}  // namespace opscope
