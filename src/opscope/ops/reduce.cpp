// Reductions: sum, mean, max, min, var, argmax. The framework step resolves the axes and
// the output shape; the kernel (kernels/cpu/reduce) picks rows, columns or strided.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cmath>

#include "opscope/compiler/trace.h"
#include "opscope/core/error.h"
#include "opscope/kernels/dispatch.h"
#include "opscope/ops/ops.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/runtime.h"

namespace opscope {

namespace {

using cpu_kernels::ReduceKind;

struct Resolved {
  std::vector<int> axes;  // normalized, in the order given
  Shape out_shape;
  int64_t reduced_numel = 1;
};

Resolved resolve(const char* op, const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  if (!x.defined()) fail(op, "the tensor is undefined (default-constructed)");
  int nd = x.ndim();
  Resolved r;
  std::array<bool, kMaxDims> seen{};
  if (axes.empty()) {
    for (int d = 0; d < nd; ++d) r.axes.push_back(d), seen[d] = true;
  } else {
    for (int64_t a : axes) {
      int d = normalize_axis(a, nd, op);
      if (seen[d]) fail(op, "axis {} appears twice in the axes ({}) for shape {}", a, fmt::join(axes, ", "), x.shape().str());
      seen[d] = true;
      r.axes.push_back(d);
    }
  }
  for (int d = 0; d < nd; ++d) {
    if (seen[d]) {
      r.reduced_numel *= x.shape()[d];
      if (keepdim) r.out_shape.push_back(1);
    } else {
      r.out_shape.push_back(x.shape()[d]);
    }
  }
  return r;
}

Tensor reduce(const char* op, ReduceKind kind, const Tensor& x, const std::vector<int64_t>& axes, bool keepdim,
              int64_t correction) {
  // framework: validate, infer the output
  Resolved r = resolve(op, x, axes, keepdim);
  if (x.dtype() == DType::b8) {  // a count of the true elements, as torch's sum of a mask
    if (kind == ReduceKind::sum) return reduce(op, kind, x.to(DType::i64), axes, keepdim, correction);
    fail(op, "x has dtype bool (shape {}); convert with .to() first", x.shape().str());
  }
  bool integral = !is_floating(x.dtype());
  if (integral && (kind == ReduceKind::mean || kind == ReduceKind::var))
    fail(op, "x has dtype {}, not a floating type (convert with .to(f32))", dtype_name(x.dtype()));
  bool needs_element = kind == ReduceKind::max || kind == ReduceKind::min || kind == ReduceKind::argmax;
  if (needs_element && r.reduced_numel == 0)
    fail(op, "cannot reduce over an empty axis: x has shape {} and axes ({}) hold no elements", x.shape().str(),
         fmt::join(r.axes, ", "));
  DType dt = kind == ReduceKind::argmax || (kind == ReduceKind::sum && integral) ? DType::i64 : x.dtype();

  // runtime: allocate, launch
  Tensor out = runtime::allocate(r.out_shape, dt, x.device());
  if (out.numel() == 0) return out;
  LaunchSpec spec = kernels::reduce_spec(kind, out, x, r.axes, correction);
  runtime::launch(x.device(), std::move(spec), {&x}, {&out});
  if (compiler::tracing()) compiler::record(op, {&x}, out, compiler::TraceAttrs::var(axes, keepdim, correction));
  return out;
}

}  // namespace

Tensor sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  OPSCOPE_OP("sum", &x);
  return reduce("sum", ReduceKind::sum, x, axes, keepdim, 0);
}

Tensor mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  OPSCOPE_OP("mean", &x);
  return reduce("mean", ReduceKind::mean, x, axes, keepdim, 0);
}

Tensor max(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  OPSCOPE_OP("max", &x);
  return reduce("max", ReduceKind::max, x, axes, keepdim, 0);
}

Tensor min(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  OPSCOPE_OP("min", &x);
  return reduce("min", ReduceKind::min, x, axes, keepdim, 0);
}

Tensor var(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim, int64_t correction) {
  OPSCOPE_OP("var", &x);
  return reduce("var", ReduceKind::var, x, axes, keepdim, correction);
}

Tensor argmax(const Tensor& x, int64_t axis, bool keepdim) {
  OPSCOPE_OP("argmax", &x);
  return reduce("argmax", ReduceKind::argmax, x, {axis}, keepdim, 0);
}

Tensor norm(const Tensor& x, double p, const std::vector<int64_t>& axes, bool keepdim) {
  OPSCOPE_OP("norm", &x);
  if (!x.defined()) fail("norm", "the tensor is undefined (default-constructed)");
  if (!is_floating(x.dtype())) fail("norm", "x has dtype {}, not a floating type", dtype_name(x.dtype()));
  if (p == 2) return sqrt(sum(mul(x, x), axes, keepdim));
  if (p == 1) return sum(abs(x), axes, keepdim);
  if (std::isinf(p)) return p > 0 ? max(abs(x), axes, keepdim) : min(abs(x), axes, keepdim);
  if (p == 0) return sum(ne(x, 0.0).to(x.dtype()), axes, keepdim);
  return pow(sum(pow(abs(x), p), axes, keepdim), 1.0 / p);
}

}  // namespace opscope
