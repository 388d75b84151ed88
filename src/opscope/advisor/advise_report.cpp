// The advisor's ranking as a table for the terminal and as JSON.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "opscope/advisor/advise.h"

namespace opscope::advisor {

namespace {

std::string ms(double ns) { return fmt::format("{:.3f}", ns / 1e6); }
std::string mib(int64_t b) { return fmt::format("{:.1f}", double(b) / double(1 << 20)); }

}  // namespace

std::string Advice::table(int limit) const {
  std::string out = fmt::format(
      "Fusion advisor: {} fusable sequences; device time in the profile {} ms\n"
      "launch cost {:.0f} ns ({})\n",
      suggestions.size(), ms(double(total_device_ns)), launch_cost_ns, launch_cost_from);
  for (const std::string& w : warnings) out += "warning: " + w + "\n";
  if (suggestions.empty()) return out + "Nothing to fuse: no two fusable ops run back to back.\n";
  out += fmt::format("\n{:>3}  {:<14} {:>5} {:>8} {:>10} {:>10} {:>9} {:>12} {:>7}  {}\n", "#", "kind", "times",
                     "launches", "device ms", "saved ms", "% total", "MiB → fused", "GB/s", "sequence (context)");
  int shown = 0;
  for (const Suggestion& s : suggestions) {
    if (limit > 0 && shown++ >= limit) break;
    out += fmt::format("{:>3}  {:<14} {:>5} {:>8} {:>10} {:>10} {:>8.1f}% {:>12} {:>7.1f}  {}{}\n", shown,
                       s.kind, s.occurrences, s.launches, ms(double(s.device_ns)), ms(s.predicted_saved_ns),
                       total_device_ns ? 100.0 * s.predicted_saved_ns / double(total_device_ns) : 0.0,
                       mib(s.bytes) + "→" + mib(s.fused_bytes), s.bandwidth_gbps, s.pattern,
                       s.context.empty() ? "" : " (" + s.context + ")");
  }
  if (limit > 0 && int(suggestions.size()) > limit)
    out += fmt::format("... {} more (--limit 0 shows all)\n", suggestions.size() - size_t(limit));
  double all = 0;
  for (const Suggestion& s : suggestions) all += s.predicted_saved_ns;
  out += fmt::format("Fusing all of them would save {} ms of {} ms device time ({:.1f}%).\n", ms(all),
                     ms(double(total_device_ns)), total_device_ns ? 100.0 * all / double(total_device_ns) : 0.0);
  return out;
}

std::string Advice::to_json(int limit) const {
  nlohmann::ordered_json j;
  j["total_device_ns"] = total_device_ns;
  j["launch_cost_ns"] = launch_cost_ns;
  j["launch_cost_from"] = launch_cost_from;
  j["peak_gbps"] = peak_gbps;
  j["warnings"] = warnings;
  j["suggestions"] = nlohmann::ordered_json::array();
  int rank = 0;
  for (const Suggestion& s : suggestions) {
    if (limit > 0 && rank >= limit) break;
    j["suggestions"].push_back({{"rank", ++rank},
                                {"kind", s.kind},
                                {"pattern", s.pattern},
                                {"ops", s.ops},
                                {"context", s.context},
                                {"occurrences", s.occurrences},
                                {"launches", s.launches},
                                {"device_ns", s.device_ns},
                                {"bytes", s.bytes},
                                {"fused_bytes", s.fused_bytes},
                                {"bandwidth_gbps", s.bandwidth_gbps},
                                {"predicted_saved_ns", s.predicted_saved_ns},
                                {"predicted_fused_ns", s.predicted_fused_ns()},
                                {"example_ops", s.example_ops}});
  }
  return j.dump(2);
}

}  // namespace opscope::advisor
