#include "opscope/analysis/advisor/pricing.h"

#include <nlohmann/json.hpp>

#include "opscope/compiler/math_probe.h"

namespace opscope::advisor {

double kernel_store_gbps(const analysis::Roofline& roof, double ws) { return roof.store_gbps_at(ws); }

std::map<std::string, double> generated_math_ns(std::string_view peaks_json) {
  std::map<std::string, double> out;
  auto j = nlohmann::json::parse(peaks_json.empty() ? std::string_view("{}") : peaks_json, nullptr, false);
  const std::string key(compiler::kMathCostsKey);
  if (!j.is_object() || !j.contains(key) || !j[key].is_object()) return out;
  const auto& costs = j[key].value("ns_per_element", nlohmann::json::object());
  if (!costs.is_object()) return out;
  for (auto& [op, ns] : costs.items())
    if (ns.is_number() && ns.get<double>() > 0) out[op] = ns.get<double>();
  return out;
}

}  // namespace opscope::advisor
