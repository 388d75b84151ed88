#include "opscope/advisor/verify.h"

#include "opscope/analysis/advisor/region_kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "opscope/analysis/roofline.h"
#include "opscope/core/error.h"
#include "opscope/models/llama.h"
#include "opscope/models/llama_generate.h"
#include "opscope/profiler/session.h"
#include "opscope/runtime/device.h"

namespace opscope::advisor {

namespace {

using prof::EventKind;

// The runs of fusable launching ops in a region's op sequence ("to(f32) → mul(x, x) →
// mean(-1) → ..."): what compiling it fuses. Casts are left out: in the model's own
// dtype they launch nothing.
std::vector<std::vector<std::string>> fusable_runs(std::string_view ops) {
  std::vector<std::vector<std::string>> runs(1);
  size_t i = 0;
  const std::string_view arrow = " → ";
  while (i <= ops.size()) {
    size_t j = ops.find(arrow, i);
    std::string_view step = ops.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i);
    std::string name(step.substr(0, step.find_first_of("( ")));
    if (name != "to") {
      if (fusable_op(name)) runs.back().push_back(name);
      else if (!runs.back().empty()) runs.emplace_back();
    }
    if (j == std::string_view::npos) break;
    i = j + arrow.size();
  }
  std::vector<std::vector<std::string>> out;
  for (auto& r : runs)
    if (r.size() >= 2) out.push_back(r);
  return out;
}

bool contains(const std::vector<std::string>& chain, const std::vector<std::string>& run) {
  return std::search(chain.begin(), chain.end(), run.begin(), run.end()) != chain.end();
}

bool has_scope(const prof::Trace& t, std::string_view scope) {
  for (const auto& e : t.events)
    if ((e.kind == EventKind::range || e.kind == EventKind::op) && e.name == scope) return true;
  return false;
}


}  // namespace

Verification verify(const prof::Trace& eager, const Advice& advice, const VerifyOptions& o) {
  if (o.top < 1 || o.reps < 1) fail("advise --verify", "top and reps must be at least 1");
  auto cfg_json = nlohmann::json::parse(eager.config_json.empty() ? "{}" : eager.config_json, nullptr, false);
  if (!cfg_json.is_object()) cfg_json = nlohmann::json::object();
  if (cfg_json.contains("imported_from"))
    fail("advise --verify", "the profile was imported from another tool's trace ({}): there is no workload to re-run; "
                            "--verify re-runs the case studies opscope's own commands profiled",
         cfg_json["imported_from"].dump());
  if (cfg_json.contains("workload") && cfg_json["workload"].is_object()) {
    std::string kind = cfg_json["workload"].value("case", "");
    if (kind == "rmsnorm") return verify_rmsnorm(eager, advice, o);
    fail("advise --verify", "unknown workload '{}' in the profile (expected rmsnorm or llama)", kind);
  }
  if (!cfg_json.contains("model") || !cfg_json["model"].is_object() ||
      cfg_json["model"].value("case", "") != "llama")
    fail("advise --verify", "the profile names no workload to re-run (it was not written by `opscope profile rmsnorm` "
                            "or `opscope profile llama`)");
  const auto& m = cfg_json["model"];
  if (m.value("mode", "") != "eager")
    fail("advise --verify", "the profile ran in '{}' mode; verify the eager profile (OUT/eager)", m.value("mode", ""));
  models::LlamaConfig cfg = models::LlamaConfig::from_json(m.at("config").dump());
  const int64_t tokens = m.at("tokens").get<int64_t>(), steps = m.at("decode").get<int64_t>();
  const int64_t iters = m.value("iters", int64_t(1));
  const uint64_t seed = m.value("seed", uint64_t(0));
  const std::string weights = m.value("weights", std::string("random"));

  Verification v;
  v.workload = fmt::format("llama {} ({} layers, dim {}), prompt {} tokens + {} decode steps, {} generations per run",
                           m.value("preset", std::string("?")), cfg.n_layers, cfg.dim, tokens, steps, iters);

  // The regions that implement the top suggestions, with the suggestions they cover.
  std::map<std::string, RegionCheck> by_region;
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::vector<std::string>>> runs_of;
  for (const auto& r : models::llama_regions()) runs_of[r.name] = fusable_runs(r.ops);
  int rank = 0;
  for (const Suggestion& s : advice.suggestions) {
    if (++rank > o.top) break;
    std::string region;
    for (const auto& r : models::llama_regions())
      for (const auto& run : runs_of[r.name])
        if (region.empty() && contains(s.ops, run)) region = r.name;
    if (region.empty()) {
      v.skipped.push_back(fmt::format("#{} {} ({}): no region of the model runs these ops", rank, s.pattern, s.context));
      continue;
    }
    if (!by_region.count(region)) order.push_back(region);
    RegionCheck& c = by_region[region];
    c.region = region;
    c.ranks.push_back(rank);
    c.patterns.push_back(s.context.empty() ? s.pattern : s.pattern + " (" + s.context + ")");
  }
  // What compiling a region saves, predicted: the advisor on the ops inside the region's
  // scopes (profiles older than those scopes: every place its fused runs occur).
  std::map<std::string, const char*> scope_of;
  for (const auto& r : models::llama_regions()) scope_of[r.name] = r.scope;
  const std::optional<analysis::Peaks> peaks = recorded_peaks(eager);
  auto predict = [&](const prof::Trace& t, const std::string& name) {
    double saved = 0;
    AdviseOptions ao;
    ao.peaks = peaks;
    if (has_scope(t, scope_of[name])) {
      ao.within = scope_of[name];
      for (const Suggestion& s : advise(t, ao).suggestions) saved += s.predicted_saved_ns;
    } else {
      for (const auto& run : runs_of[name]) {
        ao.pattern = run;
        for (const Suggestion& s : advise(t, ao).suggestions) saved += s.predicted_saved_ns;
      }
    }
    return saved;
  };
  for (auto& [name, c] : by_region) {
    c.scope = scope_of[name];
    c.predicted_from = has_scope(eager, c.scope) ? "region" : "pattern";
    c.profile_predicted_ns = predict(eager, name);
  }

  models::LlamaModel model =
      weights == "random" ? models::LlamaModel::random(cfg, seed) : models::LlamaModel::load(cfg, weights);
  Tensor prompt = models::llama_prompt(cfg, tokens, seed);
  // One profiled run of the recorded workload: the device time inside the region's
  // scope and, for an eager run, the advisor's prediction from that same run.
  auto run = [&](const std::vector<std::string>& regions, const std::string& name, double* predicted) -> RegionKernels {
    model.set_compiled_regions(regions);
    models::llama_generate(model, prompt, steps);  // warm: compiles in the first call
    cpu().synchronize();
    prof::ProfilerConfig pc;
    pc.record_shapes = true;
    prof::Profiler p(pc);
    p.start();
    for (int64_t i = 0; i < iters; ++i) models::llama_generate(model, prompt, steps);
    cpu().synchronize();
    p.stop();
    if (predicted) *predicted = predict(p.trace(), name);
    return region_kernels(p.trace(), scope_of[name]);
  };
  for (const std::string& name : order) {
    RegionCheck& c = by_region[name];
    std::vector<double> eager_ns, compiled_ns, predicted;
    for (int r = 0; r < o.reps; ++r) {
      // Alternated, so drift in the machine's speed falls on both sides alike; the
      // prediction comes from the eager run beside the compiled one it is checked by.
      double pred = 0;
      RegionKernels e = run({}, name, &pred);
      RegionKernels k = run({name}, name, nullptr);
      eager_ns.push_back(double(total_ns(e)));
      compiled_ns.push_back(double(total_ns(k)));
      predicted.push_back(pred);
      c.predicted_runs.push_back(pred);
      c.realized_runs.push_back(changed_saved_ns(e, k));
      c.region_saved_runs.push_back(eager_ns.back() - compiled_ns.back());
    }
    c.eager_ns = median(eager_ns);
    c.compiled_ns = median(compiled_ns);
    c.predicted_saved_ns = median(predicted);
    c.realized_saved_ns = median(c.realized_runs);
    c.region_saved_ns = median(c.region_saved_runs);
    v.checks.push_back(c);
  }
  model.set_compiled_regions({});
  return v;
}

std::string Verification::table() const {
  std::string out = fmt::format("Verification: {}\n", workload);
  out += fmt::format("{:<10} {:>9} {:>11} {:>13} {:>12} {:>8} {:>6} {:>11}  {}\n", "region", "covers #", "profile ms",
                     "predicted ms", "realized ms", "error", "±25%", "region ms", "suggestions");
  for (const RegionCheck& c : checks) {
    std::string ranks;
    for (int r : c.ranks) ranks += fmt::format("{}{}", ranks.empty() ? "" : ",", r);  // GCC 12 -Wrestrict on string +
    out += fmt::format("{:<10} {:>9} {:>11.3f} {:>13.3f} {:>12.3f} {:>+7.1f}% {:>6} {:>11.3f}  {}\n", c.region, ranks,
                       c.profile_predicted_ns / 1e6, c.predicted_saved_ns / 1e6, c.realized_saved_ns / 1e6,
                       100 * c.error(), c.within(0.25) ? "yes" : "NO", c.region_saved_ns / 1e6, c.patterns.front());
    for (size_t i = 1; i < c.patterns.size(); ++i) out += fmt::format("{:>94}{}\n", "", c.patterns[i]);
  }
  for (const std::string& s : skipped) out += "not checked: " + s + "\n";
  out += "profile: the advisor's prediction from the profile given; predicted: from each eager run of this check "
         "(median); realized: device time of the kernels the fusion changed (launched a different number of times) "
         "inside the region's scope, eager − compiled, median of alternated runs; region: the same over every kernel "
         "in the region\n";
  return out;
}

std::string Verification::to_json() const {
  nlohmann::ordered_json j;
  j["workload"] = workload;
  j["checks"] = nlohmann::ordered_json::array();
  for (const RegionCheck& c : checks)
    j["checks"].push_back({{"region", c.region},
                           {"ranks", c.ranks},
                           {"patterns", c.patterns},
                           {"predicted_saved_ns", c.predicted_saved_ns},
                           {"realized_saved_ns", c.realized_saved_ns},
                           {"profile_predicted_ns", c.profile_predicted_ns},
                           {"predicted_runs_ns", c.predicted_runs},
                           {"realized_runs_ns", c.realized_runs},
                           {"region_saved_ns", c.region_saved_ns},
                           {"region_saved_runs_ns", c.region_saved_runs},
                           {"eager_ns", c.eager_ns},
                           {"compiled_ns", c.compiled_ns},
                           {"scope", c.scope},
                           {"predicted_from", c.predicted_from},
                           {"error", c.error()},
                           {"within_25_percent", c.within(0.25)}});
  j["skipped"] = skipped;
  return j.dump(2);
}

}  // namespace opscope::advisor
