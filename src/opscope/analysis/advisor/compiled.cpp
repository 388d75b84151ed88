#include "opscope/analysis/advisor/compiled.h"

#include <fmt/format.h>
#include <fmt/ranges.h>


#include "opscope/analysis/analyze_figures.h"
#include "opscope/analysis/kernel_origins.h"
#include "opscope/analysis/key_averages.h"

namespace opscope::advisor {

namespace {

std::string pct(int64_t part, int64_t whole) {
  return whole > 0 ? fmt::format("{:.0f}%", 100.0 * double(part) / double(whole)) : "0%";
}

}  // namespace

CompiledView compiled_view(const prof::Trace& trace) {
  CompiledView v;
  if (analysis::kernel_origins(trace).empty()) return v;  // eager: no second pass over the trace
  for (const analysis::KeyAverage& r : analysis::key_averages(trace).sorted("device_time_total")) {
    if (r.kind != prof::EventKind::kernel) continue;
    v.kernel_ns += r.device_total_ns;
    if (!r.origins.empty() && r.count > 0) v.fused.push_back({r.name, r.origins, r.count, r.device_total_ns});
    else if (r.origins.empty() && v.unfused.size() < 3) v.unfused.push_back(r.name);
  }
  return v;
}

std::optional<Finding> compiled_finding(const CompiledView& v) {
  const std::vector<CompiledKernel>& fused = v.fused;
  if (fused.empty()) return {};
  int64_t fused_ns = 0, launches = 0;
  for (const CompiledKernel& k : fused) fused_ns += k.device_ns, launches += k.launches;
  std::vector<std::string> named;
  for (size_t i = 0; i < fused.size() && i < 3; ++i)
    named.push_back(fmt::format("{} ← {} ({} launches, {})", fused[i].name, fused[i].origins, fused[i].launches,
                                analysis::human_ns(fused[i].device_ns)));
  Finding f;
  f.kind = "compiled";
  f.title = fmt::format("Compiled: {} fused kernel{} already run{} the program's elementwise chains", fused.size(),
                        fused.size() == 1 ? "" : "s", fused.size() == 1 ? "s" : "");
  f.detail = fmt::format("{} launches of fused kernels take {} ({} of the device time): {}{}.", launches,
                         analysis::human_ns(fused_ns), pct(fused_ns, v.kernel_ns), fmt::join(named, "; "),
                         fused.size() > 3 ? fmt::format("; and {} more", fused.size() - 3) : "");
  f.fix = v.unfused.empty() ? "nothing is left to fuse"
                            : fmt::format("nothing in them is left to fuse; the rest of the time is in kernels the "
                                          "compiler kept as they are (largest: {}): see their GB/s and % of roof in "
                                          "the table",
                                          fmt::join(v.unfused, ", "));
  f.evidence.push_back({"fused kernels", fmt::format("{} ({} launches)", fused.size(), launches)});
  return f;
}

void fixes_for_compiled(std::vector<Finding>& findings) {
  for (Finding& f : findings) {
    if (f.kind == "host_bound" || f.kind == "launch_bound")
      f.fix = "the program is compiled already: a larger batch gives each launch more work; on a GPU, CUDA graphs "
              "remove each launch's cost on the host";
    else if (f.kind == "small_kernels")
      f.fix = "the program is compiled already (its fused kernels are listed under 'Compiled'): a larger batch gives "
              "each kernel more work";
  }
}

}  // namespace opscope::advisor
