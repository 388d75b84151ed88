// The summary's recommendations: the advisor's findings (advisor/advise.h), as the CLI
// prints them — each fusable chain with its named fix and figures, the host-bound idle
// time — plus a note when events were dropped. No rules of its own: one engine.
#pragma once
#include <nlohmann/json.hpp>

#include "opscope/explorer/profile.h"

namespace opscope::explorer {

nlohmann::json recommend(const Profile& profile);

}  // namespace opscope::explorer
