// The advisor's findings as text for the terminal and as JSON; the explorer shows the
// same titles and figures (explorer/recommend.cpp).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "opscope/analysis/advisor/advise.h"

namespace opscope::advisor {

namespace {

std::string ms(double ns) { return fmt::format("{:.3f} ms", ns / 1e6); }

// The fused kernel's math, overlapped with its streaming: "; math 0.730 ms (...)",
// where it is a tenth of the kernel's time or more.
std::string math_text(const Suggestion& s) {
  if (s.compute_ns <= 0 || s.compute_ns < 0.1 * s.predicted_fused_ns()) return "";
  return fmt::format("; math {} ({})", ms(s.compute_ns),
                     s.math_from.empty() ? "the eager math ops' time past their streaming" : s.math_from);
}
}  // namespace

std::string format_bytes(double b) {
  if (b >= double(1 << 30)) return fmt::format("{:.2f} GiB", b / double(1 << 30));
  if (b >= double(1 << 20)) return fmt::format("{:.1f} MiB", b / double(1 << 20));
  return fmt::format("{:.1f} KiB", b / 1024);
}

std::string Suggestion::count_text() const {
  int64_t calls = std::max<int64_t>(occurrences, 1);
  return fmt::format("{} ops × {} call{}", ops.size(), calls, calls == 1 ? "" : "s");
}

std::string Suggestion::title() const {
  if (kind == "epilogue" && ops.size() >= 2) {
    std::string tail;
    for (size_t i = 1; i < ops.size(); ++i) tail += (i > 1 ? " and " : "") + ops[i];
    return fmt::format("Fuse {} into {}'s epilogue", tail, ops.front());
  }
  if (!known_op.empty()) return fmt::format("Replace the {}-op {} with one fused kernel", ops.size(), known_op);
  if (!scope.empty()) return fmt::format("Compile '{}': {} fusable ops in a row", scope, ops.size());
  return fmt::format("Compile {} fusable ops in a row", ops.size());
}

std::vector<std::pair<std::string, std::string>> Advice::figures(const Suggestion& s) const {
  double share = total_device_ns ? 100.0 * s.predicted_saved_ns / double(total_device_ns) : 0.0;
  std::string fused =
      s.kind == "epilogue"
          ? "none: " + s.rate_from
          : fmt::format("{} over the {}: {} at {:.1f} GB/s, {}", ms(s.predicted_fused_ns()),
                        s.occurrences == 1 ? std::string("call") : fmt::format("{} calls", s.occurrences),
                        format_bytes(double(s.fused_bytes)), s.bandwidth_gbps, s.rate_from) +
                math_text(s);
  std::vector<std::pair<std::string, std::string>> f = {
      {"fix", s.fix},
      {"predicted saving",
       s.gaps_ns > 0 ? fmt::format("{} of its {} device time and {} launch gaps", ms(s.predicted_saved_ns),
                                   ms(double(s.device_ns)), ms(double(s.gaps_ns)))
                     : fmt::format("{} of {} device time ({:.1f}%)", ms(s.predicted_saved_ns),
                                   ms(double(total_device_ns)), share)},
      {"occurs", s.count_text() + (s.context.empty() ? "" : " in " + s.context)},
      {"now", fmt::format("{} in {} launches, {} moved", ms(double(s.device_ns)), s.launches, format_bytes(double(s.bytes)))},
      {"fused kernel", fused}};
  if (s.gaps_ns > 0)  // a GPU's idle time between the chain's kernels
    f.push_back({"launch gaps", fmt::format("{} between its kernels, which fusing removes", ms(double(s.gaps_ns)))});
  f.push_back({"sequence", s.pattern});
  return f;
}

std::string Advice::host_wait_text() const {
  const HostWait& w = host_wait;
  if (!w.significant()) return "";
  return fmt::format(
      "The device waits on the host for {} of the {} span ({:.0f}%), in {} gaps between kernels while the host is "
      "still launching. Fewer launches cut it (fuse or compile the sequences above), and so do larger batches "
      "(more work per launch).",
      ms(double(w.idle_ns)), ms(double(w.span_ns)), 100 * w.fraction(), w.gaps);
}

// A finding's evidence on one line: "rank 0; host wait 1.2 ms in 40 gaps; ...".
static std::string evidence_text(const Finding& f) {
  std::string out;
  for (auto& [label, text] : f.evidence) out += (out.empty() ? "" : "; ") + label + " " + text;
  return out;
}

std::string Advice::findings_text() const {
  std::string out;
  for (const Finding& f : findings)
    out += fmt::format("\n{}{}\n    {}\n    {:<9} {}\n    {:<9} {}\n", f.title,
                       f.impact_ns > 0 ? fmt::format(" ({} at stake)", ms(f.impact_ns)) : "", f.detail,
                       "fix:", f.fix, "evidence:", evidence_text(f));
  return out;
}

std::string Advice::table(int limit) const {
  std::string out = fmt::format(
      "Advisor: {} device time in {} kernels; {} fusable sequences\n"
      "launch cost {:.0f} ns ({})\n",
      ms(double(total_device_ns)), kernels, suggestions.size(), launch_cost_ns, launch_cost_from);
  for (const std::string& w : warnings) out += "warning: " + w + "\n";
  out += findings_text();
  if (suggestions.empty() && !compiled.empty())
    return out + "Nothing left to fuse: the compiled regions' fused kernels run their chains, and no two fusable "
                 "ops run back to back outside them.\n";
  if (suggestions.empty()) return out + "Nothing to fuse: no two fusable ops run back to back.\n";
  int shown = 0;
  for (const Suggestion& s : suggestions) {
    if (limit > 0 && shown >= limit) break;
    out += fmt::format("\n{:>2}. {}\n", ++shown, s.title());
    for (auto& [label, text] : figures(s)) out += fmt::format("    {:<17} {}\n", label + ":", text);
  }
  if (limit > 0 && int(suggestions.size()) > limit)
    out += fmt::format("\n... {} more (--limit 0 shows all)\n", suggestions.size() - size_t(limit));
  double all = 0;
  int64_t gaps = 0;
  for (const Suggestion& s : suggestions) all += s.predicted_saved_ns, gaps += s.gaps_ns;
  if (gaps > 0)  // a GPU's launch gaps count too: the saving can exceed the device time
    out += fmt::format("\nFusing all of them would save {}: device time (of {}) and {} of launch gaps between their "
                       "kernels.\n",
                       ms(all), ms(double(total_device_ns)), ms(double(gaps)));
  else
    out += fmt::format("\nFusing all of them would save {} of {} device time ({:.1f}%).\n", ms(all),
                       ms(double(total_device_ns)), total_device_ns ? 100.0 * all / double(total_device_ns) : 0.0);
  return out;
}

std::string Advice::to_json(int limit) const {
  nlohmann::ordered_json j;
  j["total_device_ns"] = total_device_ns;
  j["kernels"] = kernels;
  j["launch_cost_ns"] = launch_cost_ns;
  j["fanout_cost_ns"] = fanout_cost_ns;
  j["launch_cost_from"] = launch_cost_from;
  j["peak_gbps"] = peak_gbps;
  j["warnings"] = warnings;
  j["host_wait"] = {{"idle_ns", host_wait.idle_ns},
                    {"gaps", host_wait.gaps},
                    {"span_ns", host_wait.span_ns},
                    {"fraction", host_wait.fraction()},
                    {"significant", host_wait.significant()},
                    {"text", host_wait_text()}};
  j["findings"] = nlohmann::ordered_json::array();
  for (const Finding& f : findings) {
    nlohmann::ordered_json ev = nlohmann::ordered_json::array();
    for (auto& [label, text] : f.evidence) ev.push_back({{"label", label}, {"text", text}});
    j["findings"].push_back({{"kind", f.kind}, {"title", f.title}, {"detail", f.detail}, {"fix", f.fix},
                             {"impact_ns", f.impact_ns}, {"rank", f.rank}, {"t0", f.t0}, {"t1", f.t1},
                             {"evidence", ev}});
  }
  j["compiled"] = nlohmann::ordered_json::array();
  for (const CompiledKernel& k : compiled)
    j["compiled"].push_back(
        {{"kernel", k.name}, {"origins", k.origins}, {"launches", k.launches}, {"device_ns", k.device_ns}});
  j["suggestions"] = nlohmann::ordered_json::array();
  int rank = 0;
  for (const Suggestion& s : suggestions) {
    if (limit > 0 && rank >= limit) break;
    nlohmann::ordered_json figs = nlohmann::ordered_json::array();
    for (auto& [label, text] : figures(s)) figs.push_back({{"label", label}, {"text", text}});
    j["suggestions"].push_back({{"rank", ++rank},
                                {"title", s.title()},
                                {"known_op", s.known_op},
                                {"fix", s.fix},
                                {"scope", s.scope},
                                {"kind", s.kind},
                                {"pattern", s.pattern},
                                {"ops", s.ops},
                                {"context", s.context},
                                {"occurrences", s.occurrences},
                                {"launches", s.launches},
                                {"device_ns", s.device_ns},
                                {"gaps_ns", s.gaps_ns},
                                {"bytes", s.bytes},
                                {"fused_bytes", s.fused_bytes},
                                {"bandwidth_gbps", s.bandwidth_gbps},
                                {"rate_from", s.rate_from},
                                {"compute_ns", s.compute_ns},
                                {"math_from", s.math_from},
                                {"predicted_saved_ns", s.predicted_saved_ns},
                                {"predicted_fused_ns", s.predicted_fused_ns()},
                                {"figures", figs},
                                {"example_ops", s.example_ops}});
  }
  return j.dump(2);
}

}  // namespace opscope::advisor
