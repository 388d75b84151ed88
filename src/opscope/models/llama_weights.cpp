// Llama weights: Hugging Face names and shapes, seeded random init, safetensors load/save.
#include <fmt/format.h>

#include <cmath>

#include "opscope/core/error.h"
#include "opscope/models/llama.h"
#include "opscope/models/safetensors.h"

namespace opscope::models {

namespace {

// Calls f(name, tensor) for each weight, in the order of Hugging Face's state dict.
template <class W, class F>
void visit(W& w, F&& f) {
  f(std::string("model.embed_tokens.weight"), w.embed_tokens);
  for (size_t i = 0; i < w.layers.size(); ++i) {
    auto& l = w.layers[i];
    std::string p = fmt::format("model.layers.{}.", i);
    f(p + "self_attn.q_proj.weight", l.q_proj);
    f(p + "self_attn.k_proj.weight", l.k_proj);
    f(p + "self_attn.v_proj.weight", l.v_proj);
    f(p + "self_attn.o_proj.weight", l.o_proj);
    f(p + "mlp.gate_proj.weight", l.gate_proj);
    f(p + "mlp.up_proj.weight", l.up_proj);
    f(p + "mlp.down_proj.weight", l.down_proj);
    f(p + "input_layernorm.weight", l.input_layernorm);
    f(p + "post_attention_layernorm.weight", l.post_attention_layernorm);
  }
  f(std::string("model.norm.weight"), w.norm);
  f(std::string("lm_head.weight"), w.lm_head);
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

Shape shape_of(const LlamaConfig& c, std::string_view name) {
  int64_t kv = c.n_kv_heads * c.head_dim();
  if (ends_with(name, "q_proj.weight")) return {c.n_heads * c.head_dim(), c.dim};
  if (ends_with(name, "k_proj.weight") || ends_with(name, "v_proj.weight")) return {kv, c.dim};
  if (ends_with(name, "o_proj.weight")) return {c.dim, c.n_heads * c.head_dim()};
  if (ends_with(name, "gate_proj.weight") || ends_with(name, "up_proj.weight")) return {c.ffn_dim, c.dim};
  if (ends_with(name, "down_proj.weight")) return {c.dim, c.ffn_dim};
  if (ends_with(name, "embed_tokens.weight") || name == "lm_head.weight") return {c.vocab, c.dim};
  return {c.dim};  // the norms
}

bool is_norm(std::string_view name) { return ends_with(name, "layernorm.weight") || name == "model.norm.weight"; }

LlamaWeights empty_weights(const LlamaConfig& cfg) {
  LlamaWeights w;
  w.layers.resize(size_t(cfg.n_layers));
  return w;
}

// Each tensor's seed mixes the model's seed with its name, so a weight does not change
// when others are added or the layer count changes.
uint64_t seed_for(uint64_t seed, const std::string& name) {
  uint64_t h = 1469598103934665603ull ^ (seed * 0x9e3779b97f4a7c15ull);
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return h;
}

LlamaWeights random_weights(const LlamaConfig& cfg, uint64_t seed) {
  cfg.validate();
  LlamaWeights w = empty_weights(cfg);
  visit(w, [&](const std::string& name, Tensor& t) {
    Shape s = shape_of(cfg, name);
    uint64_t sd = seed_for(seed, name);
    if (is_norm(name)) t = rand(s, sd, cfg.dtype, nullptr, 0.8f, 1.2f);  // about 1, as HF's init of ones
    else if (name == "model.embed_tokens.weight") t = randn(s, sd, cfg.dtype);
    else t = randn(s, sd, cfg.dtype, nullptr, 0.0f, float(1.0 / std::sqrt(double(s[1]))));  // Linear (out, in)
  });
  return w;
}

}  // namespace

std::vector<std::pair<std::string, Tensor>> LlamaWeights::named() const {
  std::vector<std::pair<std::string, Tensor>> out;
  visit(*this, [&](const std::string& name, const Tensor& t) { out.emplace_back(name, t); });
  return out;
}

std::vector<std::pair<std::string, Shape>> llama_weight_shapes(const LlamaConfig& cfg) {
  std::vector<std::pair<std::string, Shape>> out;
  LlamaWeights w = empty_weights(cfg);
  visit(w, [&](const std::string& name, Tensor&) { out.emplace_back(name, shape_of(cfg, name)); });
  return out;
}

LlamaModel::LlamaModel(const LlamaConfig& cfg, uint64_t seed) : LlamaModel(cfg, random_weights(cfg, seed)) {}

LlamaModel LlamaModel::from_weights(const LlamaConfig& cfg, LlamaWeights weights) {
  cfg.validate();
  if (int64_t(weights.layers.size()) != cfg.n_layers)
    fail("llama", "the weights have {} layers but the config has n_layers {}", weights.layers.size(), cfg.n_layers);
  visit(weights, [&](const std::string& name, const Tensor& t) {
    Shape want = shape_of(cfg, name);
    if (!t.defined()) fail("llama", "weight '{}' is undefined", name);
    if (t.shape() != want) fail("llama", "weight '{}' has shape {} but the config needs {}", name, t.shape().str(), want.str());
    if (t.dtype() != cfg.dtype)
      fail("llama", "weight '{}' has dtype {} but the config's dtype is {}", name, dtype_name(t.dtype()),
           dtype_name(cfg.dtype));
  });
  return LlamaModel(cfg, std::move(weights));
}

LlamaModel LlamaModel::load(const LlamaConfig& cfg, const std::string& path) {
  cfg.validate();
  SafetensorsFile f = SafetensorsFile::open(path);
  LlamaWeights w = empty_weights(cfg);
  size_t needed = 0;
  visit(w, [&](const std::string&, Tensor&) { ++needed; });
  // Check every tensor before reading any data: a mismatch fails fast.
  visit(w, [&](const std::string& name, Tensor&) {
    const SafetensorInfo* t = f.find(name);
    if (!t)
      fail("llama", "{}: tensor '{}' is missing (the model needs {} tensors; the file has {}){}", path, name, needed,
           f.tensors().size(), name == "lm_head.weight" ? "; tied embeddings are not supported" : "");
    Shape want = shape_of(cfg, name);
    if (t->shape != want)
      fail("llama", "{}: tensor '{}' has shape {} but the model needs {}", path, name, t->shape.str(), want.str());
    if (t->dtype != cfg.dtype)
      fail("llama", "{}: tensor '{}' has dtype {} but the model's dtype is {} (load it with dtype {})", path, name,
           dtype_name(t->dtype), dtype_name(cfg.dtype), dtype_name(t->dtype));
  });
  visit(w, [&](const std::string& name, Tensor& t) { t = f.load(name); });
  return LlamaModel(cfg, std::move(w));
}

void LlamaModel::save(const std::string& path) const {
  save_safetensors(path, w_.named(), {{"format", "pt"}, {"opscope.llama_config", cfg_.to_json()}});
}

}  // namespace opscope::models
