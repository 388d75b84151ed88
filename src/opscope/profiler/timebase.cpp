#include "opscope/profiler/timebase.h"

#include <cpuid.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace opscope::prof::detail {

bool tsc_invariant() {
  unsigned a, b, c, d;
  if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000007) return false;
  __get_cpuid(0x80000007, &a, &b, &c, &d);
  return d & (1u << 8);  // invariant TSC
}

bool use_tsc() {
  static const bool v = [] {
    const char* off = std::getenv("OPSCOPE_PROFILE_NO_TSC");
    return tsc_invariant() && !(off && *off == '1');
  }();
  return v;
}

Anchor take_anchor() {
  Anchor best;
  int64_t best_gap = INT64_MAX;
  for (int i = 0; i < 5; ++i) {
    int64_t a = int64_t(__rdtsc());
    int64_t ns = now_ns();
    int64_t b = int64_t(__rdtsc());
    if (b - a < best_gap) {
      best_gap = b - a;
      best = {a + (b - a) / 2, ns};
    }
  }
  return best;
}

void Timebase::add(Anchor a) {
  auto it = std::lower_bound(anchors_.begin(), anchors_.end(), a.tsc,
                             [](const Anchor& x, int64_t t) { return x.tsc < t; });
  if (it != anchors_.end() && it->tsc == a.tsc) return;
  anchors_.insert(it, a);
  slope_.clear();
  for (size_t i = 0; i + 1 < anchors_.size(); ++i)
    slope_.push_back(double(anchors_[i + 1].ns - anchors_[i].ns) / double(anchors_[i + 1].tsc - anchors_[i].tsc));
  hint_ = 0;
}

int64_t Timebase::to_ns(int64_t tsc) const {
  size_t n = anchors_.size();
  if (n == 0) return tsc;
  if (n == 1) return anchors_[0].ns + (tsc - anchors_[0].tsc) / 3;  // nominal 3 GHz; collection always adds a second
  // Segment [i, i+1] that holds tsc; outside the anchors, extend the nearest segment.
  size_t i = hint_;
  if (!(anchors_[i].tsc <= tsc && tsc < anchors_[i + 1].tsc)) {
    auto it = std::upper_bound(anchors_.begin(), anchors_.end(), tsc,
                               [](int64_t t, const Anchor& x) { return t < x.tsc; });
    i = it == anchors_.begin() ? 0 : size_t(it - anchors_.begin()) - 1;
    if (i + 1 >= n) i = n - 2;
    hint_ = i;
  }
  return anchors_[i].ns + std::llround(double(tsc - anchors_[i].tsc) * slope_[i]);
}

}  // namespace opscope::prof::detail
