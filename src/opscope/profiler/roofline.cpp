#include "opscope/profiler/roofline.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "opscope/profiler/annotate.h"

namespace opscope::prof {

double Roofline::attainable_gflops(double ai) const {
  if (!known()) return 0;
  return std::min(peak_gflops, ai * peak_gbps);
}

double Roofline::fraction(double gbps, double gflops) const {
  double f = 0;
  if (peak_gbps > 0) f = std::max(f, gbps / peak_gbps);
  if (peak_gflops > 0) f = std::max(f, gflops / peak_gflops);
  return f;
}

Roofline roofline_from_config(std::string_view config_json) {
  Roofline r;
  if (config_json.empty()) return r;
  auto cfg = nlohmann::json::parse(config_json, nullptr, false);
  if (!cfg.is_object()) return r;
  auto number = [](const nlohmann::json& j, const char* key) {
    return j.contains(key) && j[key].is_number() ? std::max(0.0, j[key].get<double>()) : 0.0;
  };
  if (cfg.contains("device_peaks") && cfg["device_peaks"].is_object()) {
    r.peak_gbps = number(cfg["device_peaks"], "copy_gbps");
    r.peak_gflops = number(cfg["device_peaks"], "matmul_gflops");
  }
  if (r.peak_gbps == 0) r.peak_gbps = number(cfg, "peak_gbps");
  return r;
}

void attach_device_peaks(const std::string& peaks_json) {
  auto peaks = nlohmann::json::parse(peaks_json);
  set_trace_annotator("device_peaks", [peaks](Trace& t) {
    auto cfg = t.config_json.empty() ? nlohmann::ordered_json::object()
                                     : nlohmann::ordered_json::parse(t.config_json, nullptr, false);
    if (!cfg.is_object()) return;  // not ours to rewrite
    cfg["device_peaks"] = peaks;
    if (peaks.contains("copy_gbps")) cfg["peak_gbps"] = peaks["copy_gbps"];
    t.config_json = cfg.dump();
  });
}

}  // namespace opscope::prof
