// The summary's recommendations: the advisor's findings (advisor/advise.h), as the CLI
// prints them — each fusable chain with its named fix and figures, each trace finding
// (host-bound, launch-bound, communication exposed, straggler, small kernels) with the
// timeline range that shows it — plus a note when events were dropped. No rules of its
// own: one engine.
#pragma once
#include <nlohmann/json.hpp>

#include "opscope/analysis/analyze.h"
#include "opscope/explorer/profile.h"

namespace opscope::explorer {

// `analyses`: the profile's trace analyses, when the caller has them (the summary does).
nlohmann::json recommend(const Profile& profile, const analysis::TraceAnalysis* analyses = nullptr);

}  // namespace opscope::explorer
