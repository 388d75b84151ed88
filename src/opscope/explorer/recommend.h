// Recommendations from patterns in a profile, ranked by the time they could save:
//  - fuse: consecutive memory-bound (elementwise-like) kernels launched by different
//    ops on one thread → fuse or compile them, the intermediates go through memory;
//  - launch_bound: device cores idle between short kernels → fewer, larger launches;
//  - low_bandwidth: a kernel well below the peak bandwidth while taking much time;
//  - dropped: events were lost, the figures undercount.
#pragma once
#include <nlohmann/json.hpp>

#include "opscope/explorer/profile.h"

namespace opscope::explorer {

nlohmann::json recommend(const Profile& profile, double peak_gbps);

}  // namespace opscope::explorer
