// unique: torch.unique(x, sorted=True) from the device's own ops — a stable sort, the
// boundaries where the sorted value changes, their positions (a synchronization: their
// count sets the shape), and the group of each sorted element scattered back to where it
// came from. torchvision's batched_nms calls it on the classes of the boxes.
#include "opscope/core/error.h"
#include "opscope/ops/indexing.h"
#include "opscope/ops/ops.h"
#include "opscope/runtime/op_scope.h"

namespace opscope {

Unique unique(const Tensor& x) {
  OPSCOPE_OP("unique", &x);
  if (!x.defined()) fail("unique", "x is undefined (a default-constructed Tensor)");
  Device* dev = &x.device();
  const int64_t n = x.numel();
  if (n == 0) return {empty({0}, x.dtype(), dev), empty(x.shape(), DType::i64, dev), empty({0}, DType::i64, dev)};
  auto [sorted, perm] = sort(x.contiguous().flatten(), 0);
  // A new value starts at 0 and wherever it differs from the one before (NaN != NaN:
  // each NaN is its own value, as in torch's CPU kernel).
  Tensor starts_mask = concat({ones({1}, DType::b8, dev), ne(sorted.slice(0, 1, n), sorted.slice(0, 0, n - 1))}, 0);
  Tensor starts = nonzero(starts_mask).flatten();
  const int64_t k = starts.numel();
  Tensor ends = concat({starts.slice(0, 1, k), full({1}, double(n), DType::i64, dev)}, 0);
  Tensor group = sub(cumsum(starts_mask, 0), ones({1}, DType::i64, dev));  // the value of each sorted element
  Tensor inverse = scatter(zeros({n}, DType::i64, dev), 0, perm, group);
  return {index_select(sorted, 0, starts), inverse.reshape(x.shape()), sub(ends, starts)};
}

}  // namespace opscope
