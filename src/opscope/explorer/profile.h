// One profile as the explorer holds it: the loaded Trace with its indexes, or the error
// that kept it from loading (a corrupt profile is listed with its error, never fatal).
// Immutable once built, so the server's threads read it without locks; the summary and
// the operator table are computed on first use.
#pragma once
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "opscope/analysis/key_averages.h"
#include "opscope/explorer/correlation.h"
#include "opscope/explorer/memory_track.h"
#include "opscope/explorer/timeline_index.h"
#include "opscope/profiler/trace.h"

namespace opscope::explorer {

class Profile {
 public:
  // A loaded profile (label: what the UI calls it; source: the folder, for display only).
  Profile(std::string label, std::string source, prof::Trace trace);
  // One that failed to load.
  static std::shared_ptr<Profile> failed(std::string label, std::string source, std::string error);

  const std::string& label() const { return label_; }
  const std::string& source() const { return source_; }
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

  const prof::Trace& trace() const { return trace_; }
  const TimelineIndex& timeline() const { return *timeline_; }
  const CorrelationIndex& correlation() const { return *corr_; }
  const analysis::KeyAverages& key_averages() const;  // ungrouped, computed once
  const nlohmann::json& summary() const;          // summarize(*this), computed once (summary.cpp)
  const std::vector<MemoryTrack>& memory() const;  // allocated bytes per device, computed once

 private:
  Profile() = default;
  std::string label_, source_, error_;
  prof::Trace trace_;
  std::unique_ptr<TimelineIndex> timeline_;
  std::unique_ptr<CorrelationIndex> corr_;
  mutable std::once_flag ops_once_;
  mutable std::optional<analysis::KeyAverages> ops_;
  mutable std::once_flag summary_once_;
  mutable nlohmann::json summary_;
  mutable std::once_flag memory_once_;
  mutable std::vector<MemoryTrack> memory_;
};

using ProfilePtr = std::shared_ptr<const Profile>;

// Loads a saved profile folder (or profile.db); on any error returns a failed Profile
// whose error names the path. The label is the folder's last component.
ProfilePtr open_profile(const std::string& path);

// The profiles a path given to `opscope explore` holds: the path itself when it is one (a
// folder with profile.db, a profile.db, a trace file, a folder of traces, a job's folder
// of rank-N profiles), else its
// subfolders that are, in name order (`opscope profile --out p` writes p/naive,
// p/builtin, p/compiled). A folder with neither comes back as is: opening it says why.
std::vector<std::string> profiles_in(const std::string& path);

}  // namespace opscope::explorer
