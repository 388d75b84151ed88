#include "opscope/analysis/overlap.h"

#include "opscope/analysis/intervals.h"

namespace opscope::analysis {

Overlap comm_comp_overlap(const RankView& v) {
  std::vector<Interval> comm, comp;
  for (const DeviceWork& w : v.work) {
    if (w.kind == KernelKind::comm) comm.push_back({w.t0, w.t1});
    else if (w.kind == KernelKind::comp) comp.push_back({w.t0, w.t1});
  }
  std::vector<Interval> cm = merge_intervals(std::move(comm)), cp = merge_intervals(std::move(comp));
  Overlap o;
  o.comm_ns = total_length(cm);
  o.compute_ns = total_length(cp);
  o.overlap_ns = total_length(intersect(cm, cp));
  o.exposed_ns = o.comm_ns - o.overlap_ns;
  for (const Interval& x : subtract(cm, cp))
    if (x.t1 - x.t0 > o.exposed_t1 - o.exposed_t0) o.exposed_t0 = x.t0, o.exposed_t1 = x.t1;
  return o;
}

}  // namespace opscope::analysis
