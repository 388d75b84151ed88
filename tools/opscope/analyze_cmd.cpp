// opscope analyze PROFILE|TRACE|DIR [--json] [--rank N] [--per-step] [--kernel-wait-ns N] [--top N]
// runs the trace analyses (analysis/analyze.h: temporal, idle, kernels, overlap,
// launches, queues, critical path, host) on each rank, with the spread across ranks and
// the slowest rank; a folder of per-rank traces is read one file at a time
// (importer/analyze_traces.h). `--kinds` prints the rules that give each kernel its kind.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "opscope/analysis/kernel_kind.h"
#include "opscope/core/error.h"
#include "opscope/importer/analyze_traces.h"
#include "print_text.h"

namespace opscope::cli {
namespace {

struct AnalyzeArgs {
  std::string path;
  analysis::AnalyzeOptions options;
  int64_t rank = -1;
  bool json = false, kinds = false;
};

void print_kinds() {
  std::fputs("Kernel kinds: the first rule that matches a device kernel's name decides (case ignored); none: COMP\n",
             stdout);
  for (const analysis::KindRule& r : analysis::kernel_kind_rules())
    std::printf("%-5s %-8s %-22.*s %.*s\n", analysis::kernel_kind_name(r.kind),
                r.match == analysis::KindRule::Match::prefix ? "prefix" : "contains", int(r.text.size()), r.text.data(),
                int(r.why.size()), r.why.data());
}

}  // namespace

void add_analyze_command(CLI::App& app) {
  auto a = std::make_shared<AnalyzeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "analyze",
      "Trace analyses per rank (temporal, idle time, kernels by kind, comm/comp overlap, launches, queues, critical "
      "path), with the spread across ranks and the slowest rank");
  cmd->add_option("path", a->path,
                  "Profile folder (with profile.db), profile.db, a torch.profiler trace (.json, .json.gz), or a folder "
                  "of per-rank traces (read one at a time)");
  cmd->add_flag("--json", a->json, "Print JSON (one key per analysis, every figure in ns)");
  cmd->add_option("--rank", a->rank, "Only this rank")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--per-step", a->options.per_step, "Each ProfilerStep on its own too (the work it launched)");
  cmd->add_option("--kernel-wait-ns", a->options.kernel_wait_ns,
                  "Idle gaps shorter than this, with the next kernel already queued, are kernel wait (launch "
                  "overhead); longer ones are 'other'")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--top", a->options.top_kernels, "Kernels listed per rank")->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_flag("--kinds", a->kinds, "Print the rules that make a kernel COMM, COMP or MEM, and exit");
  cmd->callback([a] {
    if (a->kinds) {
      print_kinds();
      return;
    }
    if (a->path.empty()) fail("analyze", "give a profile folder, a trace file or a folder of per-rank traces");
    if (a->rank >= 0) a->options.rank = a->rank;
    importer::return_large_blocks_when_freed();
    analysis::TraceAnalysis r = importer::analyze_path(a->path, a->options);
    std::string out = a->json ? r.to_json() : r.text();
    print_text(out);
  });
}

}  // namespace opscope::cli
