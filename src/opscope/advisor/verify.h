// `opscope advise --verify`: the advisor checks itself. For each of the top suggestions
// it finds the region of the case study that implements the sequence (the decoder's
// compiled regions; the RMSNorm case study's built-in and compiled kernels), runs the
// profiled workload again with that fix and, alternately, without, and measures the
// device time saved — set beside the prediction.
//
// Realized saving = device time of the kernels launched inside the region's scope (its
// range when eager, its compiled function's op when compiled) that the fusion changed,
// eager minus compiled, the median over alternated runs. Kernels outside the region, and
// kernels inside it launched as often either way (matmuls, concats, ops the fuser left
// alone), did the same work in both runs: leaving them out keeps their run-to-run noise
// out of the figure. The difference over every kernel in the region is reported too.
// The prediction is the advisor's on each eager run of the check, so a machine that got
// slower or faster since the profile does not count as the model's error.
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "opscope/analysis/advisor/advise.h"

namespace opscope::advisor {

struct VerifyOptions {
  int top = 3;   // suggestions to check, from the top of the ranking
  int reps = 3;  // alternated eager / compiled profiled runs per region
};

struct RegionCheck {
  std::string region;                 // the model region compiled
  std::string scope;                  // the range / compiled op its kernels run in
  std::string predicted_from = "region";  // "region": ops in its scope; "pattern": its runs anywhere
  std::vector<int> ranks;             // the suggestions it covers (1-based ranks)
  std::vector<std::string> patterns;  // and their sequences (context)
  double profile_predicted_ns = 0;    // the advisor's prediction from the profile given
  double predicted_saved_ns = 0;      // its prediction from each eager run of the check: median
  double realized_saved_ns = 0;       // eager − compiled over the changed kernels, each pair of runs: median
  double region_saved_ns = 0;         // eager − compiled over every kernel in the region: median
  std::vector<double> predicted_runs, realized_runs, region_saved_runs;
  double eager_ns = 0, compiled_ns = 0;  // medians of the device time inside the region's scope

  // (realized − predicted) / predicted; 0 without a prediction.
  double error() const {
    return predicted_saved_ns > 0 ? (realized_saved_ns - predicted_saved_ns) / predicted_saved_ns : 0;
  }
  bool within(double tolerance) const { return predicted_saved_ns > 0 && std::abs(error()) <= tolerance; }
};

struct Verification {
  std::string workload;               // what was re-run
  std::vector<RegionCheck> checks;
  std::vector<std::string> skipped;   // top suggestions no region implements, and why
  std::string table() const;
  std::string to_json() const;
};

// `eager` must be a profile written by `opscope profile llama` in eager mode (its config
// names the model and workload) or by `opscope profile rmsnorm --impl naive` (its config's
// "workload"); throws "[advise --verify] ..." otherwise: an imported trace, an unknown
// workload, a profile that names none.
Verification verify(const prof::Trace& eager, const Advice& advice, const VerifyOptions& options = {});

// The RMSNorm case study at the profile's shape: the naive six ops, profiled, against
// each fix the top suggestion names — the built-in rms_norm and the compiled function —
// alternated; realized = naive − fixed device time inside each call's range.
Verification verify_rmsnorm(const prof::Trace& naive, const Advice& advice, const VerifyOptions& options);

}  // namespace opscope::advisor
