#include "opscope/core/shape.h"

#include <algorithm>

#include "opscope/core/error.h"

namespace opscope {

Dims::Dims(std::initializer_list<int64_t> v) : Dims(std::span<const int64_t>(v.begin(), v.size())) {}

Dims::Dims(std::span<const int64_t> v) {
  if (v.size() > size_t(kMaxDims)) fail("shape", "{} dims given, at most {} are supported", v.size(), kMaxDims);
  n_ = int(v.size());
  std::copy(v.begin(), v.end(), d_.begin());
}

void Dims::too_many(int n) {
  fail("shape", "{} dims requested, at most {} are supported", n, kMaxDims);
}

int64_t Dims::numel_overflowed() const {
  if (std::find(begin(), end(), 0) != end()) return 0;
  fail("shape", "{} has more elements than an int64 can count (2^63 - 1)", str());
}

std::string Dims::str() const {
  std::string s = "(";
  for (int i = 0; i < n_; ++i) {
    if (i) s += ", ";
    s += std::to_string(d_[i]);
  }
  return s + ")";
}

Strides contiguous_strides(const Shape& shape) {
  Strides s;
  s.resize(shape.size());
  int64_t acc = 1;
  for (int i = shape.size() - 1; i >= 0; --i) {
    s[i] = acc;
    acc *= std::max<int64_t>(shape[i], 1);
  }
  return s;
}

int normalize_axis(int64_t axis, int ndim, const char* op) {
  int64_t a = axis < 0 ? axis + ndim : axis;
  if (a < 0 || a >= ndim) fail(op, "axis {} is out of range for a tensor of {} dims", axis, ndim);
  return int(a);
}

bool broadcasts_to(const Shape& s, const Shape& to) {
  if (s.size() > to.size()) return false;
  for (int d = 0; d < s.size(); ++d)
    if (s[d] != 1 && s[d] != to[to.size() - s.size() + d]) return false;
  return true;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  int n = std::max(a.size(), b.size());
  Shape out;
  out.resize(n);
  for (int i = 0; i < n; ++i) {
    int ia = a.size() - n + i, ib = b.size() - n + i;
    int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1)
      fail(op, "shapes {} and {} do not broadcast (dim {}: {} vs {})", a.str(), b.str(), i, da, db);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace opscope
