// Shapes and strides: at most 8 dims, stored inline so that creating a tensor never
// touches the heap for its metadata.
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

namespace opscope {

constexpr int kMaxDims = 8;

class Dims {
 public:
  Dims() = default;
  Dims(std::initializer_list<int64_t> v);
  explicit Dims(std::span<const int64_t> v);
  explicit Dims(const std::vector<int64_t>& v) : Dims(std::span<const int64_t>(v)) {}

  int size() const { return n_; }
  bool empty() const { return n_ == 0; }
  int64_t operator[](int i) const { return d_[i]; }
  int64_t& operator[](int i) { return d_[i]; }
  int64_t back() const { return d_[n_ - 1]; }
  const int64_t* begin() const { return d_.data(); }
  const int64_t* end() const { return d_.data() + n_; }
  int64_t* begin() { return d_.data(); }
  int64_t* end() { return d_.data() + n_; }
  // Inline: every op builds shapes, and a call per resize showed in launch profiles.
  void push_back(int64_t v) {
    if (n_ == kMaxDims) too_many(n_ + 1);
    d_[n_++] = v;
  }
  void resize(int n, int64_t fill = 0) {
    if (n > kMaxDims || n < 0) too_many(n);
    for (int i = n_; i < n; ++i) d_[i] = fill;
    n_ = n;
  }
  std::vector<int64_t> vec() const { return {begin(), end()}; }

  // Product of the dims (1 for a scalar shape). Throws "[shape] ..." when it does not fit
  // an int64 (a wrapped count would size allocations and loops wrongly).
  int64_t numel() const {
    int64_t n = 1;
    bool over = false;
    for (int i = 0; i < n_; ++i) over |= __builtin_mul_overflow(n, d_[i], &n);
    return over ? numel_overflowed() : n;
  }
  // "(4, 4096)"
  std::string str() const;

  friend bool operator==(const Dims& a, const Dims& b) {
    if (a.n_ != b.n_) return false;
    for (int i = 0; i < a.n_; ++i)
      if (a.d_[i] != b.d_[i]) return false;
    return true;
  }

 private:
  [[noreturn]] static void too_many(int n);
  int64_t numel_overflowed() const;  // 0 when a dim is 0, else throws
  std::array<int64_t, kMaxDims> d_{};
  int n_ = 0;
};

using Shape = Dims;
using Strides = Dims;

// Row-major strides (in elements) of a contiguous tensor of `shape`.
Strides contiguous_strides(const Shape& shape);
// Normalizes a possibly negative axis; throws "[op] axis a is out of range for ndim n".
int normalize_axis(int64_t axis, int ndim, const char* op);
// The broadcast of two shapes (numpy rules); throws "[op] shapes (..) and (..) do not broadcast".
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
// Whether `s` broadcasts to `to` unchanged (numpy rules, `to` the larger): each of s's dims,
// aligned to the right, is 1 or to's.
bool broadcasts_to(const Shape& s, const Shape& to);

}  // namespace opscope
