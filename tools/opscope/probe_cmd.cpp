// opscope probe [--save FILE] [--repeats N] [--json]
// measures the device's roofline (runtime/probe.h) and prints it with the spread of its
// repetitions; --save keeps it so tables of profiles from other runs can be read
// against one quiet measurement (`opscope table DIR --peaks FILE`), and profiles priced
// by the advisor with it; it carries the generated kernels' math costs too.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>

#include "opscope/core/error.h"
#include "opscope/profiler/atomic_file.h"
#include "opscope/runtime/device.h"
#include "opscope/runtime/probe.h"
#include "peaks_flag.h"

namespace opscope::cli {
namespace {

struct ProbeArgs {
  std::string save;
  int repeats = 5;
  bool json = false;
};

}  // namespace

void add_probe_command(CLI::App& app) {
  auto a = std::make_shared<ProbeArgs>();
  CLI::App* cmd = app.add_subcommand("probe", "Measure the device's memory and compute roofs (and how steady they are)");
  cmd->add_option("--save", a->save, "Write the measured peaks to this JSON file (for `table --peaks`)");
  cmd->add_option("--repeats", a->repeats, "Repetitions of each probe (best of, and the spread over)")
      ->capture_default_str()->check(CLI::Range(1, 100));
  cmd->add_flag("--json", a->json, "Print JSON instead of a summary");
  cmd->callback([a] {
    runtime::ProbeOptions o;
    o.repeats = a->repeats;
    runtime::DevicePeaks p = runtime::measure_peaks(cpu(), o);
    std::string json = with_math_costs(p.to_json(), a->repeats);
    if (!a->save.empty()) write_file_atomic(a->save, json + "\n", "--save");
    if (a->json) {
      std::fputs((json + "\n").c_str(), stdout);
      return;
    }
    std::string out = fmt::format("{}\n{}", p.device, p.summary());
    out += fmt::format("{:>14} {:>10} {:>9} {:>7}\n", "working set", "GB/s", "kernel", "spread");
    for (const runtime::StreamLevel& l : p.levels)
      out += fmt::format("{:>10.2f} MiB {:>10.1f} {:>9} {:>6.0f}%\n", double(l.working_set_bytes) / double(1 << 20),
                         l.gbps, l.kernel, 100 * l.spread);
    out += fmt::format("launch {:.0f} ns\n", p.launch_ns);
    auto math = nlohmann::json::parse(json).value(std::string(compiler::kMathCostsKey), nlohmann::json::object());
    if (math.contains("ns_per_element")) {
      std::string ops;
      for (auto& [op, ns] : math["ns_per_element"].items())
        ops += fmt::format("{}{} {:.2f}", ops.empty() ? "" : ", ", op, ns.get<double>());
      out += fmt::format("generated kernels' math, ns per element and core: {}\n", ops);
    }
    if (!a->save.empty()) out += fmt::format("saved to {}\n", a->save);
    std::fputs(out.c_str(), stdout);
  });
}

}  // namespace opscope::cli
