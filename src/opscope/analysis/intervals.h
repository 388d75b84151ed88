// Sets of time intervals as the analyses measure them: merged into disjoint, sorted
// spans (HTA's merge_kernel_intervals), their length, and the length two sets share.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

namespace opscope::analysis {

struct Interval {
  int64_t t0 = 0, t1 = 0;
};

// The union of `iv`, as disjoint intervals sorted by start (sorts `iv`).
inline std::vector<Interval> merge_intervals(std::vector<Interval> iv) {
  std::sort(iv.begin(), iv.end(), [](const Interval& a, const Interval& b) { return a.t0 < b.t0; });
  std::vector<Interval> out;
  for (const Interval& x : iv) {
    if (x.t1 <= x.t0) continue;
    if (!out.empty() && x.t0 <= out.back().t1) out.back().t1 = std::max(out.back().t1, x.t1);
    else out.push_back(x);
  }
  return out;
}

inline int64_t total_length(const std::vector<Interval>& merged) {
  int64_t n = 0;
  for (const Interval& x : merged) n += x.t1 - x.t0;
  return n;
}

// The intervals where both merged sets are busy.
inline std::vector<Interval> intersect(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    int64_t t0 = std::max(a[i].t0, b[j].t0), t1 = std::min(a[i].t1, b[j].t1);
    if (t1 > t0) out.push_back({t0, t1});
    (a[i].t1 < b[j].t1) ? ++i : ++j;
  }
  return out;
}

// The parts of merged `a` outside merged `b`.
inline std::vector<Interval> subtract(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  size_t j = 0;
  for (Interval x : a) {
    while (j < b.size() && b[j].t1 <= x.t0) ++j;
    for (size_t k = j; k < b.size() && b[k].t0 < x.t1; ++k) {
      if (b[k].t0 > x.t0) out.push_back({x.t0, b[k].t0});
      x.t0 = std::max(x.t0, b[k].t1);
    }
    if (x.t1 > x.t0) out.push_back(x);
  }
  return out;
}

// The value of a sorted sample at quantile q (nearest rank); 0 for none.
template <class T>
T quantile_sorted(const std::vector<T>& sorted, double q) {
  if (sorted.empty()) return T{};
  size_t i = size_t(q * double(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

}  // namespace opscope::analysis
