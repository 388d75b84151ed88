#include "opscope/analysis/advisor/compiled.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "opscope/analysis/analyze_figures.h"
#include "opscope/analysis/kernel_origins.h"
#include "opscope/analysis/key_averages.h"

namespace opscope::advisor {

namespace {

std::string pct(int64_t part, int64_t whole) {
  return whole > 0 ? fmt::format("{:.0f}%", 100.0 * double(part) / double(whole)) : "0%";
}

bool is_packing(const std::string& kernel) { return kernel.starts_with("pack_weights_"); }

// The span of the trace's pack_weights kernels into v; false when it has none.
bool packing_span(const prof::Trace& trace, CompiledView& v) {
  bool any = false;
  for (const prof::TraceEvent& e : trace.events) {
    if (e.kind != prof::EventKind::kernel || !is_packing(e.name)) continue;
    v.packing_t0 = any ? std::min(v.packing_t0, e.t0) : e.t0;
    v.packing_t1 = any ? std::max(v.packing_t1, e.t1) : e.t1;
    any = true;
  }
  return any;
}

}  // namespace

CompiledView compiled_view(const prof::Trace& trace) {
  CompiledView v;
  // eager: no second pass over the trace
  if (!packing_span(trace, v) && analysis::kernel_origins(trace).empty()) return v;
  for (const analysis::KeyAverage& r : analysis::key_averages(trace).sorted("device_time_total")) {
    if (r.kind != prof::EventKind::kernel) continue;
    v.kernel_ns += r.device_total_ns;
    if (is_packing(r.name)) {
      v.packing_ns += r.device_total_ns, v.packing_launches += r.count;
      continue;
    }
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

std::optional<Finding> packing_finding(const CompiledView& v) {
  if (v.packing_launches == 0) return {};
  Finding f;
  f.kind = "one_time_packing";
  f.title = fmt::format("One-time cost: the compiled graph packed its weights in this profile ({}, {} of the device "
                        "time)",
                        analysis::human_ns(v.packing_ns), pct(v.packing_ns, v.kernel_ns));
  f.detail = fmt::format("{} pack_weights launch{} reordered matmul weights into oneDNN's blocked layout. A compiled "
                         "graph packs a weight once it has held still for two calls, and reuses the pack while the "
                         "weight is unwritten: steady-state calls do not pay this.",
                         v.packing_launches, v.packing_launches == 1 ? "" : "es");
  f.fix = "profile past that call to see the steady state: a compiled model packs on its second call (the first "
          "runs eagerly while it traces), so a torch.profiler schedule with wait + warmup of 2 or more steps starts "
          "after it";
  f.impact_ns = double(v.packing_ns);
  f.t0 = v.packing_t0, f.t1 = std::max(v.packing_t1, v.packing_t0 + 1);
  f.evidence.push_back({"pack_weights", fmt::format("{} launches, {}", v.packing_launches,
                                                    analysis::human_ns(v.packing_ns))});
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
