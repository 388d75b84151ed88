#include "opscope/advisor/verify.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

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

// Device time of the launches a fusion can change: those not made by an op that never
// fuses (matmul, softmax, concat, ...). In a compiled profile the region's op (named
// after its function) owns fused kernels and its graph's library kernels; the latter
// are recognized by kernel name, as the eager run's never-fusing ops launched them.
struct Split {
  std::set<std::string> fixed_kernels;  // kernel names launched by ops that never fuse
};

int64_t changeable_ns(const prof::Trace& t, Split& split, bool learn) {
  std::unordered_map<uint64_t, const prof::TraceEvent*> scopes;
  struct L { int64_t t0 = INT64_MAX, t1 = INT64_MIN; uint64_t op = 0; const std::string* name = nullptr; };
  std::unordered_map<uint64_t, L> launches;
  for (const auto& e : t.events) {
    if (e.kind == EventKind::op || e.kind == EventKind::range) scopes[e.id] = &e;
    if (e.kind == EventKind::kernel) {
      L& l = launches[e.id];
      l.t0 = std::min(l.t0, e.t0);
      l.t1 = std::max(l.t1, e.t1);
      l.op = e.parent;
      l.name = &e.name;
    }
  }
  int64_t total = 0;
  for (auto& [id, l] : launches) {
    // The launch's top-level op: the outermost op around it.
    std::string_view top;
    for (uint64_t s = l.op; s;) {
      auto it = scopes.find(s);
      if (it == scopes.end()) break;
      if (it->second->kind == EventKind::op) top = it->second->name;
      s = it->second->parent;
    }
    bool fusable = fusable_op(top);
    if (learn && !fusable && !top.empty()) split.fixed_kernels.insert(*l.name);
    if (fusable || !split.fixed_kernels.count(*l.name)) total += l.t1 - l.t0;
  }
  return total;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

Verification verify(const prof::Trace& eager, const Advice& advice, const VerifyOptions& o) {
  if (o.top < 1 || o.reps < 1) fail("advise --verify", "top and reps must be at least 1");
  auto cfg_json = nlohmann::json::parse(eager.config_json.empty() ? "{}" : eager.config_json, nullptr, false);
  if (!cfg_json.is_object() || !cfg_json.contains("model") || !cfg_json["model"].is_object() ||
      cfg_json["model"].value("case", "") != "llama")
    fail("advise --verify", "the profile was not written by `opscope profile llama` (its config names no model); "
                            "--verify re-runs the decoder case study with the suggested regions compiled");
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
  // What compiling a region saves, predicted: every place its fused runs occur.
  for (auto& [name, c] : by_region)
    for (const auto& run : runs_of[name]) {
      AdviseOptions ao;
      ao.pattern = run;
      for (const Suggestion& s : advise(eager, ao).suggestions) c.predicted_saved_ns += s.predicted_saved_ns;
    }

  models::LlamaModel model =
      weights == "random" ? models::LlamaModel::random(cfg, seed) : models::LlamaModel::load(cfg, weights);
  Tensor prompt = models::llama_prompt(cfg, tokens, seed);
  auto run = [&](const std::vector<std::string>& regions, Split& split, bool learn) {
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
    return double(changeable_ns(p.trace(), split, learn));
  };
  Split split;
  run({}, split, /*learn=*/true);  // which kernels never change
  for (const std::string& name : order) {
    RegionCheck& c = by_region[name];
    std::vector<double> eager_ns, compiled_ns;
    for (int r = 0; r < o.reps; ++r) {
      eager_ns.push_back(run({}, split, false));
      compiled_ns.push_back(run({name}, split, false));
      c.realized_runs.push_back(eager_ns.back() - compiled_ns.back());
    }
    c.eager_ns = median(eager_ns);
    c.compiled_ns = median(compiled_ns);
    c.realized_saved_ns = median(c.realized_runs);
    v.checks.push_back(c);
  }
  model.set_compiled_regions({});
  return v;
}

std::string Verification::table() const {
  std::string out = fmt::format("Verification: {}\n", workload);
  out += fmt::format("{:<10} {:>10} {:>14} {:>14} {:>8}  {}\n", "region", "covers #", "predicted ms", "realized ms",
                     "error", "suggestions");
  for (const RegionCheck& c : checks) {
    std::string ranks;
    for (int r : c.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
    out += fmt::format("{:<10} {:>10} {:>14.3f} {:>14.3f} {:>+7.1f}%  {}\n", c.region, ranks,
                       c.predicted_saved_ns / 1e6, c.realized_saved_ns / 1e6, 100 * c.error(), c.patterns.front());
    for (size_t i = 1; i < c.patterns.size(); ++i) out += fmt::format("{:>71}{}\n", "", c.patterns[i]);
  }
  for (const std::string& s : skipped) out += "not checked: " + s + "\n";
  out += "predicted: the advisor on the profile, over every place the region's ops run; realized: device time of the "
         "kernels a fusion can change, eager − compiled, median of alternated runs\n";
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
                           {"realized_runs_ns", c.realized_runs},
                           {"eager_ns", c.eager_ns},
                           {"compiled_ns", c.compiled_ns},
                           {"error", c.error()}});
  j["skipped"] = skipped;
  return j.dump(2);
}

}  // namespace opscope::advisor
