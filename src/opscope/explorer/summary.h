// The summary view's numbers: host vs device time, per-core utilization, achieved
// bandwidth per kernel against the device's peak, the top ops, and ranked
// recommendations each carrying the evidence (figures and example events) behind it,
// each device's allocator peak with the op it happened in, and the trace analyses per
// rank (analyses_view.h).
#pragma once
#include <nlohmann/json.hpp>

#include "opscope/explorer/profile.h"

namespace opscope::explorer {

nlohmann::json summarize(const Profile& profile);

// The device's peak bandwidth in GB/s when the profile states one ("... 48.5 GB/s" in
// the device description or "peak_gbps" in the config), else 0.
double stated_peak_gbps(const prof::Trace& trace);

}  // namespace opscope::explorer
