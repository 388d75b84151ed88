// A profile of compiled code still says what each fused kernel computes (#26): the table's
// Origins column, its JSON and CSV, and an advisor that names the fused kernels instead of
// suggesting them again.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "opscope/analysis/advisor/advise.h"
#include "opscope/analysis/kernel_origins.h"
#include "opscope/analysis/key_averages.h"
#include "opscope/cases/rmsnorm.h"
#include "opscope/explorer/api.h"
#include "opscope/opscope.h"
#include "opscope/profiler/record_function.h"
#include "opscope/profiler/session.h"

using namespace opscope;
using nlohmann::json;

namespace {

// `calls` RMSNorms of rows x hidden, compiled (one fused kernel) or as the six eager ops.
prof::Trace profile_rms_norm(bool compiled, int calls, int64_t rows, int64_t hidden) {
  Tensor x = randn({rows, hidden}, 1), w = randn({hidden}, 2);
  cases::compiled_rms_norm(x, w);  // compiled before the window: the profile shows runs, not the compile
  cpu().synchronize();
  prof::ProfilerConfig c;
  c.record_shapes = true;
  prof::Profiler p(c);
  p.start();
  for (int i = 0; i < calls; ++i) {
    OPSCOPE_RECORD_FUNCTION("rms_norm call");  // each call its own range, as a model's layers are
    compiled ? cases::compiled_rms_norm(x, w) : cases::naive_rms_norm(x, w);
  }
  cpu().synchronize();
  p.stop();
  return p.trace();
}

const analysis::KeyAverage* fused_row(const analysis::KeyAverages& ka) {
  for (const analysis::KeyAverage& r : ka.rows())
    if (r.kind == prof::EventKind::kernel && r.name.starts_with("fused_")) return &r;
  return nullptr;
}

}  // namespace

TEST(KernelOrigins, ReadsWhatTheCompilerWroteAndSkipsWhatItDidNot) {
  prof::Trace t;
  t.config_json = R"({"layers": "all", "kernel_origins": {
      "fused_a": {"ops": ["aten::pow", "aten::mean"], "modules": ["layers.3.ffn_norm"], "shared": false},
      "fused_b": {"ops": ["aten::add"], "modules": ["layers.0", "layers.1.attention_norm"], "shared": true},
      "fused_c": {"ops": [], "modules": ["x"]},
      "fused_d": "not an object",
      "fused_e": {"ops": [3, "aten::mul", ""]},
      "fused_f": {"ops": ["aten::mul"], "modules": ["h.0.attn", "h.1.attn", "h.10.mlp.0", "lm_head"]}}})";
  auto o = analysis::kernel_origins(t);
  ASSERT_EQ(o.size(), 4u);  // c has no op, d is not an object
  EXPECT_EQ(o.at("fused_f").text(), "aten::mul in h.N.attn (×2), h.10.mlp.0, lm_head");
  EXPECT_EQ(o.at("fused_a").text(), "aten::pow, aten::mean in layers.3.ffn_norm");
  EXPECT_EQ(o.at("fused_b").text(), "aten::add in layers.0, layers.1.attention_norm (shared by modules)");
  EXPECT_EQ(o.at("fused_e").text(), "aten::mul");  // what is not a name is left out
  for (const char* config : {"", "not json", "[1, 2]", R"({"kernel_origins": [1]})", R"({"layers": "all"})"}) {
    t.config_json = config;
    EXPECT_TRUE(analysis::kernel_origins(t).empty()) << config;
  }
}

TEST(CompiledProfile, TheFusedKernelsRowNamesItsOriginOps) {
  prof::Trace compiled = profile_rms_norm(true, 3, 64, 256);
  analysis::KeyAverages ka = analysis::key_averages(compiled);
  const analysis::KeyAverage* fused = fused_row(ka);
  ASSERT_NE(fused, nullptr) << ka.table();
  // The C++ compiler's origins are opscope's op names, each once, in the order traced.
  EXPECT_EQ(fused->origins, "mul, mean, add, rsqrt");
  EXPECT_EQ(fused->count, 3);
  std::string table = ka.table("device_time_total", 100, "", analysis::TableLayout{});
  EXPECT_NE(table.find("Origins"), std::string::npos) << table;
  size_t at = table.find(fused->name);
  ASSERT_NE(at, std::string::npos);
  EXPECT_NE(table.substr(at, table.find('\n', at) - at).find("mul, mean, add, rsqrt"), std::string::npos) << table;
  json rows = json::parse(ka.to_json()).at("rows");
  bool seen = false;
  for (const json& r : rows) {
    if (r.at("name") == fused->name) seen = r.at("origins") == "mul, mean, add, rsqrt";
    else EXPECT_EQ(r.at("origins"), "") << r.at("name");  // ops, ranges and unfused kernels have none
  }
  EXPECT_TRUE(seen);
  std::string csv = ka.to_csv();
  EXPECT_NE(csv.find(",gflops,origins\n"), std::string::npos);
  EXPECT_NE(csv.find(",\"mul, mean, add, rsqrt\"\n"), std::string::npos) << csv;
  // Column selection knows the key.
  analysis::TableLayout only;
  only.columns = {"origins"};
  EXPECT_NE(ka.table("", 100, "", only).find("mul, mean, add, rsqrt"), std::string::npos);

  // An eager profile has no such column.
  analysis::KeyAverages eager = analysis::key_averages(profile_rms_norm(false, 3, 64, 256));
  EXPECT_EQ(eager.table().find("Origins"), std::string::npos) << eager.table();
}

// The advisor on a compiled profile names the fused kernel and what it came from, and no
// fix tells the user to compile what is compiled; on the eager profile it suggests the fusion.
TEST(CompiledProfile, TheAdvisorNamesFusedKernelsAndDoesNotSuggestThemAgain) {
  prof::Trace compiled = profile_rms_norm(true, 60, 8, 64);
  advisor::Advice adv = advisor::advise(compiled);
  ASSERT_EQ(adv.compiled.size(), 1u);
  EXPECT_TRUE(adv.compiled[0].name.starts_with("fused_"));
  EXPECT_EQ(adv.compiled[0].origins, "mul, mean, add, rsqrt");
  EXPECT_EQ(adv.compiled[0].launches, 60);
  EXPECT_TRUE(adv.suggestions.empty());
  int compiled_findings = 0;
  for (const advisor::Finding& f : adv.findings) {
    compiled_findings += f.kind == "compiled";
    EXPECT_EQ(f.fix.find("fuse or compile"), std::string::npos) << f.kind << ": " << f.fix;
  }
  EXPECT_EQ(compiled_findings, 1);
  std::string text = adv.table();
  EXPECT_NE(text.find("Compiled: 1 fused kernel already runs"), std::string::npos) << text;
  EXPECT_NE(text.find(adv.compiled[0].name + " ← mul, mean, add, rsqrt (60 launches"), std::string::npos) << text;
  EXPECT_NE(text.find("Nothing left to fuse"), std::string::npos) << text;
  json j = json::parse(adv.to_json());
  ASSERT_EQ(j.at("compiled").size(), 1u);
  EXPECT_EQ(j.at("compiled")[0].at("launches"), 60);

  advisor::Advice eager = advisor::advise(profile_rms_norm(false, 60, 8, 64));
  EXPECT_TRUE(eager.compiled.empty());
  ASSERT_FALSE(eager.suggestions.empty());
  EXPECT_EQ(eager.suggestions[0].known_op, "RMSNorm") << eager.table();
  for (const advisor::Finding& f : eager.findings) EXPECT_NE(f.kind, "compiled");
}

// The explorer's event details of a fused kernel name its origins (its args panel).
TEST(CompiledProfile, TheExplorersKernelDetailsNameItsOrigins) {
  prof::Trace compiled = profile_rms_norm(true, 2, 64, 256);
  explorer::ExplorerApi api({std::make_shared<explorer::Profile>("compiled", "test", compiled)});
  int seen = 0;
  for (size_t e = 0; e < compiled.events.size(); ++e) {
    const prof::TraceEvent& ev = compiled.events[e];
    if (ev.kind != prof::EventKind::kernel && ev.kind != prof::EventKind::launch) continue;
    explorer::ApiResponse r = api.get("/api/profiles/0/event/" + std::to_string(e), {});
    ASSERT_EQ(r.status, 200);
    const json& args = r.body.at("args");
    if (ev.name.starts_with("fused_")) {
      EXPECT_EQ(args.at("origins"), "mul, mean, add, rsqrt");
      ++seen;
    } else {
      EXPECT_FALSE(args.contains("origins")) << ev.name;
    }
  }
  EXPECT_GE(seen, 4);  // 2 launches and their kernel slices
}
