// `opscope advise --verify`: the advisor checks itself. For each of the top suggestions
// it finds the region of the decoder case study that implements the sequence, runs the
// profiled workload again with that region compiled and, alternately, eager, and
// measures the device time saved — set beside the prediction.
//
// Realized saving = device time of the kernels a fusion can change (every kernel except
// those launched by ops that never fuse: matmul, softmax, concat, embedding), eager
// minus compiled, the median over alternated runs. Ops that never fuse run the same
// kernels either way, so leaving them out keeps their run-to-run noise out of the figure.
#pragma once
#include <string>
#include <vector>

#include "opscope/advisor/advise.h"

namespace opscope::advisor {

struct VerifyOptions {
  int top = 3;   // suggestions to check, from the top of the ranking
  int reps = 3;  // alternated eager / compiled profiled runs per region
};

struct RegionCheck {
  std::string region;                 // the model region compiled
  std::vector<int> ranks;             // the suggestions it covers (1-based ranks)
  std::vector<std::string> patterns;  // and their sequences (context)
  double predicted_saved_ns = 0;      // the advisor's prediction, summed over them
  double realized_saved_ns = 0;       // median over the runs
  std::vector<double> realized_runs;
  double eager_ns = 0, compiled_ns = 0;  // medians of the changeable kernels' device time

  // (realized − predicted) / predicted; 0 without a prediction.
  double error() const {
    return predicted_saved_ns > 0 ? (realized_saved_ns - predicted_saved_ns) / predicted_saved_ns : 0;
  }
};

struct Verification {
  std::string workload;               // what was re-run
  std::vector<RegionCheck> checks;
  std::vector<std::string> skipped;   // top suggestions no region implements, and why
  std::string table() const;
  std::string to_json() const;
};

// `eager` must be a profile written by `opscope profile llama` in eager mode (its config
// names the model and workload); throws "[advise --verify] ..." otherwise.
Verification verify(const prof::Trace& eager, const Advice& advice, const VerifyOptions& options = {});

}  // namespace opscope::advisor
