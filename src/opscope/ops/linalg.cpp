// matmul: 2-d, batched with broadcast batch dims, and 1-d operands as in numpy; with a bias
// (addmm), added in the same launch where the kernel can.
#include <climits>

#include "opscope/compiler/trace.h"
#include "opscope/core/error.h"
#include "opscope/kernels/dispatch.h"
#include "opscope/ops/ops.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/runtime.h"

namespace opscope {

namespace {

Shape dims_range(const Shape& s, int from, int to) {
  Shape r;
  for (int d = from; d < to; ++d) r.push_back(s[d]);
  return r;
}

// The bias the matmul's launch can add itself: (N) on f32 CPU operands, contiguous, and
// a product that is not empty (an empty sum is the bias alone: matmul, then add).
bool launch_adds_bias(const Tensor& a, const Tensor& b, const Tensor& bias) {
  return bias.defined() && a.defined() && b.defined() && a.ndim() >= 1 && b.ndim() >= 2 && a.numel() > 0 &&
         b.numel() > 0 && a.dtype() == DType::f32 && b.dtype() == DType::f32 &&
         bias.dtype() == DType::f32 && &bias.device() == &a.device() && a.device().type() == DeviceType::cpu &&
         bias.ndim() == 1 && bias.shape()[0] == b.shape()[b.ndim() - 1] && (bias.shape()[0] <= 1 || bias.strides()[0] == 1);
}

// a @ b, plus `bias` (launch_adds_bias) when given.
Tensor matmul_impl(const Tensor& a, const Tensor& b, const Tensor* bias) {
  // ---- framework: validate, infer the output ----
  if (!a.defined() || !b.defined()) fail("matmul", "an operand is undefined (default-constructed)");
  if (&a.device() != &b.device()) fail("matmul", "a is on {} but b is on {}", a.device().name(), b.device().name());
  if (a.dtype() != b.dtype())
    fail("matmul", "dtypes {} and {} differ (convert with .to())", dtype_name(a.dtype()), dtype_name(b.dtype()));
  if (!is_floating(a.dtype())) fail("matmul", "dtype {} is not supported (f32, bf16, f16)", dtype_name(a.dtype()));
  if (a.ndim() == 0 || b.ndim() == 0)
    fail("matmul", "shapes {} and {}: both operands need at least 1 dim", a.shape().str(), b.shape().str());
  // numpy: a 1-d a is a row (1, K), a 1-d b a column (K, 1); that dim is dropped again.
  Tensor a2 = a.ndim() == 1 ? a.unsqueeze(0) : a;
  Tensor b2 = b.ndim() == 1 ? b.unsqueeze(1) : b;
  int na = a2.ndim(), nb = b2.ndim();
  int64_t M = a2.shape()[na - 2], K = a2.shape()[na - 1], Kb = b2.shape()[nb - 2], N = b2.shape()[nb - 1];
  if (K != Kb)
    fail("matmul", "shapes {} and {}: inner dims {} and {} differ", a.shape().str(), b.shape().str(), K, Kb);
  Shape ab = dims_range(a2.shape(), 0, na - 2), bb = dims_range(b2.shape(), 0, nb - 2);
  Shape batch;
  int nbatch = std::max(ab.size(), bb.size());
  for (int i = 0; i < nbatch; ++i) {
    int ia = ab.size() - nbatch + i, ib = bb.size() - nbatch + i;
    int64_t da = ia >= 0 ? ab[ia] : 1, db = ib >= 0 ? bb[ib] : 1;
    if (da != db && da != 1 && db != 1)
      fail("matmul", "shapes {} and {}: batch dims {} and {} do not broadcast", a.shape().str(), b.shape().str(),
           ab.str(), bb.str());
    batch.push_back(da == 1 ? db : da);
  }
  if (M > INT_MAX || N > INT_MAX || K > INT_MAX)
    fail("matmul", "shapes {} and {}: a matrix dim exceeds BLAS's 32-bit sizes", a.shape().str(), b.shape().str());
  Shape full = batch, result = batch;
  full.push_back(M);
  full.push_back(N);
  if (a.ndim() > 1) result.push_back(M);
  if (b.ndim() > 1) result.push_back(N);

  // ---- runtime: operands sgemm can take, allocate, launch ----
  // A layout (s/c)gemm cannot read is copied first (its own kernel); cuBLAS reads no other either.
  if (a.dtype() == DType::f32 || a.device().type() == DeviceType::cuda) {
    if (!cpu_kernels::blas_compatible(a2)) a2 = a2.contiguous();
    if (!cpu_kernels::blas_compatible(b2)) b2 = b2.contiguous();
  }
  Shape a_full = batch, b_full = batch;
  a_full.push_back(M), a_full.push_back(K);
  b_full.push_back(K), b_full.push_back(N);
  Tensor a3 = a2.expand(a_full), b3 = b2.expand(b_full);
  Tensor out = runtime::allocate(full, a.dtype(), a.device());
  Tensor r(out.storage(), result, contiguous_strides(result), 0, out.dtype());
  if (out.numel() > 0) {
    if (K == 0) kernels::launch_fill(out, 0.0);  // an empty sum
    else if (bias) runtime::launch(a.device(), cpu_kernels::matmul_spec(out, a3, b3, bias), {&a3, &b3, bias}, {&out});
    else runtime::launch(a.device(), kernels::matmul_spec(out, a3, b3), {&a3, &b3}, {&out});
  }
  if (bias) return compiler::traced("matmul", {&a, &b, bias}, r);
  return compiler::traced("matmul", {&a, &b}, r);
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  OPSCOPE_OP("matmul", &a, &b);
  return matmul_impl(a, b, nullptr);
}

Tensor matmul(const Tensor& a, const Tensor& b, const Tensor& bias) {
  OPSCOPE_OP("matmul", &a, &b, &bias);
  if (!launch_adds_bias(a, b, bias)) return add(matmul(a, b), bias);
  return matmul_impl(a, b, &bias);
}

}  // namespace opscope
