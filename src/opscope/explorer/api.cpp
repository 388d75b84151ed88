#include "opscope/explorer/api.h"

#include <charconv>

#include "opscope/explorer/api_views.h"
#include "opscope/explorer/summary.h"

namespace opscope::explorer {

using nlohmann::json;
using namespace api;

namespace {

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    size_t slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    if (!part.empty()) parts.push_back(part);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return parts;
}

// A path segment that must be a small decimal index.
size_t index_segment(std::string_view s, size_t count, const char* what) {
  size_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.size() > 12)
    throw ApiError(400, std::string(what) + " must be a non-negative integer, got '" +
                            std::string(s.substr(0, 40)) + "'");
  if (v >= count) throw ApiError(404, "no " + std::string(what) + " " + std::to_string(v));
  return v;
}

const Profile& loaded(const std::vector<ProfilePtr>& profiles, size_t id) {
  const Profile& p = *profiles[id];
  if (!p.ok()) throw ApiError(409, "profile " + std::to_string(id) + " (" + p.label() +
                                       ") failed to load: " + p.error());
  return p;
}

}  // namespace

ApiResponse ExplorerApi::get(std::string_view path, const Params& params) const {
  try {
    auto parts = split_path(path);
    if (parts.size() < 2 || parts[0] != "api") throw ApiError(404, "no such API route");
    if (parts[1] == "compare" && parts.size() == 2) {
      size_t a = size_t(int_param(params, "a", -1, 0, int64_t(profiles_.size()) - 1));
      size_t b = size_t(int_param(params, "b", -1, 0, int64_t(profiles_.size()) - 1));
      return {200, compare_view(a, loaded(profiles_, a), b, loaded(profiles_, b))};
    }
    if (parts[1] != "profiles") throw ApiError(404, "no such API route");
    if (parts.size() == 2) return {200, profiles_view(profiles_)};
    size_t id = index_segment(parts[2], profiles_.size(), "profile");
    if (parts.size() == 3) return {200, profile_entry(id, *profiles_[id])};
    const Profile& p = loaded(profiles_, id);
    std::string_view view = parts[3];
    if (parts.size() == 4) {
      if (view == "summary") return {200, p.summary()};
      if (view == "tracks") return {200, tracks_view(p)};
      if (view == "timeline") return {200, timeline_view(p, params)};
      if (view == "range") return {200, range_view(p, params)};
      if (view == "memory") return {200, memory_view(p, params)};
      if (view == "ops") return {200, ops_view(p, params)};
      if (view == "search") return {200, search_view(p, params)};
      if (view == "kernel") return {200, kernel_view(p, params)};
      if (view == "samples") return {200, samples_view(p, params)};
      if (view == "lines") return {200, lines_view(p, params)};
    }
    if (parts.size() == 5 && view == "event") {
      size_t e = index_segment(parts[4], p.trace().events.size(), "event");
      return {200, event_view(p, uint32_t(e))};
    }
    throw ApiError(404, "no such API route");
  } catch (const ApiError& e) {
    return {e.status, {{"error", e.what()}}};
  } catch (const std::exception& e) {
    return {500, {{"error", std::string("internal error: ") + e.what()}}};
  }
}

}  // namespace opscope::explorer
