#include "opscope/explorer/recommend.h"

#include <fmt/format.h>

#include "opscope/analysis/advisor/advise.h"
#include "opscope/core/error.h"

namespace opscope::explorer {

using nlohmann::json;

namespace {

json figures(const std::vector<std::pair<std::string, std::string>>& f) {
  json out = json::array();
  for (auto& [label, text] : f) out.push_back({{"label", label}, {"text", text}});
  return out;
}

// The example occurrence's ops and their launches, as event indices for the timeline.
json example_events(const Profile& p, const std::vector<uint64_t>& op_ids) {
  json out = json::array();
  for (uint64_t id : op_ids) {
    int64_t op = p.correlation().op_by_id(id);
    if (op >= 0) out.push_back(op);
    for (uint32_t l : p.correlation().launches_of_op(id)) out.push_back(l);
  }
  return out;
}

}  // namespace

json recommend(const Profile& p, const analysis::TraceAnalysis* analyses) {
  json out = json::array();
  try {
    advisor::AdviseOptions options;
    options.analyses = analyses;
    advisor::Advice a = advisor::advise(p.trace(), options);
    for (const advisor::Suggestion& s : a.suggestions) {
      if (out.size() >= 5) break;
      out.push_back({{"kind", "fuse"},
                     {"title", s.title()},
                     {"detail", s.fix},
                     {"impact_ns", s.predicted_saved_ns},
                     {"evidence", figures(a.figures(s))},
                     {"events", example_events(p, s.example_ops)}});
    }
    // The trace findings (host-bound, launch-bound, communication, stragglers, small
    // kernels), each with the timeline range that shows it.
    for (const advisor::Finding& f : a.findings)
      out.push_back({{"kind", f.kind},
                     {"title", f.title},
                     {"detail", f.detail + " Fix: " + f.fix},
                     {"impact_ns", f.impact_ns},
                     {"evidence", figures(f.evidence)},
                     {"events", json::array()},
                     {"range", {f.t0, f.t1}}});
    for (const std::string& w : a.warnings) {
      if (p.trace().dropped > 0 && w.find("events were dropped") != std::string::npos) continue;  // its own card below
      out.push_back({{"kind", "warning"}, {"title", "Advisor warning"}, {"detail", w}, {"impact_ns", 0},
                     {"evidence", json::array()}, {"events", json::array()}});
    }
  } catch (const Error& e) {
    // A profile the advisor cannot read (no framework ops, one kernel): say why.
    out.push_back({{"kind", "note"}, {"title", "No advice for this profile"}, {"detail", e.what()}, {"impact_ns", 0},
                   {"evidence", json::array()}, {"events", json::array()}});
  }
  std::stable_sort(out.begin(), out.end(), [](const json& a, const json& b) {
    return a["impact_ns"].get<double>() > b["impact_ns"].get<double>();
  });
  if (p.trace().dropped > 0) {
    out.insert(out.begin(),
               {{"kind", "dropped"},
                {"title", fmt::format("{} events were dropped", p.trace().dropped)},
                {"detail", "A per-thread buffer filled up during capture: every figure here "
                           "undercounts. Raise the max events per core or profile fewer steps."},
                {"impact_ns", 0},
                {"evidence", figures({{"dropped events", fmt::format("{}", p.trace().dropped)}})},
                {"events", json::array()}});
  }
  for (size_t i = 0; i < out.size(); ++i) out[i]["rank"] = i + 1;
  return out;
}

}  // namespace opscope::explorer
