#include "opscope/importer/ranks.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "opscope/analysis/key_averages.h"
#include "opscope/core/error.h"

namespace opscope::importer {

std::vector<int64_t> track_ranks(const prof::Trace& trace) {
  std::vector<int64_t> out;
  bool any = false;
  for (const prof::Track& tr : trace.tracks) {
    out.push_back(tr.rank);
    any = any || tr.rank >= 0;
  }
  if (!any) out.clear();
  return out;
}

RankTable rank_table(const prof::Trace& trace) {
  std::vector<int64_t> of_track = track_ranks(trace);
  if (of_track.empty()) fail("table", "--by-rank needs several ranks: a job folder of rank-N profiles, or several ranks' torch.profiler traces");
  RankTable t;
  for (int64_t r : of_track)
    if (r >= 0 && std::find(t.ranks.begin(), t.ranks.end(), r) == t.ranks.end()) t.ranks.push_back(r);
  std::sort(t.ranks.begin(), t.ranks.end());
  const size_t nr = t.ranks.size();
  // One trace per rank: the same events, split by their track's rank.
  std::vector<prof::Trace> per(nr);
  for (size_t k = 0; k < nr; ++k) {
    per[k].config_json = trace.config_json;
    per[k].tracks = trace.tracks;
  }
  std::map<std::pair<int, std::string>, std::string> collectives;
  for (const prof::TraceEvent& e : trace.events) {
    int64_t r = e.track >= 0 && size_t(e.track) < of_track.size() ? of_track[size_t(e.track)] : -1;
    auto k = std::find(t.ranks.begin(), t.ranks.end(), r);
    if (k == t.ranks.end()) continue;
    per[size_t(k - t.ranks.begin())].events.push_back(e);
    if (e.shapes.rfind("collective ", 0) == 0) collectives.try_emplace({int(e.kind), e.name}, e.shapes.substr(11));
  }
  std::map<std::pair<int, std::string>, size_t> row_of;
  for (size_t k = 0; k < nr; ++k) {
    analysis::KeyAverages ka = analysis::key_averages(per[k]);
    for (const analysis::KeyAverage& a : ka.rows()) {
      auto key = std::make_pair(int(a.kind), a.name);
      auto [it, fresh] = row_of.try_emplace(key, t.rows.size());
      if (fresh) {
        RankRow row;
        row.name = a.name;
        row.kind = a.kind;
        row.count.assign(nr, 0);
        row.time_ns.assign(nr, 0);
        if (auto c = collectives.find(key); c != collectives.end()) row.collective = c->second;
        t.rows.push_back(std::move(row));
      }
      RankRow& row = t.rows[it->second];
      row.count[k] += a.count;
      // Kernels own their device time in the kernel rows' Device total.
      int64_t dev = a.kind == prof::EventKind::kernel ? a.device_total_ns : a.self_device_ns;
      row.time_ns[k] += dev > 0 ? dev : a.self_cpu_ns;
      row.device = row.device || dev > 0;
    }
  }
  for (RankRow& row : t.rows) {
    auto mx = std::max_element(row.time_ns.begin(), row.time_ns.end());
    row.max_ns = *mx;
    row.min_ns = *std::min_element(row.time_ns.begin(), row.time_ns.end());
    row.slowest_rank = t.ranks[size_t(mx - row.time_ns.begin())];
  }
  // Device rows first (what the GPUs spent), then host-only rows; each by its slowest rank.
  std::stable_sort(t.rows.begin(), t.rows.end(), [](const RankRow& a, const RankRow& b) {
    return a.device != b.device ? a.device : a.max_ns > b.max_ns;
  });
  return t;
}

std::string RankTable::text(int64_t row_limit) const {
  auto us = [](int64_t ns) { return fmt::format("{:.3f}", double(ns) / 1e3); };
  std::string out = fmt::format("{:<48} {:<6} {:<6}", "Name", "Kind", "Time");
  for (int64_t r : ranks) out += fmt::format(" {:>12}", fmt::format("rank {} us", r));
  out += fmt::format(" {:>12} {:>8}  {}\n", "max-min us", "slowest", "Collective");
  int64_t shown = 0;
  for (const RankRow& row : rows) {
    if (row_limit > 0 && shown++ >= row_limit) break;
    std::string name = row.name.size() > 48 ? row.name.substr(0, 45) + "..." : row.name;
    out += fmt::format("{:<48} {:<6} {:<6}", name, prof::kind_name(row.kind), row.device ? "device" : "cpu");
    for (int64_t v : row.time_ns) out += fmt::format(" {:>12}", us(v));
    out += fmt::format(" {:>12} {:>8}  {}\n", us(row.max_ns - row.min_ns), fmt::format("rank {}", row.slowest_rank),
                       row.collective);
  }
  out += "Time: Self Device time per rank (kernels: their device time), Self CPU where a row has no device time.\n";
  return out;
}

}  // namespace opscope::importer
