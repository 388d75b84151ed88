#include "opscope/analysis/kernel_breakdown.h"

#include <algorithm>

namespace opscope::analysis {

KernelBreakdown kernel_breakdown(const RankView& v) {
  KernelBreakdown out;
  std::vector<int32_t> row(v.names.size(), -1);
  for (const DeviceWork& w : v.work) {
    const int64_t d = w.t1 - w.t0;
    out.kind_ns[size_t(w.kind)] += d;
    out.kind_count[size_t(w.kind)]++;
    int32_t& r = row[size_t(w.name)];
    if (r < 0) {
      r = int32_t(out.kernels.size());
      out.kernels.push_back({v.names[size_t(w.name)], w.kind, 0, 0, d, d, w.t0, w.t1});
    }
    KernelStat& k = out.kernels[size_t(r)];
    k.count++;
    k.total_ns += d;
    k.min_ns = std::min(k.min_ns, d);
    if (d > k.max_ns || k.count == 1) k.max_ns = d, k.longest_t0 = w.t0, k.longest_t1 = w.t1;
  }
  std::stable_sort(out.kernels.begin(), out.kernels.end(),
                   [](const KernelStat& a, const KernelStat& b) { return a.total_ns > b.total_ns; });
  return out;
}

}  // namespace opscope::analysis
