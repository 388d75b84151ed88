// Argument checks the ops over 1-3 spatial axes share (pooling, interpolation, conv):
// x is (N, C, *spatial) of a floating dtype, and a size list has one value per spatial
// axis or one for all. Errors name the op.
#pragma once
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <string>

#include "opscope/core/error.h"
#include "opscope/ops/spatial.h"

namespace opscope::ops_detail {

inline std::string str(const Sizes& s) { return fmt::format("({})", fmt::join(s, ", ")); }

// The number of spatial axes of x (1 to 3).
inline int spatial_axes(const char* op, const Tensor& x) {
  if (!x.defined()) fail(op, "x is undefined (a default-constructed Tensor)");
  if (!is_floating(x.dtype())) fail(op, "x has dtype {}, not a floating type (f32, bf16, f16)", dtype_name(x.dtype()));
  if (x.ndim() < 3 || x.ndim() > 5)
    fail(op, "x has shape {}; it must be (N, C, L), (N, C, H, W) or (N, C, D, H, W)", x.shape().str());
  return x.ndim() - 2;
}

// `s` with one value per axis (a single value repeated).
inline Sizes per_axis(const char* op, const char* what, const Sizes& s, int k) {
  if (s.size() == size_t(k)) return s;
  if (s.size() == 1) return Sizes(size_t(k), s[0]);
  fail(op, "{} {} must have 1 or {} values, one per spatial axis", what, str(s), k);
}

// An output size per spatial axis as (d, h, w), the leading axes 1.
inline std::array<int64_t, 3> output_axes(const char* op, const Sizes& s, int k) {
  Sizes v = per_axis(op, "output_size", s, k);
  std::array<int64_t, 3> a{1, 1, 1};
  for (int i = 0; i < k; ++i) {
    if (v[size_t(i)] < 0) fail(op, "output_size {} must not be negative", str(s));
    a[size_t(3 - k + i)] = v[size_t(i)];
  }
  return a;
}

}  // namespace opscope::ops_detail
