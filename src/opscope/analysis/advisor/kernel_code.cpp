#include "opscope/analysis/advisor/kernel_code.h"

#include <fmt/format.h>

#include "opscope/analysis/analyze_figures.h"
#include "opscope/analysis/kernel_static.h"

namespace opscope::advisor {

namespace {

const char* fix_for(const std::string& rule) {
  if (rule == "scalar_loop")
    return "make the loop vectorizable: a convert or call the compiler cannot vectorize is the usual cause "
           "(opscope kernel --static names the loop's lines)";
  if (rule == "spills") return "keep the loop's live values in registers: fewer accumulators, or a narrower unroll";
  if (rule == "passes") return "fuse the passes over a row, or tile the rows so that a row is still in cache for the next";
  return "read each input once per element";
}

}  // namespace

std::vector<Finding> kernel_code_findings(const prof::Trace& trace, const CompiledView& v) {
  std::vector<Finding> out;
  for (const CompiledKernel& ck : v.fused) {
    if (v.kernel_ns <= 0 || double(ck.device_ns) < kKernelCodeShare * double(v.kernel_ns)) continue;
    std::vector<analysis::StaticKernel> ks;
    try {
      ks = analysis::static_profile(trace, ck.name, "profile");
    } catch (const std::exception&) {
      continue;  // not an artifact of this machine's cache (any more)
    }
    for (const analysis::StaticKernel& k : ks)
      for (const analysis::Verdict& verdict : k.verdicts) {
        if (verdict.severity != "warn") continue;
        Finding f;
        f.kind = "kernel_code";
        f.title = fmt::format("Fused kernel {}: {}", k.kernel, verdict.message);
        f.detail = fmt::format("{} launches take {} of device time; its code ({}) says: {}.", ck.launches,
                               analysis::human_ns(ck.device_ns), k.library, verdict.message);
        f.fix = fix_for(verdict.rule);
        f.impact_ns = double(ck.device_ns);
        f.evidence.push_back({"rule", verdict.rule});
        f.evidence.push_back({"see", fmt::format("opscope kernel --static PROFILE {}", k.kernel)});
        out.push_back(std::move(f));
      }
  }
  return out;
}

}  // namespace opscope::advisor
