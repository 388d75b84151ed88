#include "opscope/analysis/roofline.h"

#include "opscope/analysis/peaks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "opscope/core/error.h"
#include "opscope/profiler/annotate.h"

namespace opscope::analysis {

namespace {

// Log-interpolated between the levels; the smallest's below them, the largest's beyond.
template <class F>
double interpolate(const std::vector<Roofline::Level>& levels, double ws, F&& rate) {
  if (ws <= levels.front().working_set) return rate(levels.front());
  for (size_t i = 1; i < levels.size(); ++i) {
    const Roofline::Level &a = levels[i - 1], &b = levels[i];
    if (ws > b.working_set) continue;
    double f = std::log(ws / a.working_set) / std::log(b.working_set / a.working_set);
    return rate(a) + f * (rate(b) - rate(a));
  }
  return rate(levels.back());
}

}  // namespace

double Roofline::gbps_at(double ws) const {
  if (levels.empty() || ws <= 0 || ws >= levels.back().working_set) return peak_gbps;
  return interpolate(levels, ws, [](const Level& l) { return l.gbps; });
}

double Roofline::store_gbps_at(double ws) const {
  bool measured = !levels.empty() && std::all_of(levels.begin(), levels.end(), [](const Level& l) {
    return l.store_gbps > 0;
  });
  if (!measured) return gbps_at(ws);
  return interpolate(levels, std::max(ws, 1.0), [](const Level& l) { return l.store_gbps; });
}

double Roofline::attainable_gflops(double ai) const {
  if (!known()) return 0;
  return std::min(peak_gflops, ai * peak_gbps);
}

double Roofline::fraction(double gbps, double gflops, double working_set) const {
  double f = 0;
  double roof = gbps_at(working_set);
  if (roof > 0) f = std::max(f, gbps / roof);
  if (peak_gflops > 0) f = std::max(f, gflops / peak_gflops);
  return f;
}

std::string Roofline::format_fraction(double f) {
  return f > kAboveRoof ? std::string("above roof") : fmt::format("{:.1f}%", 100 * f);
}

Roofline roofline_from_config(std::string_view config_json) { return Peaks::from_config(config_json).roofline(); }

std::string with_device_peaks(std::string_view config_json, std::string_view peaks_json) {
  auto peaks = nlohmann::ordered_json::parse(peaks_json, nullptr, false);
  if (!peaks.is_object() || !(peaks.contains("stream_gbps") || peaks.contains("copy_gbps")))
    fail("peaks", "not a device probe's JSON (expected an object with stream_gbps, as `opscope probe --save` writes)");
  auto cfg = config_json.empty() ? nlohmann::ordered_json::object()
                                 : nlohmann::ordered_json::parse(config_json, nullptr, false);
  if (!cfg.is_object()) cfg = nlohmann::ordered_json::object();
  cfg["device_peaks"] = peaks;
  cfg["peak_gbps"] = peaks.contains("stream_gbps") ? peaks["stream_gbps"] : peaks["copy_gbps"];
  return cfg.dump();
}

std::string with_peak_gbps(std::string_view config_json, double gbps) {
  auto cfg = config_json.empty() ? nlohmann::ordered_json::object()
                                 : nlohmann::ordered_json::parse(config_json, nullptr, false);
  if (!cfg.is_object()) cfg = nlohmann::ordered_json::object();
  auto& p = cfg["device_peaks"];
  if (!p.is_object()) p = nlohmann::ordered_json::object();
  p["stream_gbps"] = gbps;
  p.erase("levels");
  p["method"] = "memory roof given by hand (--peak-gbps)";
  cfg["peak_gbps"] = gbps;
  return cfg.dump();
}

std::string load_device_peaks(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("--peaks", "cannot read '{}'", path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto peaks = nlohmann::json::parse(ss.str(), nullptr, false);
  if (!peaks.is_object() || !(peaks.contains("stream_gbps") || peaks.contains("copy_gbps")))
    fail("--peaks", "'{}' is not a saved device probe (expected the JSON `opscope probe --save` writes)", path);
  return ss.str();
}

void attach_device_peaks(const std::string& peaks_json) {
  auto peaks = nlohmann::json::parse(peaks_json);
  prof::set_trace_annotator("device_peaks", [peaks](prof::Trace& t) {
    auto cfg = t.config_json.empty() ? nlohmann::ordered_json::object()
                                     : nlohmann::ordered_json::parse(t.config_json, nullptr, false);
    if (!cfg.is_object()) return;  // not ours to rewrite
    cfg["device_peaks"] = peaks;
    if (peaks.contains("stream_gbps")) cfg["peak_gbps"] = peaks["stream_gbps"];
    else if (peaks.contains("copy_gbps")) cfg["peak_gbps"] = peaks["copy_gbps"];
    t.config_json = cfg.dump();
  });
}

}  // namespace opscope::analysis
