// The device time of the kernels launched inside one scope of a profile, by kernel
// (name and bytes: one op at one shape), for `advise --verify`: eager and fixed runs
// compared kernel by kernel, so kernels both ran alike keep their noise out.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "opscope/analysis/peaks.h"
#include "opscope/analysis/trace.h"

namespace opscope::advisor {

struct KernelSum {
  int64_t launches = 0;
  int64_t ns = 0;  // launches × the median launch: a launch the OS preempted for another
                   // process would otherwise add its wait to the sum
  std::vector<int64_t> spans;
};
using RegionKernels = std::map<std::string, KernelSum>;

// The kernels launched inside scopes named `scope` (a range, or an op such as a
// compiled function).
RegionKernels region_kernels(const prof::Trace& t, std::string_view scope);
int64_t total_ns(const RegionKernels& r);
// Eager − fixed over the kernels the fix changed: those not launched the same number
// of times on both sides. A kernel the fixed region still runs as often (a concat, a
// matmul, an op the fuser left alone) did the same work either way; its difference is
// the machine's noise, not the fix's effect.
double changed_saved_ns(const RegionKernels& eager, const RegionKernels& fixed);
double median(std::vector<double> v);
// The profile's device peaks, when it records any, so re-runs are priced alike.
std::optional<analysis::Peaks> recorded_peaks(const prof::Trace& t);

}  // namespace opscope::advisor
