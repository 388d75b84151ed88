// opscope advise DIR [--limit N] [--json] [--min-ops N] [--peaks FILE] [--verify [--top K] [--reps R]]
// names what to change in a saved profile and what each change saves (advisor/advise.h);
// --verify re-runs the case study behind the profile with the fixes applied (the
// RMSNorm case study's fused kernels, the decoder's compiled regions) and prints
// predicted against realized savings.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "opscope/advisor/verify.h"
#include "opscope/analysis/advisor/advise.h"
#include "opscope/analysis/peaks.h"
#include "opscope/analysis/roofline.h"
#include "opscope/core/error.h"
#include "open_profile.h"
#include "print_text.h"

namespace opscope::cli {
namespace {

struct AdviseArgs {
  std::string dir, peaks;
  int limit = 10, min_ops = 2, top = 3, reps = 3;
  bool json = false, verify = false;
};

}  // namespace

void add_advise_command(CLI::App& app) {
  auto a = std::make_shared<AdviseArgs>();
  CLI::App* cmd = app.add_subcommand(
      "advise", "Name what to fix in a profile (fusable op sequences, host-bound idle time) and what each saves");
  cmd->add_option("dir", a->dir, "Profile folder (with profile.db), profile.db file, or a torch.profiler trace (.json, .json.gz)")->required();
  cmd->add_option("--limit", a->limit, "Suggestions to print (0: all)")->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--min-ops", a->min_ops, "Shortest op sequence to suggest")->capture_default_str()->check(CLI::Range(2, 1000));
  cmd->add_flag("--json", a->json, "Print JSON instead of a table");
  cmd->add_option("--peaks", a->peaks, "Price with this saved probe (`opscope probe --save FILE`), not the profile's");
  cmd->add_flag("--verify", a->verify,
                "Re-run the profiled case study (`opscope profile rmsnorm` or `llama`) with the fixes applied and "
                "print predicted vs realized savings");
  cmd->add_option("--top", a->top, "With --verify: how many of the top suggestions to check")
      ->capture_default_str()->check(CLI::Range(1, 20));
  cmd->add_option("--reps", a->reps, "With --verify: alternated baseline/compiled runs per region (median)")
      ->capture_default_str()->check(CLI::Range(1, 50));
  cmd->callback([a] {
    advisor::AdviseOptions o;
    o.min_ops = a->min_ops;
    if (!a->peaks.empty()) o.peaks = analysis::Peaks::from_json(analysis::load_device_peaks(a->peaks));
    prof::Trace trace = open_profile(a->dir);
    advisor::Advice advice = advisor::advise(trace, o);
    if (!a->verify) {
      std::string out = a->json ? advice.to_json(a->limit) : advice.table(a->limit);
      print_text(out);
      return;
    }
    if (!a->json) {
      std::fputs(advice.table(a->limit).c_str(), stdout);
      std::fputs("\n", stdout);
      std::fflush(stdout);
    }
    advisor::VerifyOptions vo;
    vo.top = a->top;
    vo.reps = a->reps;
    advisor::Verification v = advisor::verify(trace, advice, vo);
    std::string out = a->json ? v.to_json() : v.table();
    print_text(out);
  });
}

}  // namespace opscope::cli
