// What the instructions layer recorded (Trace::samples, sampling_json), read for the
// analyses over it: how the samples were taken, and each sample's kernel and framework
// op (sample -> launch id -> kernel event's name and launching op).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "opscope/analysis/trace.h"

namespace opscope::analysis {

struct SamplingInfo {
  bool asked = false;       // the profile was taken with the instructions layer
  std::string event;        // "cycles", "cpu-clock"; "" when no event could be opened
  bool hardware = false;
  int64_t rate_hz = 0;
  bool rate_auto = false;     // opscope chose the rate from sample_cost_ns
  int64_t sample_cost_ns = 0; // one sample's interrupt on the profiled machine (0: not measured)
  int64_t period_ns = 0;
  int64_t samples = 0;      // kept (inside kernels)
  int64_t outside_kernels = 0;
  int64_t lost = 0;         // the OS's ring was full
  int64_t dropped = 0;      // over the per-core cap
  std::string warning;      // why sampling did not happen
};
SamplingInfo sampling_info(const Trace& trace);
// "cpu-clock at 10 kHz per core, 2 lost" (for headers).
std::string sampling_summary(const SamplingInfo& info);

// Throws "[what] <source>: no instruction samples: ..." naming the layer to turn on, or
// the OS's refusal recorded in the profile.
void require_samples(const Trace& trace, std::string_view what, std::string_view source);

// Each launch's kernel name and framework op name (ops of any nesting: the launching op).
class SampleOwners {
 public:
  explicit SampleOwners(const Trace& trace);
  const std::string& kernel(uint64_t launch) const;
  const std::string& op(uint64_t launch) const;  // "" when its op was not recorded
  // Device-core time inside kernel events on the tracks that have samples, in ns: what
  // the samples divide among themselves (each sample ≈ this / samples).
  int64_t sampled_kernel_ns() const { return sampled_kernel_ns_; }

 private:
  struct Names {
    std::string kernel, op;
  };
  std::unordered_map<uint64_t, Names> launches_;
  int64_t sampled_kernel_ns_ = 0;
  std::string none_;
};

}  // namespace opscope::analysis
