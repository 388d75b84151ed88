// Index kernels beyond concat and embedding: advanced indexing (torch's x[idx, ...]) and
// its in-place write, gather and scatter along an axis, and nonzero's coordinates. Every
// index is checked (negative ones count from the end); one out of range fails the kernel,
// and the error surfaces at the next synchronization, naming the op.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "opscope/runtime/launch.h"
#include "opscope/runtime/tensor.h"

namespace opscope::cpu_kernels {

// x viewed as (pre, indexed dims..., post), contiguous; `idx` holds one contiguous i64
// tensor per indexed dim, all of B elements. Shapes and strides as the op resolved them.
struct IndexPlan {
  int64_t pre = 1, post = 1, count = 0;  // count: B, the broadcast index elements
  std::vector<int64_t> sizes;             // the indexed dims' sizes
  std::vector<int64_t> strides;           // their strides in x (elements)
  int64_t pre_stride = 0;                 // x's stride of one pre step
};

// out (pre, B, post) = x[p, idx0[b], idx1[b], ..., :].
LaunchSpec index_gather_spec(const Tensor& out, const Tensor& x, const std::vector<Tensor>& idx, const IndexPlan& p);
// x[p, idx0[b], ..., :] = values (pre, B, post) (+= when accumulate), in place on x. One
// work unit per pre index: a unit writes in order, so repeated indices behave as torch's
// CPU kernel (the last write wins; accumulate adds every one).
LaunchSpec index_put_spec(const Tensor& x, const Tensor& values, const std::vector<Tensor>& idx, const IndexPlan& p,
                          bool accumulate);

// out = x's elements at `index` along `axis` (index and out of one shape, contiguous;
// x any strides with index's sizes fitting in x's on the other axes).
LaunchSpec gather_spec(const Tensor& out, const Tensor& x, const Tensor& index, int axis);
// How scatter combines src[i] with the element it lands on: replaces it (none), or adds,
// multiplies, keeps the larger or the smaller (NaN from either side wins, as in torch).
enum class ScatterReduce : uint8_t { none, sum, prod, amax, amin };
// x[..., index[i], ...] = src[i] (or reduced into it) over index's elements, in place on
// the contiguous x; src holds index's shape (any strides, may be a broadcast scalar). One
// work unit: repeated indices are applied in order.
LaunchSpec scatter_spec(const Tensor& x, const Tensor& index, const Tensor& src, int axis, ScatterReduce reduce);

// nonzero: the coordinates (count, ndim) i64 of the nonzero elements of the contiguous
// x, in row-major order; `block_start[b]` is the first output row of element block b
// (the op counted them).
LaunchSpec nonzero_spec(const Tensor& out, const Tensor& x, std::shared_ptr<const std::vector<int64_t>> block_start);
// Elements per block of nonzero_spec's counts.
constexpr int64_t kNonzeroBlock = 1 << 14;

}  // namespace opscope::cpu_kernels
