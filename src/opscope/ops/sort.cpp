// sort, topk, max/min with indices and cumsum: the rows along one axis of x, one launch
// each (kernels/cpu/sort).
#include "opscope/core/error.h"
#include "opscope/kernels/cpu/sort.h"
#include "opscope/kernels/dispatch.h"
#include "opscope/ops/indexing.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/runtime.h"

namespace opscope {

namespace {

using cpu_kernels::RowGeometry;

// x as (outer, n, inner) along `axis` (a 0-dim x is one row of one).
RowGeometry rows(const Tensor& x, int a) {
  RowGeometry g;
  if (x.ndim() == 0) return g;
  for (int d = 0; d < a; ++d) g.outer *= x.shape()[d];
  g.n = x.shape()[a];
  for (int d = a + 1; d < x.ndim(); ++d) g.inner *= x.shape()[d];
  return g;
}

int axis_of(const char* op, const Tensor& x, int64_t axis) {
  if (!x.defined()) fail(op, "x is undefined (a default-constructed Tensor)");
  return x.ndim() == 0 ? normalize_axis(axis, 1, op) : normalize_axis(axis, x.ndim(), op);
}

std::pair<Tensor, Tensor> launch_pair(LaunchSpec spec, const Tensor& x, const Tensor& values, const Tensor& indices) {
  if (values.numel()) runtime::launch(x.device(), std::move(spec), {&x}, {&values, &indices});
  return {values, indices};
}

std::pair<Tensor, Tensor> extreme(const char* op, const Tensor& x, int64_t axis, bool keepdim, bool max) {
  int a = axis_of(op, x, axis);
  if (x.ndim() && x.shape()[a] == 0)
    fail(op, "cannot reduce over an empty axis: x has shape {} and axis {} holds no elements", x.shape().str(), a);
  ops_detail::cpu_only(op, x.device());
  Tensor xc = x.contiguous();
  Shape shape;
  for (int d = 0; d < x.ndim(); ++d)
    if (d != a) shape.push_back(x.shape()[d]);
    else if (keepdim) shape.push_back(1);
  Tensor values = runtime::allocate(shape, x.dtype(), x.device());
  Tensor indices = runtime::allocate(shape, DType::i64, x.device());
  if (values.numel() == 0) return {values, indices};
  return launch_pair(cpu_kernels::max_dim_spec(values, indices, xc, rows(x, a), max), xc, values, indices);
}

}  // namespace

std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t axis, bool descending) {
  OPSCOPE_OP("sort", &x);
  int a = axis_of("sort", x, axis);
  ops_detail::cpu_only("sort", x.device());
  Tensor xc = x.contiguous();
  Tensor values = runtime::allocate(x.shape(), x.dtype(), x.device());
  Tensor indices = runtime::allocate(x.shape(), DType::i64, x.device());
  return launch_pair(cpu_kernels::sort_spec(values, indices, xc, rows(x, a), descending), xc, values, indices);
}

std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t axis, bool largest) {
  OPSCOPE_OP("topk", &x);
  int a = axis_of("topk", x, axis);
  RowGeometry g = rows(x, a);
  if (k < 0 || k > g.n) fail("topk", "k ({}) is out of range for axis {} of x of shape {} ({} elements)", k, a,
                             x.shape().str(), g.n);
  ops_detail::cpu_only("topk", x.device());
  Tensor xc = x.contiguous();
  Shape shape = x.shape();
  if (x.ndim()) shape[a] = k;
  Tensor values = runtime::allocate(shape, x.dtype(), x.device());
  Tensor indices = runtime::allocate(shape, DType::i64, x.device());
  return launch_pair(cpu_kernels::topk_spec(values, indices, xc, g, k, largest), xc, values, indices);
}

std::pair<Tensor, Tensor> max_with_index(const Tensor& x, int64_t axis, bool keepdim) {
  OPSCOPE_OP("max", &x);
  return extreme("max", x, axis, keepdim, true);
}

std::pair<Tensor, Tensor> min_with_index(const Tensor& x, int64_t axis, bool keepdim) {
  OPSCOPE_OP("min", &x);
  return extreme("min", x, axis, keepdim, false);
}

Tensor bucketize(const Tensor& x, const Tensor& boundaries, bool right, bool out_int32) {
  OPSCOPE_OP("bucketize", &x, &boundaries);
  if (!x.defined() || !boundaries.defined()) fail("bucketize", "an operand is undefined (a default-constructed Tensor)");
  if (boundaries.ndim() != 1) fail("bucketize", "boundaries must be 1-d, got shape {}", boundaries.shape().str());
  if (x.dtype() != boundaries.dtype())
    fail("bucketize", "x has dtype {} but boundaries {}", dtype_name(x.dtype()), dtype_name(boundaries.dtype()));
  if (x.dtype() == DType::b8) fail("bucketize", "dtype bool is not supported");
  ops_detail::cpu_only("bucketize", x.device());
  Tensor xc = x.contiguous(), bc = boundaries.contiguous();
  Tensor out = runtime::allocate(x.shape(), out_int32 ? DType::i32 : DType::i64, x.device());
  if (out.numel())
    runtime::launch(x.device(), cpu_kernels::bucketize_spec(out, xc, bc, right), {&xc, &bc}, {&out});
  return out;
}

Tensor cumsum(const Tensor& x, int64_t axis) {
  OPSCOPE_OP("cumsum", &x);
  int a = axis_of("cumsum", x, axis);
  ops_detail::cpu_only("cumsum", x.device());
  Tensor xc = x.contiguous();
  Tensor out = runtime::allocate(x.shape(), is_floating(x.dtype()) ? x.dtype() : DType::i64, x.device());
  if (out.numel()) runtime::launch(x.device(), cpu_kernels::cumsum_spec(out, xc, rows(x, a)), {&xc}, {&out});
  return out;
}

}  // namespace opscope
