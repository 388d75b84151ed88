#include "opscope/importer/analyze_traces.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "opscope/core/error.h"
#include "opscope/importer/import.h"
#include "opscope/profiler/store.h"

namespace opscope::importer {

namespace {

// The rank a file's distributedInfo names (-1: none), from the imported config.
int64_t recorded_rank(const prof::Trace& t) {
  auto cfg = nlohmann::json::parse(t.config_json, nullptr, false);
  if (!cfg.is_object()) return -1;
  const auto& ranks = cfg["imported_from"]["ranks"];
  if (!ranks.is_array() || ranks.empty() || !ranks[0]["rank"].is_number_integer()) return -1;
  return ranks[0]["rank"].get<int64_t>();
}

}  // namespace

analysis::TraceAnalysis analyze_path(const std::string& path, const analysis::AnalyzeOptions& o) {
  analysis::check_analyze_options(o);
  if (!is_trace_path(path)) {
    analysis::TraceAnalysis a = analysis::analyze(prof::load_profile(path), o);
    a.source = path;
    return a;
  }
  std::vector<std::string> files = trace_files({path});
  // One rank per file, one file at a time (a lone file: the rank it records, if any).
  analysis::TraceAnalysis a;
  a.options = o;
  a.source = path;
  std::vector<std::string> notes;
  int64_t without_start = 0, without_finish = 0, with_unmatched = 0;
  std::vector<std::pair<int64_t, std::string>> seen;  // (rank, file)
  for (size_t i = 0; i < files.size(); ++i) {
    ImportResult r = import_traces({files[i]});
    // The file's own edge-of-window flows are summed into one line for the folder.
    std::string flows = unmatched_flows_note(r.flows_without_start, r.flows_without_finish, 1, 1);
    for (const std::string& w : r.warnings)
      if (flows.empty() || w != files[i] + ": " + flows) notes.push_back(w);
    without_start += r.flows_without_start;
    without_finish += r.flows_without_finish;
    with_unmatched += r.flows_without_start + r.flows_without_finish > 0;

    int64_t rank = recorded_rank(r.trace);
    if (rank < 0 && files.size() > 1) rank = int64_t(i);
    for (auto& [other, file] : seen)
      if (other == rank)
        fail("import", "{}: rank {} again ({} is rank {} too): give the ranks of one run", files[i], rank, file, rank);
    seen.emplace_back(rank, files[i]);
    if (o.rank != analysis::kAllRanks && rank != o.rank) continue;
    analysis::RankView view = analysis::rank_view(r.trace, -1);
    view.rank = rank;
    analysis::RankAnalysis ra = analysis::analyze_rank(view, o);
    ra.source = files[i];
    a.ranks.push_back(std::move(ra));
  }
  if (o.rank != analysis::kAllRanks && a.ranks.empty()) {
    std::vector<int64_t> ranks;
    for (auto& [rank, file] : seen) ranks.push_back(rank);
    std::sort(ranks.begin(), ranks.end());
    if (ranks == std::vector<int64_t>{-1}) fail("--rank", "rank {} is not in {}: it records no rank", o.rank, path);
    fail("--rank", "rank {} is in no trace of {} (its ranks: {})", o.rank, path, fmt::join(ranks, ", "));
  }
  std::sort(a.ranks.begin(), a.ranks.end(),
            [](const analysis::RankAnalysis& x, const analysis::RankAnalysis& y) { return x.rank < y.rank; });
  std::string flows = unmatched_flows_note(without_start, without_finish, with_unmatched, int64_t(files.size()));
  if (!flows.empty()) notes.push_back(flows);
  analysis::add_rank_warnings(a);
  a.warnings.insert(a.warnings.begin(), notes.begin(), notes.end());
  return a;
}

}  // namespace opscope::importer
