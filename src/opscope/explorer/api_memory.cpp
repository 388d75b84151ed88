// The memory view: each device's allocated bytes over a time window, at most `points`
// points per device (downsampled by keeping each bucket's maximum), with the profile's
// peak: how many bytes, when, and the op/range open at the allocation that reached it.
#include <algorithm>

#include "opscope/explorer/api_views.h"

namespace opscope::explorer::api {

using nlohmann::json;

namespace {
constexpr int kMaxMemoryPoints = 2000;
}  // namespace

json memory_view(const Profile& p, const Params& params) {
  const auto& tl = p.timeline();
  int64_t t0 = int_param(params, "t0", tl.begin(), -kMaxTime, kMaxTime);
  int64_t t1 = int_param(params, "t1", std::max(tl.end(), tl.begin() + 1), -kMaxTime, kMaxTime);
  if (t1 <= t0)
    throw ApiError(400, "parameter 't1' must be greater than t0 (got t0=" + std::to_string(t0) +
                            ", t1=" + std::to_string(t1) + ")");
  int points = int(int_param(params, "points", kMaxMemoryPoints, 3, kMaxMemoryPoints));
  json devices = json::array();
  for (const MemoryTrack& m : p.memory()) {
    MemoryWindow w = memory_window(m, t0, t1, points);
    const analysis::DeviceMemory& s = m.summary;
    devices.push_back({{"device", s.device}, {"name", s.name}, {"t", w.t}, {"bytes", w.bytes},
                       {"events", w.events}, {"downsampled", w.downsampled},
                       {"window_max", {{"bytes", w.max_bytes}, {"t", w.max_t}}},
                       {"peak", {{"bytes", s.peak_bytes}, {"t", s.peak_time_ns}, {"op", s.peak_op_path},
                                 {"start_bytes", s.start_bytes}, {"end_bytes", s.end_bytes},
                                 {"allocs", s.allocs}, {"frees", s.frees}}}});
  }
  return {{"t0", t0}, {"t1", t1}, {"points", points}, {"devices", devices}};
}

}  // namespace opscope::explorer::api
