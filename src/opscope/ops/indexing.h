// Indexing, sorting and selection ops with torch's semantics: advanced indexing and its
// write, index_select, gather, scatter, nonzero, roll, flip, triu/tril, sort, topk, max/min with
// indices, cumsum. Index tensors are i32 or i64 (negative values count from the
// end) or bool masks; an index out of range fails the kernel, named by the op. CPU device
// only.
#pragma once
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "opscope/runtime/tensor.h"

namespace opscope {

// x[indices[0], indices[1], ...] as torch's x[i, j] with index tensors: one entry per
// leading dim of x, undefined for a whole dim (":"); bool masks stand for their nonzero
// coordinates (a synchronization: their count sets the shape). The index tensors
// broadcast together; their shape replaces the indexed dims, in place when those are
// adjacent, else in front (numpy's rule).
Tensor index(const Tensor& x, const std::vector<Tensor>& indices);
// x[indices...] = values (broadcast to the indexed shape), or += with accumulate, written
// into x itself (any layout). The indices are index()'s.
void index_put_(const Tensor& x, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate = false);
// The rows of x along `axis` picked by the 1-d `index`.
Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index);
// out[..., i, ...] = x[..., index[..., i, ...], ...] along `axis`; out has index's shape.
Tensor gather(const Tensor& x, int64_t axis, const Tensor& index);
// A copy of x with x[..., index[i], ...] = src[i] (or += when add) along `axis`, over
// index's elements (in order: a repeated index keeps the last value, or adds every one).
Tensor scatter(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& src, bool add = false);
// torch's scatter_reduce: src[i] reduced into a copy of x at index[i] along `axis` by
// `reduce` ("sum", "prod", "mean", "amax", "amin"); without include_self the targets
// start from the reduction's identity (x's value is left out), the rest keep x's. mean of
// integers is refused.
Tensor scatter_reduce(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& src, std::string_view reduce,
                      bool include_self = true);
// The coordinates (count, ndim) i64 of x's nonzero elements, row-major. Synchronizes.
Tensor nonzero(const Tensor& x);
// Elements shifted by shifts[i] along axes[i] (wrapping around); no axes: over the
// flattened tensor, restored to its shape.
Tensor roll(const Tensor& x, const std::vector<int64_t>& shifts, const std::vector<int64_t>& axes);
// x reversed along each of `axes`.
Tensor flip(const Tensor& x, const std::vector<int64_t>& axes);
// The upper (triu) or lower (tril) triangle of each matrix in x's last two dims, the rest
// zero: triu keeps x[..., i, j] where j - i >= diagonal, tril where j - i <= diagonal.
Tensor triu(const Tensor& x, int64_t diagonal = 0);
Tensor tril(const Tensor& x, int64_t diagonal = 0);
// (values, indices i64) along `axis`, stably sorted; NaN sorts as the largest value.
std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t axis = -1, bool descending = false);
// For each element of x, the index of its bucket among the sorted 1-d boundaries (of x's
// dtype): the first boundary >= it, or > it when `right` (NaN: len(boundaries)); i64, or
// i32 with out_int32. torch.bucketize.
Tensor bucketize(const Tensor& x, const Tensor& boundaries, bool right = false, bool out_int32 = false);
// The k largest (or smallest) along `axis`, in order: (values, indices i64).
std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t axis = -1, bool largest = true);
// The maximum (minimum) along `axis` and the index of its first occurrence; NaN wins.
std::pair<Tensor, Tensor> max_with_index(const Tensor& x, int64_t axis, bool keepdim = false);
std::pair<Tensor, Tensor> min_with_index(const Tensor& x, int64_t axis, bool keepdim = false);
// Running sums along `axis`; integer and bool inputs give i64 (torch's cumsum).
Tensor cumsum(const Tensor& x, int64_t axis);
// torch.unique(x, sorted=True, return_inverse=True, return_counts=True): the distinct
// values of x (flattened) in ascending order, NaNs last and each its own; for each element
// of x the index of its value (i64, x's shape); and each value's count (i64).
// Synchronizes (the number of values sets the shape).
struct Unique {
  Tensor values, inverse, counts;
};
Unique unique(const Tensor& x);

}  // namespace opscope
