// Strict query-parameter parsing (a malformed value is a 400, never a silent default) and
// the brief form of an event that every view uses.
#include <charconv>

#include "opscope/explorer/api_views.h"

namespace opscope::explorer::api {

using nlohmann::json;

int64_t int_param(const Params& params, const std::string& key, int64_t fallback, int64_t lo,
                  int64_t hi) {
  auto it = params.find(key);
  if (it == params.end()) {
    if (fallback < lo || fallback > hi) throw ApiError(400, "missing parameter '" + key + "'");
    return fallback;
  }
  const std::string& s = it->second;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size())
    throw ApiError(400, "parameter '" + key + "' must be an integer, got '" + s.substr(0, 40) + "'");
  if (v < lo || v > hi)
    throw ApiError(400, "parameter '" + key + "' must be in [" + std::to_string(lo) + ", " +
                            std::to_string(hi) + "], got " + s);
  return v;
}

std::string string_param(const Params& params, const std::string& key, size_t max_len) {
  auto it = params.find(key);
  if (it == params.end() || it->second.empty())
    throw ApiError(400, "missing parameter '" + key + "'");
  if (it->second.size() > max_len)
    throw ApiError(400, "parameter '" + key + "' is longer than " + std::to_string(max_len));
  return it->second;
}

json event_brief(const Profile& p, uint32_t e) {
  const auto& ev = p.trace().events[e];
  return {{"e", e}, {"name", ev.name}, {"kind", prof::kind_name(ev.kind)},
          {"layer", layer_name(layer_of(ev.kind))}, {"t0", ev.t0}, {"t1", ev.t1},
          {"lane", p.timeline().lane_of(e)}};
}

}  // namespace opscope::explorer::api
