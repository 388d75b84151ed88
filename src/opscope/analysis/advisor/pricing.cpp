#include "opscope/analysis/advisor/pricing.h"

#include "opscope/analysis/peaks.h"

namespace opscope::advisor {

double kernel_store_gbps(const analysis::Roofline& roof, double ws) { return roof.store_gbps_at(ws); }

std::map<std::string, double> generated_math_ns(std::string_view peaks_json) {
  return analysis::Peaks::from_json(peaks_json).fused_math_ns;
}

}  // namespace opscope::advisor
