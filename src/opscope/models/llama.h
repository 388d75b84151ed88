// A Llama-style decoder (transformers' LlamaForCausalLM) written op by op, as a user
// writes it in eager PyTorch: every intermediate is materialized, so an eager profile
// shows the elementwise chains a compiler would fuse.
//
//   LlamaModel m = LlamaModel::random(LlamaConfig::preset("tiny"), /*seed=*/0);
//   KvCache cache;
//   Tensor logits = m.prefill(from_host_i64({1, 2, 3}, {3}), cache);  // (3, vocab)
//   Tensor next = m.decode(7, cache);                                  // (1, vocab)
//
// One block: input_layernorm (RMSNorm) → q/k/v projections → rotary embedding →
// causal attention over the KV cache (GQA: kv heads repeated) → o_proj → residual add →
// post_attention_layernorm → SwiGLU MLP → residual add. Then the final norm and lm_head.
// Batch size 1: hidden states are (T, dim). Weights use Hugging Face's names and
// layouts (Linear weights are (out, in)), so a safetensors checkpoint loads directly.
//
// Compiled mode: named regions (llama_regions()) run through opscope::compile, the
// analog of torch.compile. Weights are inputs of the compiled functions (not captured
// constants), so one compiled function serves every layer.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "opscope/compiler/compile.h"
#include "opscope/runtime/tensor.h"

namespace opscope::models {

struct LlamaConfig {
  int64_t vocab = 256;
  int64_t dim = 64;
  int64_t n_layers = 2;
  int64_t n_heads = 4;
  int64_t n_kv_heads = 2;  // < n_heads: grouped-query attention
  int64_t ffn_dim = 172;
  int64_t max_seq = 256;   // cached plus new tokens
  double rope_theta = 10000;
  double norm_eps = 1e-5;
  DType dtype = DType::f32;

  int64_t head_dim() const { return n_heads > 0 ? dim / n_heads : 0; }
  // Throws "[llama] <field> ..." for the first value that does not make a model.
  void validate() const;
  int64_t num_params() const;
  // {"vocab": 256, ..., "dtype": "f32"}; from_json takes what to_json writes and
  // throws "[llama] ..." for a missing or mistyped field.
  std::string to_json() const;
  static LlamaConfig from_json(std::string_view json);

  // "tiny" (tests), "tinyllama" (TinyLlama-1.1B), "llama3-8b-layer" (one layer of
  // Llama-3-8B's shapes). Throws "[llama] unknown preset 'x' (expected ...)".
  static LlamaConfig preset(std::string_view name);
  static const std::vector<std::string>& preset_names();
};

// A region of the model that can run through opscope::compile.
// Each region runs inside a scope of one name either way: a user range of that name
// when eager, the compiled function's op (named the same) when compiled. Profiles of the
// two modes therefore compare region by region (advise --verify measures so).
inline constexpr const char* kRegionRmsNorm = "llama_rms_norm";
inline constexpr const char* kRegionRope = "llama_rope";
inline constexpr const char* kRegionAttention = "llama_attention";
inline constexpr const char* kRegionSwiglu = "llama_swiglu";

struct LlamaRegion {
  const char* name;   // what set_compiled_regions takes
  const char* ops;    // the eager op sequence it replaces
  const char* note;   // where it applies
  const char* scope;  // the range (eager) or compiled op (compiled) it runs in
};
// rms_norm, rope, attention, swiglu. There is no residual-add + norm region: compile
// returns one tensor, and both the sum (the next residual) and its norm are needed.
const std::vector<LlamaRegion>& llama_regions();

// The building blocks, exactly as the model runs them eagerly (and as the compiled
// regions trace them).
// HF LlamaRMSNorm: x.to(f32) → x*x → mean(-1) → +eps → rsqrt → x*r → .to(dtype) → *w.
Tensor llama_rms_norm(const Tensor& x, const Tensor& weight, double eps);
// HF rotate_half RoPE: x*cos + cat(-x[..., d/2:], x[..., :d/2])*sin. x (heads, T, hd),
// cos and sin (T, hd).
Tensor llama_rope(const Tensor& x, const Tensor& cos, const Tensor& sin);
// HF repeat_kv: (kv_heads, L, hd) → (kv_heads*n_rep, L, hd), expand then reshape (a copy).
Tensor llama_repeat_kv(const Tensor& x, int64_t n_rep);
// softmax(q kᵀ * scale + mask) v with k, v repeated to q's heads; softmax in f32.
// q (H, T, hd), k and v (KV, L, hd), mask (T, L) additive or undefined → (T, H*hd).
Tensor llama_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double scale);
// silu(gate) * up.
Tensor llama_swiglu(const Tensor& gate, const Tensor& up);

struct LlamaLayerWeights {
  Tensor q_proj, k_proj, v_proj, o_proj;  // (out, in)
  Tensor gate_proj, up_proj, down_proj;
  Tensor input_layernorm, post_attention_layernorm;  // (dim)
};

struct LlamaWeights {
  Tensor embed_tokens;  // (vocab, dim)
  std::vector<LlamaLayerWeights> layers;
  Tensor norm;     // (dim)
  Tensor lm_head;  // (vocab, dim)

  // Hugging Face names ("model.layers.0.self_attn.q_proj.weight", ...) and tensors.
  std::vector<std::pair<std::string, Tensor>> named() const;
};

// The names and shapes of the weights a config needs, in named() order.
std::vector<std::pair<std::string, Shape>> llama_weight_shapes(const LlamaConfig& cfg);

// Keys and values of the tokens seen so far, per layer (kv_heads, length, head_dim).
// Grows by concatenation, as transformers' DynamicCache.
class KvCache {
 public:
  int64_t length() const { return length_; }
  bool empty() const { return length_ == 0; }
  void clear() {
    k_.clear(), v_.clear();
    length_ = 0;
  }
  int num_layers() const { return int(k_.size()); }
  const Tensor& keys(int layer) const { return k_.at(size_t(layer)); }
  const Tensor& values(int layer) const { return v_.at(size_t(layer)); }

 private:
  friend class LlamaModel;
  std::vector<Tensor> k_, v_;
  int64_t length_ = 0;
};

class LlamaModel {
 public:
  // Seeded random weights, scaled like a real init (Linear: normal / sqrt(fan_in)) so
  // activations stay O(1). The same config and seed give the same weights.
  LlamaModel(const LlamaConfig& cfg, uint64_t seed);
  static LlamaModel random(const LlamaConfig& cfg, uint64_t seed = 0) { return LlamaModel(cfg, seed); }
  // Given weights; throws "[llama] <name> ..." when one is missing or misshapen.
  static LlamaModel from_weights(const LlamaConfig& cfg, LlamaWeights weights);
  // A safetensors file with Hugging Face names. Errors name the file and the tensor
  // (missing, wrong shape or dtype); tensors the model does not use are ignored.
  static LlamaModel load(const LlamaConfig& cfg, const std::string& path);
  void save(const std::string& path) const;

  const LlamaConfig& config() const { return cfg_; }
  const LlamaWeights& weights() const { return w_; }

  // Which regions run compiled: names from llama_regions(), {"all"} for every one, {}
  // for eager. Throws "[llama] unknown region 'x' (expected ...)".
  void set_compiled_regions(const std::vector<std::string>& regions);
  const std::vector<std::string>& compiled_regions() const { return compiled_names_; }

  // Runs the prompt `tokens` (1-d, i32 or i64) after what `cache` holds and appends
  // their keys and values to it. Returns logits (T, vocab), or of the last
  // `logits_to_keep` tokens (0 = all; generation needs 1, as transformers' generate).
  Tensor prefill(const Tensor& tokens, KvCache& cache, int64_t logits_to_keep = 0);
  // One token (shape (1)) after the cache: logits (1, vocab).
  Tensor decode(const Tensor& token, KvCache& cache);
  Tensor decode(int64_t token, KvCache& cache);

 private:
  LlamaModel(const LlamaConfig& cfg, LlamaWeights w);
  struct Rotary {
    Tensor cos, sin;
  };
  Tensor forward(const Tensor& tokens, KvCache& cache, int64_t logits_to_keep, const char* range);
  Rotary rotary(int64_t start, int64_t n) const;
  Tensor layer(size_t i, const Tensor& x, const Rotary& rot, const Tensor& mask, const KvCache& past,
               Tensor& k_all, Tensor& v_all);
  Tensor self_attn(const LlamaLayerWeights& w, const Tensor& x, const Rotary& rot, const Tensor& mask,
                   const Tensor& past_k, const Tensor& past_v, Tensor& k_all, Tensor& v_all);
  Tensor mlp(const LlamaLayerWeights& w, const Tensor& x);
  Tensor norm(const Tensor& x, const Tensor& w);
  Tensor rope(const Tensor& x, const Rotary& rot);

  LlamaConfig cfg_;
  LlamaWeights w_;
  Tensor inv_freq_;                      // (head_dim / 2) f32, as HF's rotary buffer
  std::vector<std::string> layer_names_;  // "layers.{i}", made once: ranges cost nothing unprofiled
  std::vector<std::string> compiled_names_;
  // The compiled function of each region while it is on; made on first use and kept,
  // so turning a region off and on again does not trace again.
  struct Compiled {
    std::optional<CompiledFunction> fn;
    bool on = false;
    const CompiledFunction* get() const { return on ? &*fn : nullptr; }
  };
  Compiled c_rms_norm_, c_rope_, c_attention_, c_swiglu_;
};

}  // namespace opscope::models
