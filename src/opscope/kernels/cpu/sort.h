// Kernels over the rows along one axis of a contiguous x viewed as (outer, n, inner): sort,
// topk, the maximum/minimum with its index, cumsum. A work unit is one row; values are
// compared as f32 for floating dtypes (exact for bf16/f16), with torch's rules for NaN.
#pragma once
#include <cstdint>

#include "opscope/runtime/launch.h"
#include "opscope/runtime/tensor.h"

namespace opscope::cpu_kernels {

struct RowGeometry {
  int64_t outer = 1, n = 1, inner = 1;
};

// values/indices (outer, n, inner): each row sorted, stably (NaN greater than any number).
LaunchSpec sort_spec(const Tensor& values, const Tensor& indices, const Tensor& x, const RowGeometry& g,
                     bool descending);
// values/indices (outer, k, inner): each row's k largest (smallest), in order; ties keep
// the lower index first (NaN is the largest).
LaunchSpec topk_spec(const Tensor& values, const Tensor& indices, const Tensor& x, const RowGeometry& g, int64_t k,
                     bool largest);
// values/indices (outer, inner): each row's maximum (minimum) and the index of its first
// occurrence; the first NaN wins (torch's max.dim / min.dim).
LaunchSpec max_dim_spec(const Tensor& values, const Tensor& indices, const Tensor& x, const RowGeometry& g, bool max);
// out (outer, n, inner) of out's dtype: running sums of each row (floating: accumulated in
// double, as torch's CPU cumsum; integers in i64).
LaunchSpec cumsum_spec(const Tensor& out, const Tensor& x, const RowGeometry& g);
// out (x's shape, i64 or i32, contiguous) = for each element of the contiguous x, the index
// of the first boundary >= it (> it when `right`) in the sorted 1-d `boundaries` of x's
// dtype: torch's bucketize, whose binary search also sends NaN to len(boundaries).
LaunchSpec bucketize_spec(const Tensor& out, const Tensor& x, const Tensor& boundaries, bool right);

}  // namespace opscope::cpu_kernels
