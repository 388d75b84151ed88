// opscope kernel PROFILE [KERNEL] [--op NAME] [--module PATH] [--json] [--lines N] [--context N]
// Inside one kernel, from a profile taken with the instructions layer: perf annotate's
// listing (the kernel's source lines, hottest first, with the code around them and the
// instructions under each, then the vector-width and class shares and the samples per
// core). Without KERNEL: the kernels that have samples.
// opscope kernel --static PROFILE|ARTIFACT [KERNEL] [--json]
// A compiled kernel's code analysed without running it (kernel_static.h): each loop's
// instruction mix, vector width and bytes per element, against what a profile recorded.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "open_profile.h"
#include "opscope/analysis/kernel_profile.h"
#include "opscope/analysis/kernel_static.h"
#include "opscope/compiler/cache.h"
#include "opscope/core/error.h"
#include "print_text.h"

namespace opscope::cli {
namespace {

struct KernelArgs {
  std::string profile, kernel, op, module;
  bool json = false, static_code = false;
  int lines = 10, context = 2;
};

// An artifact folder (or a file in it, or its hash in the cache), else "" (a profile).
std::string artifact_dir(const std::string& target) {
  namespace fs = std::filesystem;
  fs::path p(target);
  std::error_code ec;
  if (fs::is_regular_file(p, ec) && (p.filename() == "manifest.json" || p.filename() == "kernels.so"))
    p = p.parent_path();
  if (fs::exists(p / "manifest.json", ec)) return p.string();
  bool hash = target.size() == 16 && target.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (hash && !fs::exists(p, ec)) {
    fs::path cached = fs::path(compiler::cache_root()) / target;
    if (fs::exists(cached / "manifest.json", ec)) return cached.string();
    fail("--static", "{}: no artifact of that hash in {} (opscope cache list shows them)", target, compiler::cache_root());
  }
  return "";
}

void run_static(const KernelArgs& a) {
  if (!a.op.empty() || !a.module.empty()) fail("--static", "takes no --op or --module: it reads the artifact's code");
  std::vector<analysis::StaticKernel> kernels;
  if (std::string dir = artifact_dir(a.profile); !dir.empty()) {
    kernels = analysis::static_artifact(dir, a.kernel, nullptr);
  } else {
    prof::Trace trace = open_profile(a.profile);
    kernels = analysis::static_profile(trace, a.kernel, a.profile);
  }
  print_text(a.json ? analysis::static_json(kernels).dump(2) : analysis::static_text(kernels));
}

void run_kernel(const KernelArgs& a) {
  if (a.static_code) return run_static(a);
  if (a.lines < 1) fail("--lines", "{} is not a count of lines (>= 1)", a.lines);
  if (a.context < 0 || a.context > 50) fail("--context", "{} is not a count of lines (0..50)", a.context);
  prof::Trace trace = open_profile(a.profile);
  if (a.kernel.empty()) {
    analysis::require_samples(trace, "kernel", a.profile);
    auto kernels = analysis::sampled_kernels(trace);
    if (a.json) {
      nlohmann::json j = nlohmann::json::array();
      for (auto& [name, n] : kernels) j.push_back({{"kernel", name}, {"samples", n}});
      print_text(j.dump(2));
      return;
    }
    std::string out = "Kernels with instruction samples (opscope kernel PROFILE KERNEL shows one):\n";
    for (auto& [name, n] : kernels) out += fmt::format("  {:>8}  {}\n", n, name);
    print_text(out);
    return;
  }
  analysis::KernelQuery q{a.kernel, a.op, a.module};
  analysis::KernelProfile k = analysis::kernel_profile(trace, q, a.profile);
  print_text(a.json ? analysis::kernel_profile_json(k).dump(2) : analysis::kernel_profile_text(k, a.lines, a.context));
}

}  // namespace

void add_kernel_command(CLI::App& app) {
  auto args = std::make_shared<KernelArgs>();
  CLI::App* cmd = app.add_subcommand(
      "kernel", "Inside a kernel: its hot source lines and instructions (profiles with the instructions layer)");
  cmd->add_option("profile", args->profile,
                  "Profile folder (with profile.db) or profile.db file; with --static also an artifact folder or hash")
      ->required();
  cmd->add_option("kernel", args->kernel, "Kernel name, e.g. softmax_f32 (none: list the kernels with samples)");
  cmd->add_option("--op", args->op, "Only launches of this framework op");
  cmd->add_option("--module", args->module,
                  "Read the kernel's code from this file (an artifact or library moved since the profile)");
  cmd->add_flag("--json", args->json, "JSON instead of the listing");
  cmd->add_flag("--static", args->static_code,
                "Analyse the compiled kernels' code without running it: loops, vector width, bytes per element, verdicts");
  cmd->add_option("--lines", args->lines, "Hot source lines listed")->capture_default_str();
  cmd->add_option("--context", args->context, "Source lines shown around each hot line")->capture_default_str();
  cmd->callback([args] { run_kernel(*args); });
}

}  // namespace opscope::cli
