#include "opscope/analysis/temporal.h"

#include "opscope/analysis/intervals.h"

namespace opscope::analysis {

Temporal temporal_breakdown(const RankView& v) {
  Temporal t;
  if (!v.has_device()) return t;
  std::vector<Interval> all, comp;
  all.reserve(v.work.size());
  for (const DeviceWork& w : v.work) {
    all.push_back({w.t0, w.t1});
    if (w.kind == KernelKind::comp) comp.push_back({w.t0, w.t1});
  }
  t.t0 = v.t0();
  t.t1 = v.t1();
  t.span_ns = t.t1 - t.t0;
  t.idle_ns = t.span_ns - total_length(merge_intervals(std::move(all)));
  t.compute_ns = total_length(merge_intervals(std::move(comp)));
  t.non_compute_ns = t.span_ns - t.idle_ns - t.compute_ns;
  return t;
}

}  // namespace opscope::analysis
