// advise(): the advisor's steps, each in its own file — the profile's launching ops
// (profile_ops), the launch cost (launch_cost), the chains (chains), their prices
// (chain_price), the trace findings from the analyses (findings).
#include "opscope/analysis/advisor/advise.h"

#include <fmt/format.h>

#include <algorithm>

#include "opscope/analysis/advisor/chain_price.h"
#include "opscope/analysis/advisor/chains.h"
#include "opscope/analysis/advisor/compiled.h"
#include "opscope/analysis/advisor/kernel_code.h"
#include "opscope/analysis/advisor/findings.h"
#include "opscope/analysis/advisor/launch_cost.h"
#include "opscope/analysis/advisor/profile_ops.h"
#include "opscope/core/error.h"

namespace opscope::advisor {

namespace {

void check(const AdviseOptions& options) {
  if (!options.pattern.empty() && options.pattern.size() < 2)
    fail("advise", "a pattern needs at least 2 ops (got {})", options.pattern.size());
  if (options.min_ops < 2) fail("advise", "min_ops must be at least 2 (got {})", options.min_ops);
  if (options.kernel_wait_ns < 0) fail("advise", "kernel_wait_ns must be >= 0 (got {})", options.kernel_wait_ns);
}

std::vector<std::string> peak_warnings(const analysis::Peaks& peaks, const analysis::Roofline& roof, bool shapes) {
  std::vector<std::string> w;
  if (!shapes) w.push_back("no input shapes (record_shapes off): the bytes of fused kernels are rough guesses");
  if (roof.peak_gbps <= 0)
    w.push_back("the profile carries no device peaks: fused kernels are priced at the best rate their own ops reached");
  else if (roof.spread > 0.15)
    w.push_back(fmt::format("the device probe's repetitions differed by {:.0f}% (a busy machine): its rates, and the "
                            "predictions priced with them, read low",
                            100 * roof.spread));
  else if (peaks.datasheet())
    w.push_back(fmt::format("priced with the {} datasheet's {:.0f} GB/s: kernels rarely reach it, so fused kernels "
                            "read somewhat fast",
                            peaks.model.empty() ? "GPU" : peaks.model, peaks.memory_gbps));
  return w;
}

}  // namespace

Advice advise(const prof::Trace& trace, const AdviseOptions& options) {
  check(options);
  Advice adv;
  const analysis::Peaks peaks = options.peaks ? *options.peaks : analysis::profile_peaks(trace);
  analysis::Roofline roof = peaks.roofline();
  if (options.peak_gbps > 0) {
    roof.peak_gbps = options.peak_gbps;
    roof.levels.clear();
  }
  adv.peak_gbps = roof.peak_gbps;

  const ProfileOps ops = profile_ops(trace);
  adv.total_device_ns = ops.total_device_ns;
  adv.kernels = ops.kernels;
  if (adv.total_device_ns == 0 || adv.kernels == 0)
    fail("advise", "the profile has no device time (were the runtime and device layers recorded?)");
  if (adv.kernels == 1)
    fail("advise", "the profile has a single kernel launch: there is no sequence to fuse and no gap between kernels");
  adv.warnings = peak_warnings(peaks, roof, ops.any_shapes);

  const double best_seen = best_launch_rate(ops.samples);
  const std::string rate_text = roof.peak_gbps <= 0 ? fmt::format("{:.1f} GB/s", best_seen)
                                : peaks.datasheet() ? std::string("the datasheet's bandwidth")
                                                    : std::string("the probe's rate for their size");
  const LaunchCost cost = fit_launch_cost(
      ops.samples, [&](double ws, double fallback) { return stream_rate(roof, ws, fallback); }, rate_text, best_seen);
  const PricingContext ctx{ops, peaks, roof, cost, best_seen, options.kernel_wait_ns};
  adv.launch_cost_ns = ctx.cost.one_core_ns;
  adv.fanout_cost_ns = ctx.cost.fanout_ns;
  adv.launch_cost_from = ctx.cost.from;

  // The trace findings, from the analyses (not for the verifier's narrowed questions).
  if (options.pattern.empty() && options.within.empty()) {
    std::optional<analysis::TraceAnalysis> own;
    const analysis::TraceAnalysis* a = options.analyses;
    if (!a) {
      analysis::AnalyzeOptions ao;
      ao.kernel_wait_ns = options.kernel_wait_ns;
      ao.per_step = true;
      own = analysis::analyze(trace, ao);
      a = &*own;
    }
    adv.host_wait = worst_host_wait(*a);
    adv.findings = trace_findings(*a);
    CompiledView compiled = compiled_view(trace);
    adv.compiled = compiled.fused;
    if (std::optional<Finding> f = packing_finding(compiled)) adv.findings.push_back(std::move(*f));
    if (!adv.compiled.empty()) {
      fixes_for_compiled(adv.findings);
      if (std::optional<Finding> f = compiled_finding(compiled)) adv.findings.push_back(std::move(*f));
      for (Finding& f : kernel_code_findings(trace, compiled)) adv.findings.push_back(std::move(f));
    }
  }

  adv.suggestions = price_chains(find_chains(ops, options), ctx);
  std::sort(adv.suggestions.begin(), adv.suggestions.end(), [](const Suggestion& a, const Suggestion& b) {
    return a.predicted_saved_ns != b.predicted_saved_ns ? a.predicted_saved_ns > b.predicted_saved_ns
                                                        : a.pattern < b.pattern;
  });
  if (trace.dropped) adv.warnings.push_back(fmt::format("{} events were dropped: times undercount", trace.dropped));
  return adv;
}

}  // namespace opscope::advisor
