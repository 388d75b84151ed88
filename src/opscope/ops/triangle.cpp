// triu and tril: one launch over the rows of every matrix (kernels/cpu/triangle.h).
#include "opscope/core/error.h"
#include "opscope/kernels/cpu/triangle.h"
#include "opscope/kernels/dispatch.h"
#include "opscope/ops/indexing.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/runtime.h"

namespace opscope {

namespace {

Tensor triangle(const char* op, const Tensor& x, int64_t diagonal, bool upper) {
  OPSCOPE_OP(op, &x);
  if (!x.defined()) fail(op, "x is undefined (a default-constructed Tensor)");
  if (x.ndim() < 2) fail(op, "x has shape {}: it needs at least 2 dims, a matrix or a batch of them", x.shape().str());
  ops_detail::cpu_only(op, x.device());
  Tensor xc = x.contiguous();
  Tensor out = runtime::allocate(x.shape(), x.dtype(), x.device());
  if (out.numel()) runtime::launch(x.device(), cpu_kernels::triangle_spec(out, xc, diagonal, upper), {&xc}, {&out});
  return out;
}

}  // namespace

Tensor triu(const Tensor& x, int64_t diagonal) { return triangle("triu", x, diagonal, true); }
Tensor tril(const Tensor& x, int64_t diagonal) { return triangle("tril", x, diagonal, false); }

}  // namespace opscope
