// LlamaConfig: validation, presets, JSON; and the table of compilable regions.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "opscope/core/error.h"
#include "opscope/models/llama.h"

namespace opscope::models {

void LlamaConfig::validate() const {
  auto positive = [](const char* field, int64_t v) {
    if (v <= 0) fail("llama", "{} is {}; it must be positive", field, v);
  };
  positive("vocab", vocab);
  positive("dim", dim);
  positive("n_layers", n_layers);
  positive("n_heads", n_heads);
  positive("n_kv_heads", n_kv_heads);
  positive("ffn_dim", ffn_dim);
  positive("max_seq", max_seq);
  if (dim % n_heads != 0) fail("llama", "dim {} is not a multiple of n_heads {}", dim, n_heads);
  if (head_dim() % 2 != 0)
    fail("llama", "head_dim {} (dim {} / n_heads {}) is odd; rotary embeddings rotate pairs", head_dim(), dim, n_heads);
  if (n_heads % n_kv_heads != 0)
    fail("llama", "n_kv_heads {} does not divide n_heads {} (each kv head serves a group of query heads)", n_kv_heads,
         n_heads);
  if (!(rope_theta > 0)) fail("llama", "rope_theta is {}; it must be positive", rope_theta);
  if (!(norm_eps > 0)) fail("llama", "norm_eps is {}; it must be positive", norm_eps);
  if (!is_floating(dtype)) fail("llama", "dtype {} is not a floating type (f32, bf16, f16)", dtype_name(dtype));
}

int64_t LlamaConfig::num_params() const {
  int64_t kv = n_kv_heads * head_dim();
  int64_t per_layer = 2 * dim * dim + 2 * kv * dim + 3 * dim * ffn_dim + 2 * dim;
  return 2 * vocab * dim + n_layers * per_layer + dim;
}

std::string LlamaConfig::to_json() const {
  nlohmann::ordered_json j;
  j["vocab"] = vocab;
  j["dim"] = dim;
  j["n_layers"] = n_layers;
  j["n_heads"] = n_heads;
  j["n_kv_heads"] = n_kv_heads;
  j["ffn_dim"] = ffn_dim;
  j["max_seq"] = max_seq;
  j["rope_theta"] = rope_theta;
  j["norm_eps"] = norm_eps;
  j["dtype"] = std::string(dtype_name(dtype));
  return j.dump();
}

LlamaConfig LlamaConfig::from_json(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) fail("llama", "the config is not a JSON object: {}", text.substr(0, 200));
  LlamaConfig c;
  auto integer = [&](const char* key, int64_t& out) {
    if (!j.contains(key) || !j[key].is_number_integer()) fail("llama", "the config's \"{}\" is missing or not an integer", key);
    out = j[key].get<int64_t>();
  };
  auto number = [&](const char* key, double& out) {
    if (!j.contains(key) || !j[key].is_number()) fail("llama", "the config's \"{}\" is missing or not a number", key);
    out = j[key].get<double>();
  };
  integer("vocab", c.vocab);
  integer("dim", c.dim);
  integer("n_layers", c.n_layers);
  integer("n_heads", c.n_heads);
  integer("n_kv_heads", c.n_kv_heads);
  integer("ffn_dim", c.ffn_dim);
  integer("max_seq", c.max_seq);
  number("rope_theta", c.rope_theta);
  number("norm_eps", c.norm_eps);
  if (!j.contains("dtype") || !j["dtype"].is_string()) fail("llama", "the config's \"dtype\" is missing or not a string");
  c.dtype = parse_dtype(j["dtype"].get<std::string>(), "llama");
  c.validate();
  return c;
}

const std::vector<std::string>& LlamaConfig::preset_names() {
  static const std::vector<std::string> names = {"tiny", "tinyllama", "llama3-8b-layer"};
  return names;
}

LlamaConfig LlamaConfig::preset(std::string_view name) {
  LlamaConfig c;  // the defaults are "tiny"
  if (name == "tiny") return c;
  if (name == "tinyllama") {  // TinyLlama-1.1B (TinyLlama/TinyLlama-1.1B-Chat-v1.0's config.json)
    c.vocab = 32000, c.dim = 2048, c.n_layers = 22, c.n_heads = 32, c.n_kv_heads = 4, c.ffn_dim = 5632;
    c.max_seq = 2048, c.rope_theta = 10000, c.norm_eps = 1e-5;
    return c;
  }
  if (name == "llama3-8b-layer") {  // one layer of Meta-Llama-3-8B
    c.vocab = 128256, c.dim = 4096, c.n_layers = 1, c.n_heads = 32, c.n_kv_heads = 8, c.ffn_dim = 14336;
    c.max_seq = 8192, c.rope_theta = 500000, c.norm_eps = 1e-5;
    return c;
  }
  fail("llama", "unknown preset '{}' (expected {})", name, fmt::join(preset_names(), ", "));
}

const std::vector<LlamaRegion>& llama_regions() {
  static const std::vector<LlamaRegion> regions = {
      {"rms_norm", "to(f32) → mul(x, x) → mean(-1) → add(eps) → rsqrt → mul(x, r) → to(dtype) → mul(w)",
       "input_layernorm, post_attention_layernorm and the final norm: one compiled function, weights as inputs",
       kRegionRmsNorm},
      {"rope", "slice → slice → neg → concat → mul(x, cos) → mul(rot, sin) → add",
       "q and k of every layer, prefill and decode: cos and sin are inputs", kRegionRope},
      {"attention",
       "repeat_kv (unsqueeze → expand → reshape) → transpose → matmul(q, kᵀ) → mul(scale) → add(mask) → to(f32) → "
       "softmax → to(dtype) → matmul(p, v) → transpose → reshape",
       "prefill with a mask (T > 1); decode attention stays eager: its KV length grows every step, and each new "
       "shape would trace and build again",
       kRegionAttention},
      {"swiglu", "silu(gate) → mul(up)", "every MLP, between its matmuls", kRegionSwiglu},
  };
  return regions;
}

}  // namespace opscope::models
