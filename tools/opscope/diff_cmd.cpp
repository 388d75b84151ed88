// opscope diff A B [--json] [--sort-by KEY] [--row-limit N] [--kind op|range|kernel|all]
//                  [--group-by-shape] [--min-delta-us X]
// compares two saved profiles: per op, range and kernel both sides' times, calls and
// bytes with the change B − A, the rows added in B and removed from A, and the totals.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "opscope/core/error.h"
#include "check_flag.h"
#include "opscope/analysis/diff.h"
#include "open_profile.h"

namespace opscope::cli {
namespace {

struct DiffArgs {
  std::string a, b;
  bool json = false;
  std::string sort_by = "self_device_time_total";
  int64_t row_limit = 100;
  std::string kind = "all";
  bool group_by_shape = false;
  double min_delta_us = 0;
};

void run_diff(const DiffArgs& args) {
  // The flags first: a typo should not wait for two large profiles to load.
  analysis::DiffView view;
  view.sort_by = args.sort_by;
  view.row_limit = args.row_limit;
  check_flag("--kind", [&] { view.kinds = analysis::parse_diff_kinds(args.kind); });
  if (!(args.min_delta_us >= 0) || !std::isfinite(args.min_delta_us))
    fail("--min-delta-us", "{} is not a time in microseconds (>= 0)", args.min_delta_us);
  view.min_delta_ns = std::llround(args.min_delta_us * 1e3);
  check_flag("--sort-by", [&] { analysis::ProfileDiff{}.select(view); });

  prof::Trace a = open_profile(args.a);
  prof::Trace b = open_profile(args.b);
  analysis::DiffOptions options;
  options.group_by_input_shape = args.group_by_shape;
  options.a_label = args.a;
  options.b_label = args.b;
  analysis::ProfileDiff diff = analysis::diff_profiles(a, b, options);
  std::string text = args.json ? diff.to_json(view) : diff.table(view);
  std::fputs(text.c_str(), stdout);
  if (!text.empty() && text.back() != '\n') std::fputc('\n', stdout);
  // JSON goes to a script; the warnings to the person running it too.
  if (args.json)
    for (const std::string& w : diff.warnings()) std::fprintf(stderr, "opscope: warning: %s\n", w.c_str());
}

}  // namespace

void add_diff_command(CLI::App& app) {
  auto args = std::make_shared<DiffArgs>();
  CLI::App* cmd = app.add_subcommand("diff", "Compare two saved profiles: per-op and per-kernel changes B - A");
  cmd->add_option("a", args->a, "Profile A (folder with profile.db, or the profile.db file)")->required();
  cmd->add_option("b", args->b, "Profile B, compared against A")->required();
  cmd->add_flag("--json", args->json, "Print JSON instead of the table");
  cmd->add_option("--sort-by", args->sort_by,
                  "Largest change first of: self_device_time_total, device_time_total, self_cpu_time_total, "
                  "cpu_time_total, cpu_time, device_time, count, bytes, flops, self_device_memory_usage, "
                  "device_memory_usage; or name")
      ->capture_default_str();
  cmd->add_option("--row-limit", args->row_limit, "Table rows per section (0: all)")->capture_default_str();
  cmd->add_option("--kind", args->kind, "Rows to show: op, range, kernel or all (or a comma list)")
      ->capture_default_str();
  cmd->add_flag("--group-by-shape", args->group_by_shape, "Match ops by name and input shapes");
  cmd->add_option("--min-delta-us", args->min_delta_us,
                  "Hide rows on both sides whose time changes are all under X microseconds");
  cmd->callback([args] { run_diff(*args); });
}

}  // namespace opscope::cli
