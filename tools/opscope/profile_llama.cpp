// `opscope profile llama`: a Llama-style decoder generating under the profiler, eager and
// compiled. Each mode is warmed up (compilation happens there), then --iters times a
// prefill of --tokens prompt tokens and --decode greedy decode steps are profiled, saved
// to OUT/<mode>/ and printed as key_averages tables (ops, and the user ranges: passes,
// blocks, sub-layers); then a comparison of the modes. The profile's config JSON holds
// the model facts under "model", enough to build and run the same model again.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "opscope/analysis/key_averages.h"
#include "opscope/analysis/memory.h"
#include "opscope/analysis/roofline.h"
#include "opscope/core/error.h"
#include "opscope/models/llama.h"
#include "opscope/models/llama_generate.h"
#include "opscope/models/safetensors.h"
#include "opscope/ops/ops.h"
#include "opscope/profiler/annotate.h"
#include "opscope/profiler/session.h"
#include "opscope/profiler/store.h"
#include "opscope/runtime/device.h"
#include "opscope/runtime/probe.h"
#include "table_flags.h"
#include "peaks_flag.h"

namespace opscope::cli {

namespace {

using models::KvCache;
using models::LlamaConfig;
using models::LlamaModel;

struct LlamaArgs {
  std::string peaks;  // a saved probe instead of measuring (--peaks)
  std::string preset = "tiny", layers, vocab, tokens = "32", decode = "4", mode = "all", dtype = "f32";
  std::string weights, seed = "0", out = "opscope-profile/llama", iters = "3", warmup = "1";
  std::string sort_by = "self_device_time_total", row_limit = "25";
  TableFlags table;
};

// Whole numbers are parsed here, not by CLI11, so that every bad value is one
// "[--flag] ..." error with status 1.
int64_t parse_count(const char* flag, const std::string& s, int64_t min) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(s, &used);
  } catch (const std::exception&) {
    used = std::string::npos;
  }
  if (used != s.size() || v < min) fail(flag, "'{}' is not a whole number >= {}", s, min);
  return v;
}

// The user ranges of a profile (passes, blocks, sub-layers) by device time.
std::string ranges_table(const analysis::KeyAverages& ka) {
  std::vector<analysis::KeyAverage> rows;
  for (const auto& r : ka.rows())
    if (r.kind == prof::EventKind::range) rows.push_back(r);
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.device_total_ns > b.device_total_ns; });
  std::string s = fmt::format("{:<28} {:>7} {:>16} {:>14} {:>14}\n", "Range", "# Calls", "Device total ms",
                              "Device avg ms", "CPU total ms");
  for (const auto& r : rows)
    s += fmt::format("{:<28} {:>7} {:>16.3f} {:>14.3f} {:>14.3f}\n", r.name, r.count, r.device_total_ns / 1e6,
                     r.device_avg_ns() / 1e6, r.cpu_total_ns / 1e6);
  return s;
}

double range_device_ms(const analysis::KeyAverages& ka, const std::string& name) {
  for (const auto& r : ka.rows())
    if (r.kind == prof::EventKind::range && r.name == name) return r.device_avg_ns() / 1e6;
  return 0;
}

struct ModeResult {
  std::string mode;
  double prefill_device_ms = 0, decode_device_ms = 0;
  models::GenerateTiming wall;
};

void run_llama(const LlamaArgs& a) {
  const auto& presets = LlamaConfig::preset_names();
  if (std::find(presets.begin(), presets.end(), a.preset) == presets.end())
    fail("--preset", "unknown preset '{}' (expected {})", a.preset, fmt::join(presets, ", "));
  LlamaConfig cfg = LlamaConfig::preset(a.preset);
  if (!a.layers.empty()) cfg.n_layers = parse_count("--layers", a.layers, 1);
  if (!a.vocab.empty()) cfg.vocab = parse_count("--vocab", a.vocab, 1);
  cfg.dtype = parse_dtype(a.dtype, "--dtype");
  if (!is_floating(cfg.dtype)) fail("--dtype", "'{}' is not a floating type (f32, bf16, f16)", a.dtype);
  int64_t tokens = parse_count("--tokens", a.tokens, 1), steps = parse_count("--decode", a.decode, 0);
  int64_t iters = parse_count("--iters", a.iters, 1), warmup = parse_count("--warmup", a.warmup, 0);
  int64_t row_limit = parse_count("--row-limit", a.row_limit, 0);
  uint64_t seed = uint64_t(parse_count("--seed", a.seed, 0));
  std::vector<std::string> modes;
  if (a.mode == "all") modes = {"eager", "compiled"};
  else if (a.mode == "eager" || a.mode == "compiled") modes = {a.mode};
  else fail("--mode", "unknown mode '{}' (expected eager, compiled or all)", a.mode);
  if (tokens + steps > cfg.max_seq)
    fail("--tokens", "{} prompt tokens and {} decode steps exceed the model's max_seq {}", tokens, steps, cfg.max_seq);
  cfg.validate();
  try {
    analysis::KeyAverages().sorted(a.sort_by);
  } catch (const Error&) {
    fail("--sort-by", "unknown key '{}' (expected one of {})", a.sort_by, analysis::sort_key_names());
  }
  analysis::TableLayout layout = a.table.layout();
  if (!a.weights.empty()) models::SafetensorsFile::open(a.weights);  // a bad file fails before any output
  cpu();  // and a bad OPSCOPE_CPU_* variable
  std::error_code ec;
  std::filesystem::create_directories(a.out, ec);
  if (ec) fail("--out", "cannot create '{}': {}", a.out, ec.message());

  fmt::print("{}\nLlama {}: {} layers, dim {}, {} heads ({} kv), ffn {}, vocab {}, {}, {:.1f} M parameters\n",
             cpu().description(), a.preset, cfg.n_layers, cfg.dim, cfg.n_heads, cfg.n_kv_heads, cfg.ffn_dim, cfg.vocab,
             dtype_name(cfg.dtype), double(cfg.num_params()) / 1e6);
  auto t0 = std::chrono::steady_clock::now();
  LlamaModel model = a.weights.empty() ? LlamaModel::random(cfg, seed) : LlamaModel::load(cfg, a.weights);
  cpu().synchronize();
  fmt::print("weights: {} ({:.2f} s)\nprompt {} tokens, then {} decode steps; {} warmup + {} profiled generations per mode\n\n",
             a.weights.empty() ? fmt::format("random, seed {}", seed) : a.weights,
             std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), tokens, steps, warmup, iters);

  Tensor prompt = models::llama_prompt(cfg, tokens, seed);
  // The roofline's ceilings, measured before profiling; every profile carries them.
  double copy_gbps = 0;
  fmt::print("{}\n", attach_peaks(a.peaks, &copy_gbps));

  std::vector<ModeResult> results;
  for (const std::string& mode : modes) {
    model.set_compiled_regions(mode == "compiled" ? std::vector<std::string>{"all"} : std::vector<std::string>{});
    for (int64_t i = 0; i < warmup; ++i) models::llama_generate(model, prompt, steps);
    cpu().synchronize();

    nlohmann::json facts = {{"case", "llama"}, {"preset", a.preset}, {"config", nlohmann::json::parse(cfg.to_json())},
                            {"tokens", tokens}, {"decode", steps}, {"mode", mode},
                            {"compiled_regions", model.compiled_regions()}, {"seed", seed},
                            {"weights", a.weights.empty() ? "random" : a.weights}, {"iters", iters},
                            {"warmup", warmup}, {"logits_to_keep", 1}};
    prof::set_trace_annotator("llama model", [facts](prof::Trace& t) {
      auto c = t.config_json.empty() ? nlohmann::json::object() : nlohmann::json::parse(t.config_json, nullptr, false);
      if (!c.is_object()) return;
      c["model"] = facts;
      t.config_json = c.dump();
    });
    prof::ProfilerConfig pc;
    pc.output_dir = (std::filesystem::path(a.out) / mode).string();
    pc.record_shapes = true;
    prof::Profiler p(pc);
    ModeResult res;
    res.mode = mode;
    p.start();
    for (int64_t i = 0; i < iters; ++i) {
      models::GenerateTiming t = models::llama_generate(model, prompt, steps);
      res.wall.prefill_wall_ms += t.prefill_wall_ms / double(iters);
      res.wall.decode_wall_ms += t.decode_wall_ms / double(iters);
    }
    cpu().synchronize();
    p.stop();
    prof::set_trace_annotator("llama model", nullptr);
    const prof::Trace& trace = p.trace();
    prof::export_profile(trace, pc.output_dir);
    auto ka = analysis::key_averages(trace);
    res.prefill_device_ms = range_device_ms(ka, "prefill");
    res.decode_device_ms = range_device_ms(ka, "decode");
    fmt::print("== {} (saved to {})\n{}{}\n{}\n", mode, pc.output_dir, ka.table(a.sort_by, row_limit, "", layout),
               analysis::memory_summary_text(trace), ranges_table(ka));
    results.push_back(res);
  }

  // Decode at batch 1 reads every weight once a token (the embedding: one row), so a step
  // cannot beat weight bytes / copy bandwidth: the ratio CPU decoders are judged by.
  double weight_bytes = double(cfg.num_params() - (cfg.vocab - 1) * cfg.dim) * double(itemsize(cfg.dtype));
  double limit_ms = copy_gbps > 0 ? weight_bytes / copy_gbps / 1e6 : 0;
  fmt::print("{:<16} {:>18} {:>16} {:>14} {:>20} {:>18} {:>13} {:>13} {:>9}\n", "mode", "prefill device ms",
             "prefill wall ms", "prefill tok/s", "decode device ms/tok", "decode wall ms/tok", "decode tok/s",
             "limit ms/tok", "of limit");
  auto per_s = [](double n, double ms) { return ms > 0 ? n * 1000.0 / ms : 0.0; };
  for (const ModeResult& r : results)
      // No copy rate (a saved --peaks file without one): no limit, not a 0% that reads as a figure.
    fmt::print("{:<16} {:>18.3f} {:>16.3f} {:>14.1f} {:>20.3f} {:>18.3f} {:>13.1f} {:>13} {:>9}\n", r.mode,
               r.prefill_device_ms, r.wall.prefill_wall_ms, per_s(double(tokens), r.wall.prefill_wall_ms),
               r.decode_device_ms, r.wall.decode_wall_ms, per_s(1, r.wall.decode_wall_ms),
               limit_ms > 0 ? fmt::format("{:.3f}", limit_ms) : "-",
               limit_ms > 0 && r.wall.decode_wall_ms > 0
                   ? fmt::format("{:.0f}%", 100 * limit_ms / r.wall.decode_wall_ms)
                   : "-");
  if (results.size() == 2) {
    const ModeResult &e = results[0], &c = results[1];
    auto ratio = [](double x, double y) { return x > 0 && y > 0 ? fmt::format("{:.2f}x", x / y) : std::string("-"); };
    fmt::print("{:<16} {:>18} {:>16} {:>14} {:>20} {:>18} {:>13}\n", "eager/compiled",
               ratio(e.prefill_device_ms, c.prefill_device_ms), ratio(e.wall.prefill_wall_ms, c.wall.prefill_wall_ms), "",
               ratio(e.decode_device_ms, c.decode_device_ms), ratio(e.wall.decode_wall_ms, c.wall.decode_wall_ms), "");
  }
  fmt::print("(tok/s from wall time: the host's dispatch included; device ms: the kernels' time on the device;\n"
             " limit: {:.1f} MB of weights read a token {}, of limit = limit / decode wall ms)\n",
             weight_bytes / 1e6,
             copy_gbps > 0 ? fmt::format("at the probe's {:.1f} GB/s copy rate", copy_gbps)
                           : std::string("(the peaks have no copy rate: no limit)"));
}

}  // namespace

void add_profile_llama_command(CLI::App& profile) {
  auto a = std::make_shared<LlamaArgs>();
  CLI::App* sub = profile.add_subcommand(
      "llama", "a Llama-style decoder: prefill and greedy decode steps, eager and compiled, with ranges per block");
  sub->add_option("--preset", a->preset, "tiny, tinyllama (TinyLlama-1.1B) or llama3-8b-layer (one Llama-3-8B layer)")
      ->capture_default_str();
  sub->add_option("--layers", a->layers,
                  "number of decoder layers (default: the preset's; tinyllama has 22 — --layers 2 fits a small machine)")
      ->type_name("N");
  sub->add_option("--vocab", a->vocab,
                  "vocabulary size (default: the preset's). The embedding and lm_head are vocab x dim each: "
                  "llama3-8b-layer's 128256 x 4096 f32 is 2 GiB apiece, so e.g. --vocab 4096 on a small machine")
      ->type_name("N");
  sub->add_option("--tokens", a->tokens, "prompt length T (prefill)")->capture_default_str()->type_name("N");
  sub->add_option("--decode", a->decode, "greedy decode steps after the prefill")->capture_default_str()->type_name("N");
  sub->add_option("--mode", a->mode, "eager, compiled or all")->capture_default_str();
  sub->add_option("--dtype", a->dtype, "f32, bf16 or f16")->capture_default_str();
  sub->add_option("--weights", a->weights, "a safetensors file with Hugging Face names (default: seeded random weights)");
  sub->add_option("--seed", a->seed, "seed of the random weights and prompt")->capture_default_str()->type_name("N");
  sub->add_option("--peaks", a->peaks, "device peaks from this saved probe (`opscope probe --save`), not measured now");
  sub->add_option("--out", a->out, "output folder (one subfolder per mode)")->capture_default_str();
  sub->add_option("--iters", a->iters, "profiled generations per mode")->capture_default_str()->type_name("N");
  sub->add_option("--warmup", a->warmup, "unprofiled generations first (compilation happens here)")
      ->capture_default_str()
      ->type_name("N");
  sub->add_option("--sort-by", a->sort_by, "table sort key: " + analysis::sort_key_names())->capture_default_str();
  sub->add_option("--row-limit", a->row_limit, "table rows (0: all)")->capture_default_str()->type_name("N");
  a->table.add_to(sub);
  sub->callback([a] { run_llama(*a); });
}

}  // namespace opscope::cli
