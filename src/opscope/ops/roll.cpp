// roll and flip as copies between views: roll copies each block of x that moves as one
// into its place in the output (2^k blocks for k rolled axes), flip copies a view of x
// with negated strides. The copies are the copy kernel's launches.
#include <map>

#include "opscope/core/error.h"
#include "opscope/kernels/dispatch.h"
#include "opscope/ops/indexing.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/runtime.h"

namespace opscope {

Tensor roll(const Tensor& x, const std::vector<int64_t>& shifts, const std::vector<int64_t>& axes) {
  OPSCOPE_OP("roll", &x);
  if (!x.defined()) fail("roll", "x is undefined (a default-constructed Tensor)");
  if (axes.empty()) {
    if (shifts.size() != 1) fail("roll", "{} shifts with no axes: the flattened roll takes one shift", shifts.size());
    return roll(x.reshape({x.numel()}), shifts, {0}).reshape(x.shape());
  }
  if (shifts.size() != axes.size())
    fail("roll", "{} shifts for {} axes: give one shift per axis", shifts.size(), axes.size());
  // Shifts along the same axis add up; each is taken modulo the axis' size.
  std::map<int, int64_t> by_axis;
  for (size_t i = 0; i < axes.size(); ++i) by_axis[normalize_axis(axes[i], x.ndim(), "roll")] += shifts[i];
  std::vector<std::pair<int, int64_t>> rolls;
  for (auto [a, s] : by_axis) {
    int64_t n = x.shape()[a];
    int64_t m = n ? ((s % n) + n) % n : 0;
    if (m) rolls.emplace_back(a, m);
  }
  ops_detail::cpu_only("roll", x.device());
  Tensor out = runtime::allocate(x.shape(), x.dtype(), x.device());
  if (out.numel() == 0) return out;
  // Block `mask`: along rolled axis j, bit j set is the wrapped part [n - s, n) -> [0, s).
  for (uint32_t mask = 0; mask < (1u << rolls.size()); ++mask) {
    Tensor dst = out, src = x;
    for (size_t j = 0; j < rolls.size(); ++j) {
      auto [a, s] = rolls[j];
      int64_t n = x.shape()[a];
      if (mask & (1u << j)) dst = dst.slice(a, 0, s), src = src.slice(a, n - s, n);
      else dst = dst.slice(a, s, n), src = src.slice(a, 0, n - s);
    }
    kernels::launch_copy(dst, src);
  }
  return out;
}

Tensor flip(const Tensor& x, const std::vector<int64_t>& axes) {
  OPSCOPE_OP("flip", &x);
  if (!x.defined()) fail("flip", "x is undefined (a default-constructed Tensor)");
  Strides st = x.strides();
  int64_t offset = x.offset();
  std::vector<bool> seen(size_t(x.ndim()));
  for (int64_t axis : axes) {
    int a = normalize_axis(axis, x.ndim(), "flip");
    if (seen[size_t(a)]) fail("flip", "axis {} appears twice", axis);
    seen[size_t(a)] = true;
    if (x.shape()[a] > 1) offset += (x.shape()[a] - 1) * st[a], st[a] = -st[a];
  }
  ops_detail::cpu_only("flip", x.device());
  Tensor out = runtime::allocate(x.shape(), x.dtype(), x.device());
  if (out.numel()) kernels::launch_copy(out, Tensor(x.storage(), x.shape(), st, offset, x.dtype()));
  return out;
}

}  // namespace opscope
