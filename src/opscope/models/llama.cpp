// The Llama forward pass, op by op as transformers' modeling_llama.py runs it eagerly,
// with user ranges (layers.{i}, self_attn, mlp, ...) for the profiler.
#include "opscope/models/llama.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <limits>

#include "opscope/core/error.h"
#include "opscope/ops/ops.h"
#include "opscope/profiler/record_function.h"

namespace opscope::models {

// ---- building blocks ----

Tensor llama_rms_norm(const Tensor& x, const Tensor& weight, double eps) {
  Tensor xf = x.to(DType::f32);
  Tensor variance = mean(xf * xf, {-1}, /*keepdim=*/true);
  Tensor r = rsqrt(variance + eps);
  Tensor y = (xf * r).to(x.dtype());
  return weight * y;
}

Tensor llama_rope(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  int last = x.ndim() - 1;
  int64_t half = x.dim(last) / 2;
  Tensor x1 = x.slice(last, 0, half);
  Tensor x2 = x.slice(last, half, 2 * half);
  Tensor rotated = concat({-x2, x1}, last);
  return x * cos + rotated * sin;
}

Tensor llama_repeat_kv(const Tensor& x, int64_t n_rep) {
  if (n_rep == 1) return x;
  int64_t kv = x.dim(0), len = x.dim(1), hd = x.dim(2);
  return x.unsqueeze(1).expand({kv, n_rep, len, hd}).reshape({kv * n_rep, len, hd});
}

Tensor llama_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double scale) {
  if (q.ndim() != 3 || k.ndim() != 3 || v.ndim() != 3)
    fail("llama_attention", "q {}, k {} and v {} must be (heads, tokens, head_dim)", q.shape().str(), k.shape().str(),
         v.shape().str());
  int64_t heads = q.dim(0), tokens = q.dim(1), hd = q.dim(2), kv_heads = k.dim(0);
  if (kv_heads == 0 || heads % kv_heads != 0)
    fail("llama_attention", "q has {} heads, which k's {} kv heads do not divide", heads, kv_heads);
  Tensor keys = llama_repeat_kv(k, heads / kv_heads);
  Tensor values = llama_repeat_kv(v, heads / kv_heads);
  Tensor scores = matmul(q, keys.transpose(1, 2)) * scale;
  if (mask.defined()) scores = scores + mask;
  Tensor probs = softmax(scores.to(DType::f32), -1).to(q.dtype());  // HF: softmax in f32
  Tensor out = matmul(probs, values);
  return out.transpose(0, 1).reshape({tokens, heads * hd});
}

Tensor llama_swiglu(const Tensor& gate, const Tensor& up) { return silu(gate) * up; }

// ---- compiled regions ----

void LlamaModel::set_compiled_regions(const std::vector<std::string>& regions) {
  std::vector<std::string> names;
  bool all = false;
  for (const std::string& r : regions) {
    bool known = r == "all";
    for (const LlamaRegion& reg : llama_regions()) known = known || r == reg.name;
    if (!known) {
      std::vector<std::string> expected;
      for (const LlamaRegion& reg : llama_regions()) expected.push_back(reg.name);
      fail("llama", "unknown region '{}' (expected {} or all)", r, fmt::join(expected, ", "));
    }
    all = all || r == "all";
  }
  auto want = [&](const char* name) {
    for (const std::string& r : regions)
      if (r == name || all) return true;
    return false;
  };
  double eps = cfg_.norm_eps, scale = 1.0 / std::sqrt(double(cfg_.head_dim()));
  auto set = [&](Compiled& c, const char* name, auto make) {
    c.on = want(name);
    if (!c.on) return;
    if (!c.fn) c.fn = make();
    names.push_back(name);
  };
  // Scalars (eps, scale) are constants of the traced graphs; tensors are inputs.
  set(c_rms_norm_, "rms_norm", [&] {
    return compile([eps](const Tensor& x, const Tensor& w) { return llama_rms_norm(x, w, eps); }, kRegionRmsNorm);
  });
  set(c_rope_, "rope", [&] {
    return compile([](const Tensor& x, const Tensor& c, const Tensor& s) { return llama_rope(x, c, s); }, kRegionRope);
  });
  set(c_attention_, "attention", [&] {
    return compile([scale](const Tensor& q, const Tensor& k, const Tensor& v,
                           const Tensor& m) { return llama_attention(q, k, v, m, scale); },
                   kRegionAttention);
  });
  set(c_swiglu_, "swiglu", [&] {
    return compile([](const Tensor& g, const Tensor& u) { return llama_swiglu(g, u); }, kRegionSwiglu);
  });
  compiled_names_ = std::move(names);
}

Tensor LlamaModel::norm(const Tensor& x, const Tensor& w) {
  if (auto* f = c_rms_norm_.get()) return (*f)(x, w);
  prof::RecordFunction r(kRegionRmsNorm);
  return llama_rms_norm(x, w, cfg_.norm_eps);
}

Tensor LlamaModel::rope(const Tensor& x, const Rotary& rot) {
  if (auto* f = c_rope_.get()) return (*f)(x, rot.cos, rot.sin);
  prof::RecordFunction r(kRegionRope);
  return llama_rope(x, rot.cos, rot.sin);
}

// ---- the model ----

LlamaModel::LlamaModel(const LlamaConfig& cfg, LlamaWeights w) : cfg_(cfg), w_(std::move(w)) {
  // HF's rotary buffer: inv_freq[i] = 1 / theta^(2i / head_dim), kept in f32.
  int64_t hd = cfg_.head_dim();
  std::vector<float> inv(size_t(hd / 2));
  for (int64_t i = 0; i < hd / 2; ++i) inv[size_t(i)] = float(1.0 / std::pow(cfg_.rope_theta, double(2 * i) / double(hd)));
  inv_freq_ = from_host(inv, {hd / 2});
  for (int64_t i = 0; i < cfg_.n_layers; ++i) layer_names_.push_back(fmt::format("layers.{}", i));
}

LlamaModel::Rotary LlamaModel::rotary(int64_t start, int64_t n) const {
  // HF LlamaRotaryEmbedding.forward: inv_freq ⊗ positions → cat(freqs, freqs) → cos, sin.
  Tensor positions = arange(double(start), double(start + n), 1, DType::f32);
  Tensor freqs = matmul(inv_freq_.unsqueeze(1), positions.unsqueeze(0)).transpose(0, 1);  // (n, hd/2)
  Tensor emb = concat({freqs, freqs}, -1);
  return {cos(emb).to(cfg_.dtype), sin(emb).to(cfg_.dtype)};
}

namespace {
// Additive causal mask (T, past + T): token i sees keys 0 .. past + i.
Tensor causal_mask(int64_t tokens, int64_t past, DType dtype) {
  int64_t keys = past + tokens;
  std::vector<float> m(size_t(tokens * keys), 0.0f);
  for (int64_t i = 0; i < tokens; ++i)
    for (int64_t j = past + i + 1; j < keys; ++j) m[size_t(i * keys + j)] = -std::numeric_limits<float>::infinity();
  return from_host(m, {tokens, keys}, dtype);
}
}  // namespace

Tensor LlamaModel::self_attn(const LlamaLayerWeights& w, const Tensor& x, const Rotary& rot, const Tensor& mask,
                             const Tensor& past_k, const Tensor& past_v, Tensor& k_all, Tensor& v_all) {
  int64_t tokens = x.dim(0), heads = cfg_.n_heads, kv_heads = cfg_.n_kv_heads, hd = cfg_.head_dim();
  // (T, heads * hd) → (heads, T, hd): views, as q_proj(x).view(...).transpose(1, 2).
  Tensor q = matmul(x, w.q_proj.transpose(0, 1)).reshape({tokens, heads, hd}).transpose(0, 1);
  Tensor k = matmul(x, w.k_proj.transpose(0, 1)).reshape({tokens, kv_heads, hd}).transpose(0, 1);
  Tensor v = matmul(x, w.v_proj.transpose(0, 1)).reshape({tokens, kv_heads, hd}).transpose(0, 1);
  q = rope(q, rot);
  k = rope(k, rot);
  // DynamicCache.update: cat along the sequence.
  k_all = past_k.defined() ? concat({past_k, k}, 1) : k;
  v_all = past_v.defined() ? concat({past_v, v}, 1) : v;
  Tensor o;
  if (auto* f = c_attention_.get(); f && mask.defined()) o = (*f)(q, k_all, v_all, mask);
  else {
    prof::RecordFunction r(kRegionAttention);
    o = llama_attention(q, k_all, v_all, mask, 1.0 / std::sqrt(double(hd)));
  }
  return matmul(o, w.o_proj.transpose(0, 1));
}

Tensor LlamaModel::mlp(const LlamaLayerWeights& w, const Tensor& x) {
  Tensor gate = matmul(x, w.gate_proj.transpose(0, 1));
  Tensor up = matmul(x, w.up_proj.transpose(0, 1));
  Tensor act;
  if (auto* f = c_swiglu_.get()) {
    act = (*f)(gate, up);
  } else {
    prof::RecordFunction r(kRegionSwiglu);
    act = llama_swiglu(gate, up);
  }
  return matmul(act, w.down_proj.transpose(0, 1));
}

Tensor LlamaModel::layer(size_t i, const Tensor& x, const Rotary& rot, const Tensor& mask, const KvCache& past,
                         Tensor& k_all, Tensor& v_all) {
  prof::RecordFunction block(layer_names_[i]);
  const LlamaLayerWeights& w = w_.layers[i];
  Tensor past_k = past.empty() ? Tensor() : past.keys(int(i));
  Tensor past_v = past.empty() ? Tensor() : past.values(int(i));
  Tensor h, attn, out;
  {
    prof::RecordFunction r("input_layernorm");
    h = norm(x, w.input_layernorm);
  }
  {
    prof::RecordFunction r("self_attn");
    attn = self_attn(w, h, rot, mask, past_k, past_v, k_all, v_all);
  }
  Tensor residual = x + attn;
  {
    prof::RecordFunction r("post_attention_layernorm");
    h = norm(residual, w.post_attention_layernorm);
  }
  {
    prof::RecordFunction r("mlp");
    out = mlp(w, h);
  }
  return residual + out;
}

Tensor LlamaModel::forward(const Tensor& tokens, KvCache& cache, int64_t logits_to_keep, const char* range) {
  prof::RecordFunction whole(range);
  if (!tokens.defined()) fail("llama", "{}: the tokens are undefined", range);
  if (tokens.ndim() != 1 || tokens.numel() == 0)
    fail("llama", "{}: tokens have shape {}; they must be 1-d with at least one token", range, tokens.shape().str());
  if (tokens.dtype() != DType::i64 && tokens.dtype() != DType::i32)
    fail("llama", "{}: tokens have dtype {}; they must be i64 or i32", range, dtype_name(tokens.dtype()));
  if (logits_to_keep < 0) fail("llama", "{}: logits_to_keep is {}; it must be 0 (all) or positive", range, logits_to_keep);
  int64_t n = tokens.numel(), past = cache.length();
  if (past + n > cfg_.max_seq)
    fail("llama", "{}: {} tokens after {} cached exceed max_seq {}", range, n, past, cfg_.max_seq);
  if (!cache.empty()) {
    const Tensor& k0 = cache.keys(0);
    if (cache.num_layers() != int(cfg_.n_layers) || k0.dim(0) != cfg_.n_kv_heads || k0.dim(2) != cfg_.head_dim() ||
        k0.dtype() != cfg_.dtype)
      fail("llama", "{}: the KV cache holds {} layers of {} {}, but this model has {} layers of ({}, L, {}) {}", range,
           cache.num_layers(), k0.shape().str(), dtype_name(k0.dtype()), cfg_.n_layers, cfg_.n_kv_heads,
           cfg_.head_dim(), dtype_name(cfg_.dtype));
  }

  Tensor h, mask, logits;
  Rotary rot;
  {
    prof::RecordFunction r("embed_tokens");
    h = embedding(w_.embed_tokens, tokens);
  }
  {
    prof::RecordFunction r("rotary_emb");
    rot = rotary(past, n);
  }
  if (n > 1) {  // one new token sees every key: no mask, as HF's decode
    prof::RecordFunction r("causal_mask");
    mask = causal_mask(n, past, cfg_.dtype);
  }
  // The cache changes only once the whole pass has run.
  std::vector<Tensor> ks(w_.layers.size()), vs(w_.layers.size());
  for (size_t i = 0; i < w_.layers.size(); ++i) h = layer(i, h, rot, mask, cache, ks[i], vs[i]);
  {
    prof::RecordFunction r("norm");
    h = norm(h, w_.norm);
  }
  if (logits_to_keep > 0 && logits_to_keep < n) h = h.slice(0, n - logits_to_keep, n);
  {
    prof::RecordFunction r("lm_head");
    logits = matmul(h, w_.lm_head.transpose(0, 1));
  }
  cache.k_ = std::move(ks);
  cache.v_ = std::move(vs);
  cache.length_ = past + n;
  return logits;
}

Tensor LlamaModel::prefill(const Tensor& tokens, KvCache& cache, int64_t logits_to_keep) {
  return forward(tokens, cache, logits_to_keep, "prefill");
}

Tensor LlamaModel::decode(const Tensor& token, KvCache& cache) {
  if (token.defined() && token.numel() != 1)
    fail("llama", "decode: takes one token, got shape {}", token.shape().str());
  return forward(token.defined() && token.ndim() == 0 ? token.reshape({1}) : token, cache, 0, "decode");
}

Tensor LlamaModel::decode(int64_t token, KvCache& cache) { return decode(from_host_i64({token}, {1}), cache); }

}  // namespace opscope::models
