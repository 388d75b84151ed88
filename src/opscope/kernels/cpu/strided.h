// Walking strided tensors. An N-operand index space of `shape` (row-major) is cut into
// runs along the last dim; for each run the callback gets every operand's element
// offset and inner stride, so the inner loop is a plain strided (often unit) loop.
#pragma once
#include <array>
#include <cstdint>

#include "opscope/core/shape.h"

namespace opscope::cpu_kernels {

// The offset of element `idx` (row-major) of the first nd dims of shape s, strides st.
inline int64_t offset_of(int64_t idx, const Shape& s, const Strides& st, int nd) {
  int64_t off = 0;
  for (int d = nd - 1; d >= 0; --d) {
    off += (idx % s[d]) * st[d];
    idx /= s[d];
  }
  return off;
}

template <int N>
struct Operands {
  std::array<Strides, N> strides;  // per operand, same rank as the shape (0 = broadcast)
};

// Calls f(offsets, inner_strides, count) for the elements [begin, end) of `shape`.
template <int N, class F>
void for_each_run(const Shape& shape, const std::array<Strides, N>& strides, int64_t begin, int64_t end, F&& f) {
  int nd = shape.size();
  if (nd == 0) {
    std::array<int64_t, N> off{}, inner{};
    if (begin < end) f(off, inner, int64_t(1));
    return;
  }
  std::array<int64_t, kMaxDims> idx{};
  int64_t rem = begin;
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = rem % shape[d];
    rem /= shape[d];
  }
  std::array<int64_t, N> off{}, inner{};
  for (int k = 0; k < N; ++k) {
    inner[k] = strides[k][nd - 1];
    for (int d = 0; d < nd; ++d) off[k] += idx[d] * strides[k][d];
  }
  int64_t last = shape[nd - 1];
  int64_t pos = begin;
  while (pos < end) {
    int64_t count = std::min(end - pos, last - idx[nd - 1]);
    f(off, inner, count);
    pos += count;
    if (pos >= end) break;
    // advance the multi-index by `count` along the last dim, with carries
    idx[nd - 1] += count;
    for (int k = 0; k < N; ++k) off[k] += count * strides[k][nd - 1];
    for (int d = nd - 1; d > 0 && idx[d] == shape[d]; --d) {
      idx[d] = 0;
      ++idx[d - 1];
      for (int k = 0; k < N; ++k) off[k] += strides[k][d - 1] - shape[d] * strides[k][d];
    }
  }
}

// Elements per work unit for elementwise kernels, and the fewest units worth a core.
constexpr int64_t kElemBlock = 4096;
constexpr int64_t kElemGrainBlocks = 8;  // 32K elements before a second core joins

}  // namespace opscope::cpu_kernels
