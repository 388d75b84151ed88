// The explorer's JSON API over the profiles named on the command line, independent of
// the HTTP server (which only forwards GET /api/... here), so it is tested directly.
//   /api/profiles                      device, config, totals, dropped, or the load error
//   /api/profiles/{id}/summary         host vs device time, cores, bandwidth, recommendations
//   /api/profiles/{id}/tracks          lanes (groups, depth, layer) and the name table
//   /api/profiles/{id}/timeline?t0=&t1=&px=   level-of-detail drawables per lane, flows
//   /api/profiles/{id}/range?t0=&t1=   aggregate statistics of a selected time range
//   /api/profiles/{id}/memory?t0=&t1=&points=   allocated bytes per device (≤ points, max
//                                      per bucket) and each device's peak with its op
//   /api/profiles/{id}/event/{n}       details and the correlation chain op → launches → kernels
//   /api/profiles/{id}/ops             key_averages rows
//   /api/profiles/{id}/search?q=[&exact=1]   events by name
//   /api/profiles/{id}/kernel?name=[&op=]   inside a kernel: hot source lines and instructions (instructions layer)
//   /api/profiles/{id}/samples?t0=&t1=[&max=]   instruction samples in a window, with their ops
//   /api/profiles/{id}/lines[?limit=]  key averages per source line
//   /api/compare?a=&b=                 per-op delta table
// Times are ns from the profile's t = 0. Errors: {"error": "..."} with 400 (bad query),
// 404 (no such profile, event or route) or 409 (the profile failed to load).
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "opscope/explorer/profile.h"

namespace opscope::explorer {

using Params = std::multimap<std::string, std::string>;  // == httplib::Params

struct ApiResponse {
  int status = 200;
  nlohmann::json body;
};

class ExplorerApi {
 public:
  explicit ExplorerApi(std::vector<ProfilePtr> profiles) : profiles_(std::move(profiles)) {}

  ApiResponse get(std::string_view path, const Params& params) const;
  const std::vector<ProfilePtr>& profiles() const { return profiles_; }

 private:
  std::vector<ProfilePtr> profiles_;
};

}  // namespace opscope::explorer
