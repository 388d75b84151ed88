#include "opscope/explorer/analyses_view.h"

namespace opscope::explorer {

using nlohmann::json;

namespace {

json idle_json(const analysis::IdleSplit& d) {
  json out = json::array();
  for (int k = 0; k < analysis::kIdleKinds; ++k)
    out.push_back({{"kind", analysis::idle_kind_name(analysis::IdleKind(k))},
                   {"ns", d.ns[size_t(k)]},
                   {"gaps", d.gaps[size_t(k)]},
                   {"t0", d.longest_t0[size_t(k)]},
                   {"t1", d.longest_t1[size_t(k)]}});
  return out;
}

json launches_json(const analysis::LaunchStats& l) {
  json bins = json::array();
  for (const analysis::DelayBin& b : l.histogram)
    bins.push_back({{"lo_ns", b.lo_ns}, {"hi_ns", b.hi_ns}, {"count", b.count},
                    {"t0", b.example_t0}, {"t1", b.example_t1}});
  return {{"launches", l.launches}, {"delay_p50_ns", l.delay_p50_ns}, {"delay_p90_ns", l.delay_p90_ns},
          {"delay_max_ns", l.delay_max_ns}, {"histogram", std::move(bins)}};
}

}  // namespace

json analyses_view(const analysis::TraceAnalysis& a) {
  json ranks = json::array();
  for (const analysis::RankAnalysis& r : a.ranks) {
    if (!r.has_device) continue;
    const analysis::Temporal& t = r.temporal;
    const analysis::Overlap& o = r.overlap;
    ranks.push_back({{"rank", r.rank},
                     {"t0", t.t0},
                     {"t1", t.t1},
                     {"span_ns", t.span_ns},
                     {"compute_ns", t.compute_ns},
                     {"non_compute_ns", t.non_compute_ns},
                     {"idle_ns", t.idle_ns},
                     {"idle", idle_json(r.idle.device)},
                     {"overlap", {{"comm_ns", o.comm_ns}, {"overlap_ns", o.overlap_ns}, {"exposed_ns", o.exposed_ns},
                                  {"ratio", o.ratio()}, {"t0", o.exposed_t0}, {"t1", o.exposed_t1}}},
                     {"launches", launches_json(r.launches)}});
  }
  const analysis::RankAnalysis* slow = a.slowest();
  return {{"ranks", std::move(ranks)},
          {"slowest_rank", slow ? json(slow->rank) : json(nullptr)},
          {"warnings", a.warnings}};
}

}  // namespace opscope::explorer
