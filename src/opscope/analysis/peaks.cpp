#include "opscope/analysis/peaks.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "opscope/compiler/math_probe.h"

namespace opscope::analysis {

namespace {

using nlohmann::json;

double number(const json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? std::max(0.0, j[key].get<double>()) : 0.0;
}

std::string text(const json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

Peaks from_object(const json& p) {
  Peaks out;
  if (!p.is_object()) return out;
  out.device = text(p, "device");
  out.model = text(p, "model");
  out.method = text(p, "method");
  out.memory_gbps = number(p, "stream_gbps");
  if (out.memory_gbps == 0) out.memory_gbps = number(p, "copy_gbps");  // probes before the levels, datasheets
  out.compute_gflops = number(p, "matmul_gflops");
  out.f32_gflops = number(p, "f32_gflops");
  out.spread = number(p, "spread");
  if (p.contains("levels") && p["levels"].is_array())
    for (const auto& l : p["levels"])
      if (l.is_object() && number(l, "working_set_bytes") > 0 && number(l, "gbps") > 0)
        out.levels.push_back({number(l, "working_set_bytes"), number(l, "gbps"), number(l, "store_gbps")});
  std::sort(out.levels.begin(), out.levels.end(),
            [](const Roofline::Level& a, const Roofline::Level& b) { return a.working_set < b.working_set; });
  const std::string key(compiler::kMathCostsKey);
  if (p.contains(key) && p[key].is_object()) {
    const json& costs = p[key].value("ns_per_element", json::object());
    if (costs.is_object())
      for (auto& [op, ns] : costs.items())
        if (ns.is_number() && ns.get<double>() > 0) out.fused_math_ns[op] = ns.get<double>();
  }
  return out;
}

}  // namespace

Roofline Peaks::roofline() const {
  Roofline r;
  r.peak_gbps = memory_gbps;
  r.peak_gflops = compute_gflops;
  r.spread = spread;
  r.levels = levels;
  return r;
}

Peaks Peaks::from_json(std::string_view peaks_json) {
  return from_object(json::parse(peaks_json.empty() ? std::string_view("{}") : peaks_json, nullptr, false));
}

Peaks Peaks::from_config(std::string_view config_json) {
  auto cfg = json::parse(config_json.empty() ? std::string_view("{}") : config_json, nullptr, false);
  if (!cfg.is_object()) return {};
  Peaks p = cfg.contains("device_peaks") ? from_object(cfg["device_peaks"]) : Peaks{};
  if (p.memory_gbps == 0) p.memory_gbps = number(cfg, "peak_gbps");
  return p;
}

Peaks profile_peaks(const Trace& trace) { return Peaks::from_config(trace.config_json); }

}  // namespace opscope::analysis
