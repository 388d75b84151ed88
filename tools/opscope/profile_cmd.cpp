// `opscope profile <case>`: a case study under the profiler, one subcommand per case
// with its own options. `rmsnorm` (here): each implementation is warmed up, profiled
// for --iters calls, saved to OUT/<impl>/ (trace.json + profile.db) and its
// key_averages table printed; then the device time of each beside naive's. `llama`:
// profile_llama.cpp.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "check_flag.h"
#include "table_flags.h"
#include "peaks_flag.h"
#include "opscope/analysis/key_averages.h"
#include "opscope/analysis/memory.h"
#include "opscope/analysis/roofline.h"
#include "opscope/cases/rmsnorm.h"
#include "opscope/core/error.h"
#include "opscope/opscope.h"
#include "opscope/profiler/annotate.h"
#include "opscope/profiler/config.h"
#include "opscope/profiler/record_function.h"
#include "opscope/profiler/session.h"
#include "opscope/profiler/store.h"
#include "opscope/runtime/probe.h"

namespace opscope::cli {

namespace {

struct ProfileArgs {
  std::string peaks;  // a saved probe instead of measuring (--peaks)
  std::string impl = "all", shape = "4096x4096", dtype = "f32", device = "cpu", out = "opscope-profile";
  std::string cores = "all", layers = "all", sort_by = "self_device_time_total";
  int iters = 5, warmup = 3, row_limit = 15;
  std::string sample_rate = "auto";  // the instructions layer
  bool record_shapes = true, with_stack = false;
  TableFlags table;
};

using ImplFn = Tensor (*)(const Tensor&, const Tensor&, double);

std::vector<std::pair<std::string, ImplFn>> implementations(const std::string& which) {
  std::vector<std::pair<std::string, ImplFn>> all = {{"naive", cases::naive_rms_norm},
                                                      {"builtin", cases::builtin_rms_norm},
                                                      {"compiled", cases::compiled_rms_norm}};
  if (which == "all") return all;
  for (auto& p : all)
    if (p.first == which) return {p};
  fail("--impl", "unknown implementation '{}' (expected naive, builtin, compiled or all)", which);
}

void run_profile(const ProfileArgs& a) {
  if (a.device != "cpu") fail("--device", "unknown device '{}' (this build has: cpu)", a.device);
  cases::RmsNormSetup st;
  cases::parse_shape(a.shape, st.rows, st.hidden);
  st.dtype = parse_dtype(a.dtype, "--dtype");
  prof::ProfilerConfig cfg;
  cfg.layers = prof::parse_layers(a.layers, "--layers");
  cfg.cores = prof::CoreSet::parse(a.cores, "--cores");
  cfg.sample_rate_hz = prof::parse_sample_rate(a.sample_rate, "--sample-rate");
  cfg.record_shapes = a.record_shapes;
  cfg.with_stack = a.with_stack;
  cfg.validate();
  check_flag("--sort-by", [&] { analysis::KeyAverages().sorted(a.sort_by); });  // before the runs, not after the first
  analysis::TableLayout layout = a.table.layout();
  auto impls = implementations(a.impl);
  cpu();  // the device first: a bad OPSCOPE_CPU_* variable fails before --out is made
  // Check the output folder before spending time on the runs.
  std::error_code ec;
  std::filesystem::create_directories(a.out, ec);
  if (ec) fail("--out", "cannot create '{}': {}", a.out, ec.message());

  fmt::print("{}\nRMSNorm {}x{} {}, {} iterations per implementation\n\n", cpu().description(), st.rows, st.hidden,
             a.dtype, a.iters);
  // The roofline's ceilings, measured before profiling; every profile carries them.
  fmt::print("{}\n", attach_peaks(a.peaks));
  Tensor x = randn({st.rows, st.hidden}, 0, st.dtype);
  Tensor w = rand({st.hidden}, 1, st.dtype, nullptr, 0.5f, 1.5f);
  std::vector<std::pair<std::string, double>> device_ms;
  for (auto& [name, fn] : impls) {
    for (int i = 0; i < a.warmup; ++i) fn(x, w, 1e-6);
    cpu().synchronize();
    prof::ProfilerConfig c = cfg;
    c.output_dir = (std::filesystem::path(a.out) / name).string();
    // What ran, so `opscope advise --verify` can run it again with the fix.
    nlohmann::json workload = {{"case", "rmsnorm"}, {"impl", name},   {"rows", st.rows}, {"hidden", st.hidden},
                               {"dtype", a.dtype},  {"iters", a.iters}, {"eps", 1e-6}};
    prof::set_trace_annotator("rmsnorm workload", [workload](prof::Trace& t) {
      auto j = t.config_json.empty() ? nlohmann::json::object() : nlohmann::json::parse(t.config_json, nullptr, false);
      if (!j.is_object()) return;
      j["workload"] = workload;
      t.config_json = j.dump();
    });
    prof::Profiler p(c);
    p.start();
    for (int i = 0; i < a.iters; ++i) {
      // One range per call, so the trace and the table group each call's ops.
      prof::RecordFunction call(fmt::format("rmsnorm {}", name));
      fn(x, w, 1e-6);
      cpu().synchronize();
    }
    p.stop();
    prof::set_trace_annotator("rmsnorm workload", nullptr);
    const prof::Trace& t = p.trace();
    prof::export_profile(t, c.output_dir);
    auto ka = analysis::key_averages(t);
    fmt::print("== {} (saved to {})\n{}{}\n", name, c.output_dir, ka.table(a.sort_by, a.row_limit, "", layout),
               analysis::memory_summary_text(t));
    device_ms.emplace_back(name, double(ka.self_device_time_total_ns()) / 1e6 / a.iters);
  }
  fmt::print("{:<10} {:>18} {:>20}\n", "impl", "device ms / call", "naive / this");
  double naive = 0;
  for (auto& [n, ms] : device_ms)
    if (n == "naive") naive = ms;
  for (auto& [n, ms] : device_ms)
    fmt::print("{:<10} {:>18.4f} {:>20}\n", n, ms, naive > 0 && ms > 0 ? fmt::format("{:.2f}x", naive / ms) : "-");
}

}  // namespace

void add_profile_llama_command(CLI::App& profile);

void add_profile_command(CLI::App& app) {
  auto a = std::make_shared<ProfileArgs>();
  CLI::App* profile = app.add_subcommand("profile", "profile a case study and print its key_averages tables");
  CLI::App* sub = profile->add_subcommand("rmsnorm", "RMSNorm op by op, as the built-in fused kernel, and compiled");
  sub->add_option("--impl", a->impl, "naive, builtin, compiled or all")->capture_default_str();
  sub->add_option("--shape", a->shape, "ROWSxHIDDEN")->capture_default_str();
  sub->add_option("--dtype", a->dtype, "f32, bf16 or f16")->capture_default_str();
  sub->add_option("--device", a->device, "device to run on")->capture_default_str();
  sub->add_option("--peaks", a->peaks, "device peaks from this saved probe (`opscope probe --save`), not measured now");
  sub->add_option("--out", a->out, "output folder (one subfolder per implementation)")->capture_default_str();
  sub->add_option("--cores", a->cores, "device cores to trace: all, 0,1, 0-3")->capture_default_str();
  sub->add_option("--layers", a->layers,
                  "framework,runtime,device (or all), plus instructions: samples inside kernels for `opscope kernel`")
      ->capture_default_str();
  sub->add_option("--sample-rate", a->sample_rate,
                  "instructions layer: samples per second of each core's time, or auto (10 kHz, lower where a "
                  "sample costs more than 1.5% of it at that rate)")
      ->capture_default_str();
  sub->add_option("--iters", a->iters, "profiled calls per implementation")->capture_default_str()->check(CLI::PositiveNumber);
  sub->add_option("--warmup", a->warmup, "unprofiled calls first")->capture_default_str()->check(CLI::NonNegativeNumber);
  sub->add_option("--sort-by", a->sort_by, "table sort key: " + analysis::sort_key_names())->capture_default_str();
  sub->add_option("--row-limit", a->row_limit, "table rows")->capture_default_str();
  sub->add_flag("--with-stack", a->with_stack, "record each op's call site");
  a->table.add_to(sub);
  sub->callback([a] { run_profile(*a); });
  add_profile_llama_command(*profile);
  // A missing or unknown case, or words before it, are our errors ("[profile] ..."),
  // raised once parsing is complete, before a case runs. Set after the cases exist:
  // they must not inherit allow_extras (unknown flags there stay CLI11's errors).
  profile->require_subcommand(0, 1);
  profile->allow_extras();
  profile->parse_complete_callback([profile] {
    auto extra = profile->remaining();
    bool has_case = !profile->get_subcommands().empty();
    if (has_case && !extra.empty())
      fail("profile", "'{}' is not an option of 'profile'; options follow the case study: opscope profile {} ...",
           extra[0], profile->get_subcommands()[0]->get_name());
    if (has_case) return;
    if (extra.empty()) fail("profile", "name a case study: rmsnorm or llama");
    fail("profile", "unknown case study '{}' (expected rmsnorm or llama)", extra[0]);
  });
}

}  // namespace opscope::cli
