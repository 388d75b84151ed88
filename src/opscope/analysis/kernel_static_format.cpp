// `opscope kernel --static`'s listing and JSON (kernel_static.h).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>

#include "opscope/analysis/kernel_static.h"
#include "opscope/analysis/text_out.h"
#include "opscope/debuginfo/source_text.h"

namespace opscope::analysis {

namespace {

constexpr int kSourceLinesShown = 8;

std::string per(double x) { return x < 0 ? "?" : fmt::format("{:.2f}", x); }

std::string lines_of(const debuginfo::LoopFacts& f) {
  if (f.file.empty()) return "(no line table)";
  std::string name = f.file.substr(f.file.find_last_of('/') + 1);
  return f.first_line == f.last_line ? fmt::format("{}:{}", name, f.first_line)
                                     : fmt::format("{}:{}-{}", name, f.first_line, f.last_line);
}

std::string width_text(const std::array<int, 4>& w) {
  std::string out;
  const char* names[4] = {"scalar", "128-bit", "256-bit", "512-bit"};
  for (int i = 3; i >= 0; --i)
    if (w[size_t(i)]) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", names[i], w[size_t(i)]);
  return out.empty() ? "none" : out;
}

std::string mix_text(const debuginfo::LoopFacts& f) {
  std::string out;
  for (int c = 0; c < debuginfo::kNumInstrClasses; ++c)
    if (f.classes[size_t(c)])
      out += fmt::format("{}{} {}", out.empty() ? "" : ", ", debuginfo::class_name(debuginfo::InstrClass(c)),
                         f.classes[size_t(c)]);
  return out;
}

void loop_text(std::string& out, const StaticKernel& k, const StaticLoop& l, int64_t kernel_samples) {
  const debuginfo::LoopFacts& f = l.facts;
  put(out, "  {} loop {} at {:#x}-{:#x}: {} instructions, widest {}\n", l.remainder ? "tail/fallback" : "main", lines_of(f),
      f.head, f.latch, f.instructions, f.widest == debuginfo::VectorWidth::scalar ? "scalar" : fmt::format("{}-bit", int(f.widest)));
  put(out, "      compute by width: {}; mix: {}\n", width_text(f.compute_by_width), mix_text(f));
  if (l.elements > 0)
    put(out, "      per iteration {:g} elements: loads {} / element, stores {} / element, {} B / element\n", l.elements,
        per(l.loads_per_element), per(l.stores_per_element), per(l.bytes_per_element));
  else
    put(out, "      per iteration: {} loads, {} stores ({} B); no stream with a constant step, so no per-element figure\n",
        f.loads, f.stores, f.read_bytes + f.write_bytes);
  if (f.stack_accesses || f.gathers || f.calls || f.converts)
    put(out, "      stack accesses {}, gathers {}, calls {}, converts {} ({} scalar)\n", f.stack_accesses, f.gathers,
        f.calls, f.converts, f.scalar_converts);
  if (l.samples >= 0)
    put(out, "      samples {} ({:.1f}% of the kernel's in this library)\n", l.samples,
        kernel_samples ? 100.0 * double(l.samples) / double(kernel_samples) : 0.0);
  std::string path = f.file.empty() ? "" : debuginfo::find_source(f.file, k.library);
  if (path.empty() || l.remainder) return;
  for (int n = f.first_line; n <= f.last_line && n < f.first_line + kSourceLinesShown; ++n)
    put(out, "      {:>6} | {}\n", n, debuginfo::source_line(path, n));
  if (f.last_line - f.first_line >= kSourceLinesShown) put(out, "             | ...\n");
}

std::string domain_text(const StaticKernel& k) {
  std::string out;
  for (int64_t d : k.domain) out += fmt::format("{}{}", out.empty() ? "" : " x ", d);
  return out.empty() ? "?" : out;
}

}  // namespace

std::string static_text(const std::vector<StaticKernel>& kernels) {
  std::string out;
  for (const StaticKernel& k : kernels) {
    std::string ops;
    for (const std::string& o : k.ops) ops += (ops.empty() ? "" : " -> ") + o;
    put(out, "{}Kernel {} ({} in {})\n", out.empty() ? "" : "\n", k.kernel, k.symbol, k.library);
    if (k.domain.empty() && k.ops.empty())  // a built-in kernel's function: no manifest
      put(out, "  a built-in kernel's function ({}): per-element figures per loop, no domain\n", k.dtype);
    else
      put(out, "  {}: {}, domain {} ({} elements a launch), {} input{}, {} output{}, {} pass{}\n", ops.empty() ? "?" : ops,
          k.dtype, domain_text(k), k.elements, k.inputs, k.inputs == 1 ? "" : "s", k.outputs, k.outputs == 1 ? "" : "s",
          k.passes, k.passes == 1 ? "" : "es");
    int64_t sampled = 0;
    for (const StaticLoop& l : k.loops) sampled += std::max<int64_t>(0, l.samples);
    for (const StaticLoop& l : k.loops) loop_text(out, k, l, sampled);
    put(out, "  bytes per element: {} in the main loops", k.bytes_per_element < 0 ? "?" : fmt::format("{:.1f}", k.bytes_per_element));
    if (k.launches)
      put(out, ", {} recorded by {} launch{}\n",
          k.recorded_bytes_per_element < 0 ? "none" : fmt::format("{:.1f}", k.recorded_bytes_per_element), k.launches,
          k.launches == 1 ? "" : "es");
    else
      put(out, " (no profile: nothing recorded to compare)\n");
    for (const Verdict& v : k.verdicts) put(out, "  {}: {} [{}]\n", v.severity == "warn" ? "WARN" : "verdict", v.message, v.rule);
    for (const std::string& n : k.notes) put(out, "  note: {}\n", n);
  }
  return out;
}

nlohmann::json static_json(const std::vector<StaticKernel>& kernels) {
  nlohmann::json out = nlohmann::json::array();
  for (const StaticKernel& k : kernels) {
    nlohmann::json loops = nlohmann::json::array();
    for (const StaticLoop& l : k.loops) {
      const debuginfo::LoopFacts& f = l.facts;
      nlohmann::json classes = nlohmann::json::object();
      for (int c = 0; c < debuginfo::kNumInstrClasses; ++c)
        classes[debuginfo::class_name(debuginfo::InstrClass(c))] = f.classes[size_t(c)];
      loops.push_back({{"head", fmt::format("{:#x}", f.head)}, {"latch", fmt::format("{:#x}", f.latch)},
                       {"file", f.file}, {"lines", {f.first_line, f.last_line}}, {"instructions", f.instructions},
                       {"classes", classes},
                       {"widths", {{"scalar", f.compute_by_width[0]}, {"128", f.compute_by_width[1]},
                                   {"256", f.compute_by_width[2]}, {"512", f.compute_by_width[3]}}},
                       {"widest", debuginfo::width_name(f.widest)}, {"elements", l.elements},
                       {"loads_per_element", l.loads_per_element}, {"stores_per_element", l.stores_per_element},
                       {"bytes_per_element", l.bytes_per_element}, {"stack_accesses", f.stack_accesses},
                       {"gathers", f.gathers}, {"calls", f.calls}, {"converts", f.converts},
                       {"scalar_converts", f.scalar_converts}, {"remainder", l.remainder}, {"samples", l.samples}});
    }
    nlohmann::json verdicts = nlohmann::json::array();
    for (const Verdict& v : k.verdicts) verdicts.push_back({{"rule", v.rule}, {"severity", v.severity}, {"message", v.message}});
    out.push_back({{"kernel", k.kernel}, {"symbol", k.symbol}, {"library", k.library}, {"source", k.source},
                   {"dtype", k.dtype}, {"domain", k.domain}, {"elements", k.elements}, {"passes", k.passes},
                   {"ops", k.ops}, {"loops", loops}, {"bytes_per_element", k.bytes_per_element},
                   {"recorded_bytes_per_element", k.recorded_bytes_per_element}, {"launches", k.launches},
                   {"verdicts", verdicts}, {"notes", k.notes}});
  }
  return out;
}

}  // namespace opscope::analysis
