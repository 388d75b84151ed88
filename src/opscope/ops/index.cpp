// concat, embedding and embedding bags' max.
#include <algorithm>
#include <span>

#include "opscope/compiler/trace.h"
#include "opscope/core/error.h"
#include "opscope/kernels/cpu/index.h"
#include "opscope/kernels/dispatch.h"
#include "opscope/ops/ops.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/runtime.h"

namespace opscope {

namespace {

// runtime::launch names its reads in an initializer list, so one concat launch takes at
// most this many inputs; more inputs take more launches.
constexpr size_t kConcatInputsPerLaunch = 8;

}  // namespace

Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
  static const Tensor kNone;
  OPSCOPE_OP("concat", xs.empty() ? &kNone : &xs[0]);  // the op's mark takes a fixed list: the first input
  // ---- framework: validate, infer the output ----
  if (xs.empty()) fail("concat", "no tensors given");
  for (size_t i = 0; i < xs.size(); ++i)
    if (!xs[i].defined()) fail("concat", "input {} is undefined (default-constructed)", i);
  const Tensor& x0 = xs[0];
  if (x0.ndim() == 0) fail("concat", "input 0 is a scalar (shape ()); concat needs at least 1 dim");
  int a = normalize_axis(axis, x0.ndim(), "concat");
  Shape shape = x0.shape();
  shape[a] = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Tensor& x = xs[i];
    if (&x.device() != &x0.device())
      fail("concat", "input {} is on {} but input 0 is on {}", i, x.device().name(), x0.device().name());
    if (x.dtype() != x0.dtype())
      fail("concat", "input {} has dtype {} but input 0 has {}", i, dtype_name(x.dtype()), dtype_name(x0.dtype()));
    bool same = x.ndim() == x0.ndim();
    for (int d = 0; same && d < x.ndim(); ++d) same = d == a || x.shape()[d] == x0.shape()[d];
    if (!same)
      fail("concat", "input {} has shape {} but input 0 has {}: all dims but axis {} must match", i, x.shape().str(),
           x0.shape().str(), a);
    shape[a] += x.shape()[a];
  }

  // ---- runtime: allocate, launch (in groups of inputs) ----
  Tensor out = runtime::allocate(shape, x0.dtype(), x0.device());
  if (out.numel() == 0) return out;
  int64_t start = 0;
  for (size_t g = 0; g < xs.size(); g += kConcatInputsPerLaunch) {
    size_t n = std::min(kConcatInputsPerLaunch, xs.size() - g);
    std::span<const Tensor> group(xs.data() + g, n);
    LaunchSpec spec = kernels::concat_spec(out, group, a, start);
    for (const Tensor& x : group) start += x.shape()[a];
    if (spec.work == 0) continue;  // only empty inputs in this group
    const Tensor* r[kConcatInputsPerLaunch];
    for (size_t i = 0; i < kConcatInputsPerLaunch; ++i) r[i] = &group[std::min(i, n - 1)];  // repeats are harmless
    runtime::launch(out.device(), std::move(spec), {r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]}, {&out});
  }
  if (compiler::tracing()) compiler::record("concat", xs, out, compiler::TraceAttrs::at_axis(axis));
  return out;
}

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  OPSCOPE_OP("embedding", &weight, &indices);
  // ---- framework: validate, infer the output ----
  if (!weight.defined() || !indices.defined()) fail("embedding", "an operand is undefined (default-constructed)");
  if (weight.ndim() != 2) fail("embedding", "weight has shape {}; it must be (V, D)", weight.shape().str());
  if (indices.dtype() != DType::i32 && indices.dtype() != DType::i64)
    fail("embedding", "indices have dtype {}; they must be i32 or i64", dtype_name(indices.dtype()));
  if (&weight.device() != &indices.device())
    fail("embedding", "weight is on {} but indices are on {}", weight.device().name(), indices.device().name());
  if (indices.ndim() >= kMaxDims)
    fail("embedding", "indices have shape {}; the output would have more than {} dims", indices.shape().str(),
         kMaxDims);
  Shape shape = indices.shape();
  shape.push_back(weight.shape()[1]);

  // ---- runtime: rows unit-stride and indices contiguous (copies show as their own kernels) ----
  Tensor w = weight.strides()[1] == 1 || weight.shape()[1] <= 1 ? weight : weight.contiguous();
  Tensor idx = indices.contiguous();
  Tensor out = runtime::allocate(shape, weight.dtype(), weight.device());
  if (out.numel() == 0) return out;
  runtime::launch(out.device(), kernels::embedding_spec(out, w, idx), {&w, &idx}, {&out});
  if (compiler::tracing()) compiler::record("embedding", {&weight, &indices}, out);
  return out;
}

std::pair<Tensor, Tensor> embedding_bag_max(const Tensor& weight, const Tensor& rows, const Tensor& starts) {
  OPSCOPE_OP("embedding_bag_max", &weight, &rows, &starts);
  if (!weight.defined() || !rows.defined() || !starts.defined())
    fail("embedding_bag_max", "an operand is undefined (default-constructed)");
  if (weight.ndim() != 2 || weight.dtype() != DType::f32)
    fail("embedding_bag_max", "weight is {} {}; it must be (V, D) f32", weight.shape().str(), dtype_name(weight.dtype()));
  if (rows.ndim() != 1 || rows.dtype() != DType::i64 || starts.ndim() != 1 || starts.dtype() != DType::i64 ||
      starts.shape()[0] < 1)
    fail("embedding_bag_max", "rows {} {} and starts {} {} must be 1-d i64, starts with one entry at least",
         rows.shape().str(), dtype_name(rows.dtype()), starts.shape().str(), dtype_name(starts.dtype()));
  if (&weight.device() != &rows.device() || &weight.device() != &starts.device())
    fail("embedding_bag_max", "the operands are on different devices");
  ops_detail::cpu_only("embedding_bag_max", weight.device());
  // The kernel trusts the bags and rows: checked here, on the host (they are small).
  const std::vector<int64_t> r = rows.to_vector<int64_t>(), st = starts.to_vector<int64_t>();
  const int64_t V = weight.shape()[0], K = int64_t(r.size());
  if (st.front() != 0 || st.back() != K)
    fail("embedding_bag_max", "starts must run from 0 to the {} rows, not {} to {}", K, st.front(), st.back());
  for (size_t b = 1; b < st.size(); ++b)
    if (st[b] < st[b - 1]) fail("embedding_bag_max", "starts decrease at bag {}: {} then {}", b - 1, st[b - 1], st[b]);
  for (size_t p = 0; p < r.size(); ++p)
    if (r[p] < 0 || r[p] >= V) fail("embedding_bag_max", "row {} (position {}) is out of range for {} rows", r[p], p, V);
  const int64_t B = starts.shape()[0] - 1, D = weight.shape()[1];
  Tensor out = runtime::allocate({B, D}, DType::f32, weight.device());
  Tensor argmax = runtime::allocate({B, D}, DType::i64, weight.device());
  if (out.numel() == 0) return {out, argmax};
  Tensor w = weight.strides()[1] == 1 ? weight : weight.contiguous();
  Tensor rc = rows.contiguous(), sc = starts.contiguous();
  runtime::launch(out.device(), cpu_kernels::embedding_bag_max_spec(out, argmax, w, rc, sc), {&w, &rc, &sc},
                  {&out, &argmax});
  return {out, argmax};
}

}  // namespace opscope
