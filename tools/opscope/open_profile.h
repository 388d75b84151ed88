// What `opscope table|explore|diff|advise` open: a saved profile, or a torch.profiler
// trace (file or folder of per-rank traces) imported in memory, with the import's
// warnings on stderr.
#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include "opscope/importer/import.h"

namespace opscope::cli {

inline void print_warnings(const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings) std::fprintf(stderr, "opscope: warning: %s\n", w.c_str());
}

inline prof::Trace open_profile(const std::string& path) {
  std::vector<std::string> warnings;
  prof::Trace t = importer::load_profile_or_trace(path, &warnings);
  print_warnings(warnings);
  return t;
}

}  // namespace opscope::cli
