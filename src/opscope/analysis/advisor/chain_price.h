// What fusing each chain saves (advise.h's model):
//
//   saved = Σ device time of the chain's kernels + the gaps between them − one fused kernel
//   fused = launch cost + max(fused bytes / rate, Σ compute)   (a roofline)
//
// The gaps count on a GPU only: the idle time between one of the chain's kernels and the
// next on its stream, each up to the kernel-wait threshold (the trace's own per-kernel
// launch gap; a longer gap waited on something fusing does not remove). A matmul's
// epilogue (chains.h) saves its kernels and their gaps whole: the matmul finishes its
// output tile in registers before writing it once.
//
// Each suggestion's saving is its occurrences × the median occurrence's, at most their
// sum: a launch the OS preempted would otherwise add its wait to the prediction.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "opscope/analysis/advisor/chains.h"
#include "opscope/analysis/advisor/launch_cost.h"
#include "opscope/analysis/peaks.h"

namespace opscope::advisor {

// The streaming rate of a kernel moving `ws` bytes (pricing.h): the roof's at that
// size, else (no peaks) `fallback`.
double stream_rate(const analysis::Roofline& roof, double ws, double fallback);

struct PricingContext {
  const ProfileOps& ops;
  const analysis::Peaks& peaks;
  const analysis::Roofline& roof;
  LaunchCost cost;
  double best_seen = 0;         // the best rate a launch reached: the rate without peaks
  int64_t kernel_wait_ns = 0;   // the most one gap between a chain's kernels saves

  double rate_at(double ws, double fallback) const { return stream_rate(roof, ws, fallback); }
  // The fixed cost of an op's launches.
  double fixed_of(const Op* o) const;
};

// The suggestions, unsorted.
std::vector<Suggestion> price_chains(const FoundChains& found, const PricingContext& ctx);

}  // namespace opscope::advisor
