// opscope import TRACE... [--out DIR] [--peak-gbps X] [--peak-gflops Y]
// turns torch.profiler traces (trace.json, *.pt.trace.json.gz, the legacy array; a
// folder or several files: one rank each) into an opscope profile folder (trace.json +
// profile.db), which table, query, explore, diff and advise read.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "open_profile.h"
#include "opscope/core/error.h"
#include "opscope/importer/gpu_peaks.h"
#include "opscope/importer/import.h"
#include "opscope/profiler/store.h"

namespace opscope::cli {
namespace {

struct ImportArgs {
  std::vector<std::string> traces;
  std::string out;
  importer::ImportOptions options;
};

// "runs/step.pt.trace.json.gz" → "step"; a folder → its name.
std::string stem_of(const std::string& path) {
  std::filesystem::path p(path);
  std::string name = p.filename().string();
  if (name.empty()) name = p.parent_path().filename().string();
  for (const char* suffix : {".gz", ".json", ".trace", ".pt"})
    if (name.size() > std::string(suffix).size() && name.ends_with(suffix)) name.resize(name.size() - std::string(suffix).size());
  return name.empty() ? "trace" : name;
}

void run_import(const ImportArgs& a) {
  check_peak_flags(a.options.peak_gbps, a.options.peak_gflops);
  importer::ImportResult r = importer::import_traces(a.traces, a.options);
  std::string out = a.out.empty() ? (std::filesystem::path("opscope-profile") / stem_of(a.traces.front())).string() : a.out;
  prof::export_profile(r.trace, out);
  print_warnings(r.warnings);
  int64_t ops = 0, launches = 0, kernels = 0;
  for (const prof::TraceEvent& e : r.trace.events) {
    ops += e.kind == prof::EventKind::op;
    launches += e.kind == prof::EventKind::launch;
    kernels += e.kind == prof::EventKind::kernel;
  }
  std::printf("imported %zu file%s (%s): %zu events, %lld ops, %lld launches, %lld GPU kernels/copies, %zu devices -> %s\n",
              a.traces.size(), a.traces.size() == 1 ? "" : "s", r.format.c_str(), r.trace.events.size(),
              (long long)ops, (long long)launches, (long long)kernels, r.trace.devices.size(), out.c_str());
}

}  // namespace

void add_import_command(CLI::App& app) {
  auto a = std::make_shared<ImportArgs>();
  CLI::App* cmd = app.add_subcommand("import", "Turn torch.profiler traces (.json, .json.gz; per-rank files) into a profile");
  cmd->add_option("traces", a->traces, "Trace files, or folders of per-rank traces (one rank each)")->required();
  cmd->add_option("--out", a->out, "Profile folder to write (default: opscope-profile/<trace name>)");
  cmd->add_option("--peak-gbps", a->options.peak_gbps,
                  "GPU memory bandwidth for the roofline, GB/s (default: datasheet, by GPU name: " +
                      importer::gpu_peaks_models() + ")");
  cmd->add_option("--peak-gflops", a->options.peak_gflops, "GPU compute peak for the roofline, GFLOP/s (dense bf16 by default)");
  cmd->callback([a] { run_import(*a); });
}

}  // namespace opscope::cli
