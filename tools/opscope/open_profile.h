// What `opscope table|explore|diff|advise` open: a saved profile, or a torch.profiler
// trace (file or folder of per-rank traces) imported in memory, with the import's
// warnings on stderr.
#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include "opscope/core/error.h"
#include "opscope/importer/import.h"

namespace opscope::cli {

inline void print_warnings(const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings) std::fprintf(stderr, "opscope: warning: %s\n", w.c_str());
}

// The roofline flags of import and table: numbers >= 0 (0: not given).
inline void check_peak_flags(double gbps, double gflops) {
  if (!(gbps >= 0) || gbps > 1e9) fail("--peak-gbps", "{} is not a bandwidth in GB/s (>= 0)", gbps);
  if (!(gflops >= 0) || gflops > 1e12) fail("--peak-gflops", "{} is not a rate in GFLOP/s (>= 0)", gflops);
}

inline prof::Trace open_profile(const std::string& path) {
  std::vector<std::string> warnings;
  prof::Trace t = importer::load_profile_or_trace(path, &warnings);
  print_warnings(warnings);
  return t;
}

}  // namespace opscope::cli
