#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "opscope/advisor/verify.h"
#include "opscope/analysis/advisor/region_kernels.h"
#include "opscope/cases/rmsnorm.h"
#include "opscope/core/error.h"
#include "opscope/ops/ops.h"
#include "opscope/profiler/record_function.h"
#include "opscope/profiler/session.h"
#include "opscope/runtime/device.h"

namespace opscope::advisor {

namespace {

using ImplFn = Tensor (*)(const Tensor&, const Tensor&, double);

// The fixes a suggestion names that the case study has, with the range each call runs in.
struct Fix {
  const char* name;
  ImplFn fn;
  const char* range;
};
const Fix kFixes[] = {{"rms_norm", cases::builtin_rms_norm, "rmsnorm builtin"},
                      {"compile", cases::compiled_rms_norm, "rmsnorm compiled"}};

}  // namespace

Verification verify_rmsnorm(const prof::Trace& naive, const Advice& advice, const VerifyOptions& o) {
  auto w = nlohmann::json::parse(naive.config_json, nullptr, false)["workload"];
  if (w.value("impl", "") != "naive")
    fail("advise --verify", "the profile ran the '{}' RMSNorm, already one kernel; verify the naive one (OUT/naive)",
         w.value("impl", ""));
  const int64_t rows = w.value("rows", int64_t(0)), hidden = w.value("hidden", int64_t(0));
  const int64_t iters = w.value("iters", int64_t(5));
  const double eps = w.value("eps", 1e-6);
  if (rows <= 0 || hidden <= 0 || iters <= 0)
    fail("advise --verify", "the profile's workload has no valid shape ({})", w.dump());
  const DType dtype = parse_dtype(w.value("dtype", std::string("f32")), "workload dtype");

  Verification v;
  v.workload = fmt::format("RMSNorm {}x{} {}, {} calls per run", rows, hidden, w.value("dtype", "f32"), iters);
  const std::optional<analysis::Peaks> peaks = recorded_peaks(naive);
  // The top suggestions: the RMSNorm one is checked against each fix; others have no
  // fix this case study can apply.
  const Suggestion* norm = nullptr;
  int rank = 0, norm_rank = 0;
  for (const Suggestion& s : advice.suggestions) {
    if (++rank > o.top) break;
    if (s.known_op == "RMSNorm" && !norm) {
      norm = &s;
      norm_rank = rank;
    } else {
      v.skipped.push_back(fmt::format("#{} {} ({}): the case study has no fix for it", rank, s.pattern, s.context));
    }
  }
  if (!norm) return v;

  Tensor x = randn({rows, hidden}, 0, dtype);
  Tensor weight = rand({hidden}, 1, dtype, nullptr, 0.5f, 1.5f);
  // One profiled run as `opscope profile rmsnorm` does it: a range per call.
  auto run = [&](ImplFn fn, const char* range, double* predicted) -> RegionKernels {
    for (int i = 0; i < 2; ++i) fn(x, weight, eps);  // warm (and compile)
    cpu().synchronize();
    prof::ProfilerConfig pc;
    pc.record_shapes = true;
    prof::Profiler p(pc);
    p.start();
    for (int64_t i = 0; i < iters; ++i) {
      prof::RecordFunction call(range);
      fn(x, weight, eps);
      cpu().synchronize();
    }
    p.stop();
    if (predicted) {
      AdviseOptions ao;
      ao.peaks = peaks;
      *predicted = 0;
      for (const Suggestion& s : advise(p.trace(), ao).suggestions)
        if (s.pattern == norm->pattern) *predicted += s.predicted_saved_ns;
    }
    return region_kernels(p.trace(), range);
  };
  for (const Fix& fix : kFixes) {
    RegionCheck c;
    c.region = fix.name;
    c.scope = fix.range;
    c.ranks = {norm_rank};
    c.patterns = {norm->pattern + " (" + norm->context + ")"};
    c.profile_predicted_ns = norm->predicted_saved_ns;
    std::vector<double> eager_ns, fixed_ns;
    for (int r = 0; r < o.reps; ++r) {
      // Alternated: drift in the machine's speed falls on both sides alike.
      double pred = 0;
      RegionKernels e = run(cases::naive_rms_norm, "rmsnorm naive", &pred);
      RegionKernels k = run(fix.fn, fix.range, nullptr);
      eager_ns.push_back(double(total_ns(e)));
      fixed_ns.push_back(double(total_ns(k)));
      c.predicted_runs.push_back(pred);
      c.realized_runs.push_back(eager_ns.back() - fixed_ns.back());
      c.region_saved_runs.push_back(eager_ns.back() - fixed_ns.back());
    }
    c.eager_ns = median(eager_ns);
    c.compiled_ns = median(fixed_ns);
    c.predicted_saved_ns = median(c.predicted_runs);
    c.realized_saved_ns = median(c.realized_runs);
    c.region_saved_ns = median(c.region_saved_runs);
    v.checks.push_back(c);
  }
  return v;
}

}  // namespace opscope::advisor
