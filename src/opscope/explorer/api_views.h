// The handlers behind ExplorerApi, one per view; each returns the JSON body or throws
// ApiError (status + message). Internal to the explorer.
#pragma once
#include <stdexcept>

#include "opscope/explorer/api.h"

namespace opscope::explorer::api {

struct ApiError : std::runtime_error {
  ApiError(int status, const std::string& msg) : std::runtime_error(msg), status(status) {}
  int status;
};

// The widest time window a query may name (t0, t1 in ns): far past any trace, and t1 - t0
// cannot overflow.
constexpr int64_t kMaxTime = int64_t(1) << 62;

// Query parameters: absent → fallback; present but malformed or out of range → 400.
int64_t int_param(const Params& params, const std::string& key, int64_t fallback, int64_t lo,
                  int64_t hi);
std::string string_param(const Params& params, const std::string& key, size_t max_len);

nlohmann::json event_brief(const Profile& p, uint32_t e);

nlohmann::json profiles_view(const std::vector<ProfilePtr>& profiles);
nlohmann::json profile_entry(size_t id, const Profile& p);
nlohmann::json tracks_view(const Profile& p);
nlohmann::json timeline_view(const Profile& p, const Params& params);
nlohmann::json range_view(const Profile& p, const Params& params);
nlohmann::json memory_view(const Profile& p, const Params& params);
nlohmann::json event_view(const Profile& p, uint32_t e);
nlohmann::json search_view(const Profile& p, const Params& params);
nlohmann::json ops_view(const Profile& p, const Params& params);
// The instructions layer (api_kernel.cpp).
nlohmann::json kernel_view(const Profile& p, const Params& params);
nlohmann::json samples_view(const Profile& p, const Params& params);
nlohmann::json lines_view(const Profile& p, const Params& params);
nlohmann::json compare_view(size_t a_id, const Profile& a, size_t b_id, const Profile& b);

}  // namespace opscope::explorer::api
