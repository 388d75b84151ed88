// opscope compile rmsnorm [--explain] [--shape RxH] [--dtype f32] [--disable-pass NAME ...]
//                         [--dir CACHE]
// compiles the case study's naive RMSNorm through opscope::compile and says what it
// became: the graph before and after each pass (--explain), the fused kernels, the
// artifact (hash, folder, cache hit or built), and the cold and warm compile times.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "opscope/cases/rmsnorm.h"
#include "opscope/compiler/cache.h"
#include "opscope/compiler/compile.h"
#include "opscope/core/error.h"
#include "opscope/opscope.h"

namespace opscope::cli {
namespace {

struct CompileArgs {
  std::string shape = "4096x4096", dtype = "f32", dir;
  std::vector<std::string> disable;
  bool explain = false;
};

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string steps(const CompileReport& r) {
  return fmt::format("trace {:.1f} ms, passes {:.2f} ms, codegen {:.2f} ms, build {:.0f} ms, load {:.2f} ms",
                     r.trace_ms, r.passes_ms, r.codegen_ms, r.build_ms, r.load_ms);
}

void run_compile(const CompileArgs& a) {
  int64_t rows = 0, hidden = 0;
  cases::parse_shape(a.shape, rows, hidden);
  DType dt = parse_dtype(a.dtype, "--dtype");
  CompileOptions opts;
  for (const std::string& p : a.disable)
    if (!compiler::disable_pass(opts.passes, p))
      fail("--disable-pass", "unknown pass '{}' (passes: {})", p, compiler::kPassNames);
  opts.cache_dir = a.dir;
  auto naive = [](const Tensor& x, const Tensor& w) { return cases::naive_rms_norm(x, w, 1e-6); };

  Tensor x = randn({rows, hidden}, 0, dt);
  Tensor w = rand({hidden}, 1, dt, nullptr, 0.5f, 1.5f);
  fmt::print("compile rmsnorm: the naive RMSNorm (6 ops), x {}x{} {}, cache {}\n", rows, hidden, a.dtype,
             compiler::cache_root(a.dir));

  // Cold: the first call of a signature traces, runs the passes, generates and builds
  // (or loads, when an earlier run left the artifact in the cache).
  auto f = compile(naive, "rms_norm_compiled", opts);
  auto t0 = std::chrono::steady_clock::now();
  f(x, w);
  cpu().synchronize();
  double cold_ms = ms_since(t0);
  CompileReport rep = f.report({x, w});
  if (!a.explain) rep.pass_log.clear();  // then str() shows the traced and compiled graphs only
  fmt::print("{}", rep.str());
  if (!rep.hash.empty()) fmt::print("source: {}/kernels.cpp\n", rep.artifact_dir);

  // Warm: a fresh compile() of the same function finds the artifact in the cache.
  auto g = compile(naive, "rms_norm_compiled", opts);
  t0 = std::chrono::steady_clock::now();
  Tensor y = g(x, w);
  cpu().synchronize();
  double warm_ms = ms_since(t0);
  CompileReport again = g.report({x, w});

  // The compiled call against the eager one: same result, and how long each takes.
  Tensor want = cases::naive_rms_norm(x, w, 1e-6);
  std::vector<float> got_v = y.to(DType::f32).to_float_vector(), want_v = want.to(DType::f32).to_float_vector();
  double diff = 0;
  for (size_t i = 0; i < got_v.size(); ++i) diff = std::max(diff, double(std::fabs(got_v[i] - want_v[i])));

  fmt::print("\ncold (first call, includes the traced eager run): {:.1f} ms  [{}]\n  {}\n", cold_ms,
             rep.eager_fallback ? "runs eagerly"
             : rep.hash.empty() ? "no fused kernels"
             : rep.cache_hit    ? "cache hit: the artifact was already cached; `opscope cache clear` for a cold build"
                                : "built",
             steps(rep));
  fmt::print("warm (a fresh compile() of the same function in this process, includes its traced eager run): "
             "{:.1f} ms  [{}]\n  {}\n",
             warm_ms, again.hash.empty() ? "no artifact" : again.cache_hit ? "cache hit" : "built", steps(again));
  fmt::print("max |compiled - eager| = {:.3g}\n", diff);
}

}  // namespace

void add_compile_command(CLI::App& app) {
  auto a = std::make_shared<CompileArgs>();
  CLI::App* sub = app.add_subcommand("compile", "compile a case study with opscope::compile and explain the result");
  sub->add_option("case", "case study (rmsnorm)")->required()->check(CLI::IsMember({"rmsnorm"}));
  sub->add_flag("--explain", a->explain, "print the graph before and after each pass");
  sub->add_option("--shape", a->shape, "ROWSxHIDDEN")->capture_default_str();
  sub->add_option("--dtype", a->dtype, "f32, bf16 or f16")->capture_default_str();
  sub->add_option("--disable-pass", a->disable, std::string("switch a pass off (repeatable): ") + compiler::kPassNames)
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->delimiter(',');
  sub->add_option("--dir", a->dir, "artifact cache folder (default: $OPSCOPE_CACHE_DIR, else the user's cache)");
  sub->callback([a] { run_compile(*a); });
}

}  // namespace opscope::cli
