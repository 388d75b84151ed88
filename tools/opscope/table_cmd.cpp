// opscope table DIR [--sort-by KEY] [--row-limit N] [--group-by-shape] [--group-by-stack N]
//                   [--time-unit U] [--columns a,b,c] [--wide] [--by-rank]
//                   [--peaks FILE | --peak-gbps X] [--peak-gflops Y]
// prints the key_averages table of a saved profile (or of a torch.profiler trace), as it was printed when profiled, and
// each device's memory peak when the profile recorded the allocator.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "opscope/core/error.h"
#include "check_flag.h"
#include "table_flags.h"
#include "opscope/analysis/key_averages.h"
#include "opscope/analysis/line_averages.h"
#include "opscope/analysis/memory.h"
#include "opscope/analysis/roofline.h"
#include "open_profile.h"
#include "opscope/importer/ranks.h"

namespace opscope::cli {
namespace {

struct TableArgs {
  std::string dir;
  std::string sort_by = "self_device_time_total";
  int64_t row_limit = 100;
  bool group_by_shape = false;
  int group_by_stack = 0;
  std::string time_unit;
  bool by_rank = false;
  bool group_by_line = false;  // the instructions layer's samples per source line
  TableFlags table;
  std::string peaks;                       // a saved probe
  double peak_gbps = 0, peak_gflops = 0;   // or roofs given by hand (0: not given)
};

}  // namespace

void add_table_command(CLI::App& app) {
  auto args = std::make_shared<TableArgs>();
  CLI::App* cmd = app.add_subcommand("table", "Print the key_averages table of a saved profile");
  cmd->add_option("dir", args->dir, "Profile folder (with profile.db), profile.db file, or a torch.profiler trace (.json, .json.gz)")->required();
  cmd->add_option("--sort-by", args->sort_by, "Sort key: " + analysis::sort_key_names() + " (or torch's cuda_*/cpu_* spellings)")
      ->capture_default_str();
  cmd->add_option("--row-limit", args->row_limit, "Rows to print (0: all)")->capture_default_str();
  cmd->add_flag("--group-by-shape", args->group_by_shape, "One row per op and input shapes");
  cmd->add_option("--group-by-stack", args->group_by_stack, "Rows per op call site too (N >= 1)");
  cmd->add_option("--time-unit", args->time_unit, "s, ms, us or ns (default: each value in its own unit)");
  cmd->add_flag("--by-rank", args->by_rank,
                "Profiles imported from several ranks: each rank's time per op and kernel, and the slowest rank");
  cmd->add_flag("--group-by-line", args->group_by_line,
                "Hottest source lines across all kernels, each with its kernel and op (instructions layer)");
  args->table.add_to(cmd);
  cmd->add_option("--peaks", args->peaks, "Read % Roofline against this saved probe (`opscope probe --save FILE`)");
  cmd->add_option("--peak-gbps", args->peak_gbps, "Read % Roofline against this memory bandwidth, GB/s");
  cmd->add_option("--peak-gflops", args->peak_gflops, "Compute peak for the roofline, GFLOP/s (instead of the profile's)");
  cmd->callback([args] {
    // The flags first: a typo should not wait for a large profile to load.
    analysis::KeyAverages none;
    check_flag("--sort-by", [&] { none.sorted(args->sort_by); });
    check_flag("--time-unit", [&] { none.table("", 1, args->time_unit); });
    check_peak_flags(args->peak_gbps, args->peak_gflops);
    if (!args->peaks.empty() && args->peak_gbps > 0) fail("--peaks", "give --peaks or --peak-gbps, not both");
    analysis::TableLayout layout = args->table.layout();
    std::string peaks = args->peaks.empty() ? "" : analysis::load_device_peaks(args->peaks);
    prof::Trace trace = open_profile(args->dir);
    // The same machine's roof for every profile: a run on a busy machine probed low.
    if (!peaks.empty()) trace.config_json = analysis::with_device_peaks(trace.config_json, peaks);
    if (args->peak_gbps > 0) trace.config_json = analysis::with_peak_gbps(trace.config_json, args->peak_gbps);
    importer::override_peaks(trace, 0, args->peak_gflops);
    if (args->group_by_line) {
      std::fputs(analysis::line_averages(trace, "--group-by-line", args->dir).table(args->row_limit).c_str(), stdout);
      return;
    }
    if (args->by_rank) {
      std::fputs(importer::rank_table(trace).text(args->row_limit).c_str(), stdout);
      return;
    }
    analysis::KeyAverages averages = analysis::key_averages(trace, args->group_by_shape, args->group_by_stack);
    std::string table = averages.table(args->sort_by, args->row_limit, args->time_unit, layout);
    std::fputs(table.c_str(), stdout);
    if (!table.empty() && table.back() != '\n') std::fputc('\n', stdout);
    std::fputs(analysis::memory_summary_text(trace).c_str(), stdout);
  });
}

}  // namespace opscope::cli
