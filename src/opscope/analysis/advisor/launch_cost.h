// The fixed device time of a launch, fitted from the profile's own launches: what one
// fused kernel still costs however little it moves.
//
// Each launch's span less its bytes at the rate for their size leaves its fixed part;
// the median over small one-core launches (under 256 KiB, where that part dominates) is
// the estimate, else the 10th percentile over all when there are few. A launch fanned
// out over several cores pays more (waking and joining them): its own median, over
// streaming launches under 4 MiB (a matmul's time past its bytes is its math).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "opscope/analysis/advisor/profile_ops.h"

namespace opscope::advisor {

struct LaunchCost {
  double one_core_ns = 0;  // a launch on one core (or one GPU kernel)
  double fanout_ns = 0;    // a launch fanned out over several cores
  std::string from;        // how it was found
};

// `rate_at(ws, fallback)`: the streaming rate for a working set of ws bytes (GB/s);
// `rate_text` names it for `from`.
LaunchCost fit_launch_cost(const std::vector<LaunchSample>& samples,
                           const std::function<double(double, double)>& rate_at, const std::string& rate_text,
                           double best_seen);

// The best rate any launch reached (bytes / span), the fallback rate without peaks.
double best_launch_rate(const std::vector<LaunchSample>& samples);

}  // namespace opscope::advisor
