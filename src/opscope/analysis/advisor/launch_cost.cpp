#include "opscope/analysis/advisor/launch_cost.h"

#include <fmt/format.h>

#include <algorithm>

#include "opscope/analysis/advisor/region_kernels.h"

namespace opscope::advisor {

double best_launch_rate(const std::vector<LaunchSample>& samples) {
  double best = 0;
  for (const LaunchSample& m : samples)
    if (m.span > 0) best = std::max(best, m.bytes / m.span);
  return best;
}

LaunchCost fit_launch_cost(const std::vector<LaunchSample>& samples,
                           const std::function<double(double, double)>& rate_at, const std::string& rate_text,
                           double best_seen) {
  auto fixed_part = [&](const LaunchSample& m) {
    double bw = rate_at(m.bytes, best_seen);
    return std::max(0.0, m.span - (bw > 0 ? m.bytes / bw : 0));
  };
  LaunchCost c;
  std::vector<double> fixed, fixed_fanned;
  for (const LaunchSample& m : samples) {
    if (!m.fanned && m.bytes < 256 * 1024) fixed.push_back(fixed_part(m));
    if (m.fanned && m.streaming && m.bytes < 4 * 1024 * 1024) fixed_fanned.push_back(fixed_part(m));
  }
  if (fixed.size() >= 8) {
    c.one_core_ns = median(fixed);
    c.from = fmt::format("median over {} one-core launches under 256 KiB of (device time − bytes at {})", fixed.size(),
                         rate_text);
  } else {
    std::vector<double> all;
    for (const LaunchSample& m : samples) all.push_back(fixed_part(m));
    std::sort(all.begin(), all.end());
    c.one_core_ns = all.empty() ? 0 : all[all.size() / 10];
    c.from = fmt::format("10th percentile over {} launches of (device time − bytes at {}); few small launches to fit",
                         all.size(), rate_text);
  }
  c.fanout_ns = c.one_core_ns;
  if (fixed_fanned.size() >= 4) {
    c.fanout_ns = std::max(c.one_core_ns, median(fixed_fanned));
    c.from += fmt::format("; {:.0f} ns on several cores (median over {} streaming launches under 4 MiB)", c.fanout_ns,
                          fixed_fanned.size());
  }
  return c;
}

}  // namespace opscope::advisor
