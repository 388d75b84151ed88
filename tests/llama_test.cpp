// The Llama model: shapes, the KV cache against full prefills, the causal mask, GQA
// against a double-precision reference, compiled regions against eager, configs,
// seeded weights and the profiler ranges.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "opscope/core/error.h"
#include "opscope/models/llama.h"
#include "opscope/ops/ops.h"
#include "opscope/profiler/session.h"
#include "opscope/runtime/device.h"
#include "test_util.h"

using namespace opscope;
using opscope::test_util::error_of;
using opscope::test_util::starts_with;
using namespace opscope::models;
namespace fs = std::filesystem;

namespace {

LlamaConfig tiny() { return LlamaConfig::preset("tiny"); }

Tensor tokens(const std::vector<int64_t>& ids) { return from_host_i64(ids, {int64_t(ids.size())}); }

std::vector<float> row(const Tensor& logits, int64_t r) { return logits.slice(0, r, r + 1).to_float_vector(); }

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, double(std::fabs(a[i] - b[i])));
  return d;
}

// Compiled regions build kernels: one cache folder for the suite, removed after it.
class LlamaCompiled : public ::testing::Test {
 protected:
  static inline std::string dir;
  static void SetUpTestSuite() {
    dir = (fs::temp_directory_path() / ("opscope-llama-cache-" + std::to_string(::getpid()))).string();
    std::error_code ec;  // (no assertion here: GoogleTest would mark the suite's tests skipped)
    fs::remove_all(dir, ec);
    ::setenv("OPSCOPE_CACHE_DIR", dir.c_str(), 1);
  }
  static void TearDownTestSuite() {
    ::unsetenv("OPSCOPE_CACHE_DIR");
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

// ---- a double-precision reference of the whole model, token by token ----

struct Ref {
  LlamaConfig c;
  std::map<std::string, std::vector<double>> w;
  explicit Ref(const LlamaModel& m) : c(m.config()) {
    for (auto& [name, t] : m.weights().named()) {
      std::vector<float> v = t.to(DType::f32).to_float_vector();
      w[name] = std::vector<double>(v.begin(), v.end());
    }
  }
  const std::vector<double>& W(const std::string& n) const { return w.at(n); }
  static std::vector<double> linear(const std::vector<double>& wt, const std::vector<double>& x) {
    size_t in = x.size(), out = wt.size() / in;
    std::vector<double> y(out, 0.0);
    for (size_t o = 0; o < out; ++o)
      for (size_t i = 0; i < in; ++i) y[o] += wt[o * in + i] * x[i];
    return y;
  }
  std::vector<double> rms(const std::vector<double>& x, const std::vector<double>& g) const {
    double ms = 0;
    for (double v : x) ms += v * v;
    double r = 1.0 / std::sqrt(ms / double(x.size()) + c.norm_eps);
    std::vector<double> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = g[i] * x[i] * r;
    return y;
  }
  void rope(std::vector<double>& x, int64_t heads, int64_t pos) const {
    int64_t hd = c.head_dim(), half = hd / 2;
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < half; ++i) {
        double a = double(pos) / std::pow(c.rope_theta, double(2 * i) / double(hd));
        double x1 = x[size_t(h * hd + i)], x2 = x[size_t(h * hd + i + half)];
        x[size_t(h * hd + i)] = x1 * std::cos(a) - x2 * std::sin(a);
        x[size_t(h * hd + i + half)] = x2 * std::cos(a) + x1 * std::sin(a);
      }
  }
  // Logits of every token of `ids` (a fresh sequence).
  std::vector<std::vector<double>> forward(const std::vector<int64_t>& ids) const {
    int64_t D = c.dim, H = c.n_heads, KV = c.n_kv_heads, hd = c.head_dim(), T = int64_t(ids.size());
    std::vector<std::vector<double>> x(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t) {
      const auto& e = W("model.embed_tokens.weight");
      x[size_t(t)].assign(e.begin() + ids[size_t(t)] * D, e.begin() + (ids[size_t(t)] + 1) * D);
    }
    for (int64_t l = 0; l < c.n_layers; ++l) {
      std::string p = "model.layers." + std::to_string(l) + ".";
      size_t n = static_cast<size_t>(T);
      std::vector<std::vector<double>> q(n), k(n), v(n);
      for (int64_t t = 0; t < T; ++t) {
        auto h = rms(x[size_t(t)], W(p + "input_layernorm.weight"));
        q[size_t(t)] = linear(W(p + "self_attn.q_proj.weight"), h);
        k[size_t(t)] = linear(W(p + "self_attn.k_proj.weight"), h);
        v[size_t(t)] = linear(W(p + "self_attn.v_proj.weight"), h);
        rope(q[size_t(t)], H, t);
        rope(k[size_t(t)], KV, t);
      }
      for (int64_t t = 0; t < T; ++t) {
        std::vector<double> o(static_cast<size_t>(D), 0.0);
        for (int64_t h = 0; h < H; ++h) {
          int64_t g = h / (H / KV);  // the kv head of this query head
          std::vector<double> s(static_cast<size_t>(t + 1));
          double mx = -1e300, sum = 0;
          for (int64_t j = 0; j <= t; ++j) {
            double d = 0;
            for (int64_t i = 0; i < hd; ++i) d += q[size_t(t)][size_t(h * hd + i)] * k[size_t(j)][size_t(g * hd + i)];
            s[size_t(j)] = d / std::sqrt(double(hd));
            mx = std::max(mx, s[size_t(j)]);
          }
          for (double& e : s) sum += (e = std::exp(e - mx));
          for (int64_t j = 0; j <= t; ++j)
            for (int64_t i = 0; i < hd; ++i) o[size_t(h * hd + i)] += s[size_t(j)] / sum * v[size_t(j)][size_t(g * hd + i)];
        }
        auto a = linear(W(p + "self_attn.o_proj.weight"), o);
        for (int64_t i = 0; i < D; ++i) x[size_t(t)][size_t(i)] += a[size_t(i)];
        auto h = rms(x[size_t(t)], W(p + "post_attention_layernorm.weight"));
        auto gate = linear(W(p + "mlp.gate_proj.weight"), h), up = linear(W(p + "mlp.up_proj.weight"), h);
        for (size_t i = 0; i < gate.size(); ++i) gate[i] = gate[i] / (1 + std::exp(-gate[i])) * up[i];
        auto m = linear(W(p + "mlp.down_proj.weight"), gate);
        for (int64_t i = 0; i < D; ++i) x[size_t(t)][size_t(i)] += m[size_t(i)];
      }
    }
    std::vector<std::vector<double>> logits;
    for (int64_t t = 0; t < T; ++t) logits.push_back(linear(W("lm_head.weight"), rms(x[size_t(t)], W("model.norm.weight"))));
    return logits;
  }
};

double max_diff_ref(const Tensor& logits, const std::vector<std::vector<double>>& ref) {
  std::vector<float> got = logits.to_float_vector();
  size_t V = ref[0].size();
  double d = 0;
  for (size_t t = 0; t < ref.size(); ++t)
    for (size_t i = 0; i < V; ++i) d = std::max(d, std::fabs(double(got[t * V + i]) - ref[t][i]));
  return d;
}

}  // namespace

TEST(Llama, PrefillAndDecodeShapes) {
  LlamaModel m(tiny(), 0);
  KvCache cache;
  Tensor logits = m.prefill(tokens({1, 2, 3, 4, 5}), cache);
  EXPECT_EQ(logits.shape(), Shape({5, 256}));
  EXPECT_EQ(cache.length(), 5);
  ASSERT_EQ(cache.num_layers(), 2);
  EXPECT_EQ(cache.keys(1).shape(), Shape({2, 5, 16}));
  EXPECT_EQ(cache.values(0).shape(), Shape({2, 5, 16}));
  Tensor next = m.decode(6, cache);
  EXPECT_EQ(next.shape(), Shape({1, 256}));
  EXPECT_EQ(cache.length(), 6);
  EXPECT_EQ(cache.keys(0).shape(), Shape({2, 6, 16}));
  KvCache other;
  EXPECT_EQ(m.prefill(tokens({1, 2, 3}), other, 1).shape(), Shape({1, 256}));
  for (float v : logits.to_float_vector()) ASSERT_TRUE(std::isfinite(v));
}

TEST(Llama, DecodeAfterPrefillEqualsAFullPrefill) {
  LlamaModel m(tiny(), 1);
  std::vector<int64_t> ids = {3, 14, 15, 92, 65, 35, 89, 79};
  KvCache full;
  Tensor all = m.prefill(tokens(ids), full);
  // Prefill 5, then decode the other 3 one by one: each decode sees the cache.
  KvCache c;
  Tensor first = m.prefill(tokens({ids.begin(), ids.begin() + 5}), c);
  EXPECT_LT(max_diff(first.to_float_vector(), all.slice(0, 0, 5).to_float_vector()), 1e-4);
  for (int64_t t = 5; t < 8; ++t) {
    Tensor step = m.decode(ids[size_t(t)], c);
    EXPECT_LT(max_diff(step.to_float_vector(), row(all, t)), 1e-4) << "token " << t;
  }
  // A prompt in two chunks: the second is masked against the cached keys too.
  KvCache chunked;
  m.prefill(tokens({ids.begin(), ids.begin() + 3}), chunked);
  Tensor rest = m.prefill(tokens({ids.begin() + 3, ids.end()}), chunked);
  EXPECT_LT(max_diff(rest.to_float_vector(), all.slice(0, 3, 8).to_float_vector()), 1e-4);
  // A wrong cache would change the logits: a decode after a different prompt differs.
  KvCache wrong;
  m.prefill(tokens({1, 1, 1, 1, 1, 1, 1}), wrong);
  EXPECT_GT(max_diff(m.decode(ids[7], wrong).to_float_vector(), row(all, 7)), 1e-2);
}

TEST(Llama, LaterTokensDoNotChangeEarlierLogits) {
  LlamaModel m(tiny(), 2);
  KvCache a, b;
  Tensor la = m.prefill(tokens({5, 6, 7, 8, 9, 10}), a);
  Tensor lb = m.prefill(tokens({5, 6, 7, 8, 200, 10}), b);
  for (int64_t t = 0; t < 4; ++t) EXPECT_LT(max_diff(row(la, t), row(lb, t)), 1e-5) << "token " << t;
  for (int64_t t = 4; t < 6; ++t) EXPECT_GT(max_diff(row(la, t), row(lb, t)), 1e-3) << "token " << t;
}

TEST(Llama, MatchesADoublePrecisionReference) {
  // GQA (2 query heads per kv head), multi-query (one kv head) and plain multi-head.
  for (int64_t kv : {2, 1, 4}) {
    LlamaConfig c = tiny();
    c.n_kv_heads = kv;
    LlamaModel m(c, 7);
    std::vector<int64_t> ids = {0, 17, 255, 42, 42, 9};
    KvCache cache;
    Tensor logits = m.prefill(tokens(ids), cache);
    auto ref = Ref(m).forward(ids);
    EXPECT_LT(max_diff_ref(logits, ref), 2e-4) << "n_kv_heads " << kv;
    Tensor step = m.decode(3, cache);
    ids.push_back(3);
    EXPECT_LT(max_diff_ref(step, {Ref(m).forward(ids).back()}), 2e-4) << "n_kv_heads " << kv;
  }
}

TEST(Llama, HalfPrecisionModelsTrackTheF32Model) {
  for (DType dt : {DType::bf16, DType::f16}) {
    LlamaConfig c = tiny();
    c.dtype = dt;
    LlamaModel low(c, 3);
    LlamaWeights w32 = low.weights();
    for (auto* l : {&w32.embed_tokens, &w32.norm, &w32.lm_head}) *l = l->to(DType::f32);
    for (auto& l : w32.layers)
      for (Tensor* t : {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.gate_proj, &l.up_proj, &l.down_proj,
                        &l.input_layernorm, &l.post_attention_layernorm})
        *t = t->to(DType::f32);
    LlamaModel ref = LlamaModel::from_weights(tiny(), w32);
    KvCache a, b;
    Tensor got = low.prefill(tokens({1, 2, 3, 4}), a);
    EXPECT_EQ(got.dtype(), dt);
    double d = max_diff(got.to_float_vector(), ref.prefill(tokens({1, 2, 3, 4}), b).to_float_vector());
    EXPECT_LT(d, 0.15) << dtype_name(dt);
    EXPECT_GT(d, 0.0) << dtype_name(dt);  // it did compute in low precision
  }
}

TEST(Llama, SeededWeightsAreReproducible) {
  LlamaModel a(tiny(), 5), b(tiny(), 5), c(tiny(), 6);
  auto na = a.weights().named(), nb = b.weights().named(), nc = c.weights().named();
  ASSERT_EQ(na.size(), 2 + 2 * 9 + 1u);
  for (size_t i = 0; i < na.size(); ++i) {
    EXPECT_EQ(na[i].second.to_float_vector(), nb[i].second.to_float_vector()) << na[i].first;
    EXPECT_NE(na[i].second.to_float_vector(), nc[i].second.to_float_vector()) << na[i].first;
  }
  // Scaled like a real init: Linear weights have std about 1/sqrt(fan_in).
  std::vector<float> q = a.weights().layers[0].q_proj.to_float_vector();
  double ss = 0;
  for (float v : q) ss += double(v) * v;
  EXPECT_NEAR(std::sqrt(ss / double(q.size())), 1.0 / 8.0, 0.01);
  // A layer's weights do not depend on how many layers there are.
  LlamaConfig three = tiny();
  three.n_layers = 3;
  EXPECT_EQ(LlamaModel(three, 5).weights().layers[1].down_proj.to_float_vector(),
            a.weights().layers[1].down_proj.to_float_vector());
}

TEST(Llama, BadConfigsAreRejectedNamingTheField) {
  auto with = [](auto change) {
    LlamaConfig c = tiny();
    change(c);
    return error_of([&] { LlamaModel m(c, 0); });
  };
  EXPECT_EQ(with([](LlamaConfig& c) { c.vocab = 0; }), "[llama] vocab is 0; it must be positive");
  EXPECT_EQ(with([](LlamaConfig& c) { c.n_layers = -1; }), "[llama] n_layers is -1; it must be positive");
  EXPECT_EQ(with([](LlamaConfig& c) { c.n_heads = 5; }), "[llama] dim 64 is not a multiple of n_heads 5");
  EXPECT_EQ(with([](LlamaConfig& c) { c.n_kv_heads = 3; }),
            "[llama] n_kv_heads 3 does not divide n_heads 4 (each kv head serves a group of query heads)");
  EXPECT_TRUE(starts_with(with([](LlamaConfig& c) { c.dim = 12, c.n_heads = 4, c.n_kv_heads = 1; }),
                          "[llama] head_dim 3 (dim 12 / n_heads 4) is odd"));
  EXPECT_EQ(with([](LlamaConfig& c) { c.norm_eps = 0; }), "[llama] norm_eps is 0; it must be positive");
  EXPECT_EQ(with([](LlamaConfig& c) { c.rope_theta = -1; }), "[llama] rope_theta is -1; it must be positive");
  EXPECT_EQ(with([](LlamaConfig& c) { c.dtype = DType::i32; }),
            "[llama] dtype i32 is not a floating type (f32, bf16, f16)");
  EXPECT_EQ(error_of([] { LlamaConfig::preset("gpt2"); }),
            "[llama] unknown preset 'gpt2' (expected tiny, tinyllama, llama3-8b-layer)");

  LlamaModel m(tiny(), 0);
  KvCache cache;
  EXPECT_TRUE(starts_with(error_of([&] { m.prefill(from_host({1, 2}, {2}), cache); }),
                          "[llama] prefill: tokens have dtype f32; they must be i64 or i32"));
  EXPECT_TRUE(starts_with(error_of([&] { m.prefill(from_host_i64({1, 2}, {1, 2}), cache); }),
                          "[llama] prefill: tokens have shape (1, 2)"));
  EXPECT_EQ(error_of([&] { m.prefill(from_host_i64(std::vector<int64_t>(257, 1), {257}), cache); }),
            "[llama] prefill: 257 tokens after 0 cached exceed max_seq 256");
  EXPECT_TRUE(starts_with(error_of([&] { m.decode(tokens({1, 2}), cache); }), "[llama] decode: takes one token"));
  EXPECT_EQ(cache.length(), 0);  // failed passes leave the cache alone
  EXPECT_EQ(error_of([&] { m.set_compiled_regions({"mlp"}); }),
            "[llama] unknown region 'mlp' (expected rms_norm, rope, attention, swiglu or all)");
  // A cache of another model.
  LlamaConfig mha = tiny();
  mha.n_kv_heads = 4;
  LlamaModel other(mha, 0);
  other.prefill(tokens({1}), cache);
  EXPECT_TRUE(starts_with(error_of([&] { m.decode(2, cache); }), "[llama] decode: the KV cache holds 2 layers of (4, 1, 16)"));
  // Token ids past the vocabulary: the embedding kernel's error, at the read.
  KvCache fresh;
  EXPECT_TRUE(starts_with(error_of([&] { m.prefill(tokens({1, 256}), fresh).to_float_vector(); }), "[embedding] index 256"));
}

TEST(Llama, PresetsHaveTheRealModelsShapes) {
  LlamaConfig t = LlamaConfig::preset("tinyllama");
  EXPECT_EQ(t.num_params(), 1'100'048'384);  // TinyLlama-1.1B
  LlamaConfig l = LlamaConfig::preset("llama3-8b-layer");
  EXPECT_EQ(l.n_layers, 1);
  l.n_layers = 32;
  EXPECT_EQ(l.num_params(), 8'030'261'248);  // Meta-Llama-3-8B
  EXPECT_EQ(l.head_dim(), 128);
  LlamaConfig back = LlamaConfig::from_json(t.to_json());
  EXPECT_EQ(back.to_json(), t.to_json());
  EXPECT_EQ(nlohmann::json::parse(t.to_json())["n_kv_heads"], 4);
  EXPECT_TRUE(starts_with(error_of([] { LlamaConfig::from_json(R"({"vocab": 3})"); }), "[llama] the config's \"dim\""));
  auto shapes = llama_weight_shapes(LlamaConfig::preset("llama3-8b-layer"));
  ASSERT_EQ(shapes.size(), 12u);
  EXPECT_EQ(shapes[2].first, "model.layers.0.self_attn.k_proj.weight");
  EXPECT_EQ(shapes[2].second, Shape({1024, 4096}));
  EXPECT_EQ(shapes[7].second, Shape({4096, 14336}));  // down_proj (out, in)
}

TEST(Llama, RegionsNameTheirOps) {
  const auto& r = llama_regions();
  ASSERT_EQ(r.size(), 4u);
  EXPECT_STREQ(r[0].name, "rms_norm");
  EXPECT_NE(std::string(r[0].ops).find("rsqrt"), std::string::npos);
  EXPECT_STREQ(r[3].name, "swiglu");
  EXPECT_NE(std::string(r[3].ops).find("silu"), std::string::npos);
}

TEST(Llama, ProfilesGroupByBlockAndSubLayer) {
  LlamaModel m(tiny(), 0);
  prof::Profiler p;
  p.start();
  KvCache cache;
  m.prefill(tokens({1, 2, 3}), cache);
  m.decode(4, cache);
  cpu().synchronize();
  p.stop();
  std::map<std::string, int> ranges;
  for (const auto& e : p.trace().events)
    if (e.kind == prof::EventKind::range) ++ranges[e.name];
  EXPECT_EQ(ranges["prefill"], 1);
  EXPECT_EQ(ranges["decode"], 1);
  EXPECT_EQ(ranges["layers.0"], 2);
  EXPECT_EQ(ranges["layers.1"], 2);
  EXPECT_EQ(ranges["self_attn"], 4);
  EXPECT_EQ(ranges["mlp"], 4);
  EXPECT_EQ(ranges["input_layernorm"], 4);
  EXPECT_EQ(ranges["post_attention_layernorm"], 4);
  EXPECT_EQ(ranges["embed_tokens"], 2);
  EXPECT_EQ(ranges["lm_head"], 2);
  EXPECT_EQ(ranges["causal_mask"], 1);  // decode needs none
}

TEST_F(LlamaCompiled, CompiledRegionsMatchEager) {
  LlamaModel m(tiny(), 4);
  std::vector<int64_t> ids = {9, 8, 7, 6, 5, 4, 3};
  KvCache ce;
  Tensor eager = m.prefill(tokens(ids), ce);
  std::vector<float> eager_steps;
  for (int64_t t : {11, 12, 13}) {
    auto v = m.decode(t, ce).to_float_vector();
    eager_steps.insert(eager_steps.end(), v.begin(), v.end());
  }
  // Each region alone, then all of them.
  std::vector<std::vector<std::string>> sets = {{"rms_norm"}, {"rope"}, {"attention"}, {"swiglu"}, {"all"}};
  for (const auto& regions : sets) {
    m.set_compiled_regions(regions);
    for (int rep = 0; rep < 2; ++rep) {  // the second pass runs the cached compiled functions
      KvCache cc;
      Tensor got = m.prefill(tokens(ids), cc);
      EXPECT_LT(max_diff(got.to_float_vector(), eager.to_float_vector()), 1e-4) << regions[0];
      std::vector<float> steps;
      for (int64_t t : {11, 12, 13}) {
        auto v = m.decode(t, cc).to_float_vector();
        steps.insert(steps.end(), v.begin(), v.end());
      }
      EXPECT_LT(max_diff(steps, eager_steps), 1e-4) << regions[0];
    }
  }
  EXPECT_EQ(m.compiled_regions(), (std::vector<std::string>{"rms_norm", "rope", "attention", "swiglu"}));
  // Compiled calls show as the regions' ops in a profile; decode steps, whose KV length
  // grows, trace nothing again.
  prof::Profiler p;
  p.start();
  KvCache cc;
  m.prefill(tokens(ids), cc);
  for (int64_t t : {1, 2, 3}) m.decode(t, cc);
  cpu().synchronize();
  p.stop();
  std::map<std::string, int> ops;
  int compiles = 0;
  for (const auto& e : p.trace().events)
    if (e.kind == prof::EventKind::op) {
      ++ops[e.name];
      compiles += e.name.rfind("compile:", 0) == 0;
    }
  EXPECT_EQ(compiles, 0);
  EXPECT_EQ(ops["llama_rms_norm"], 4 * (2 * 2 + 1));  // per pass: 2 per layer and the final norm
  EXPECT_EQ(ops["llama_rope"], 4 * 2 * 2);            // q and k per layer
  EXPECT_EQ(ops["llama_attention"], 2);               // prefill only
  EXPECT_EQ(ops["llama_swiglu"], 4 * 2);
  // The compiled prefill's attention is one node a layer, its softmax inside it (the
  // attention pass); the decode steps run softmax eagerly.
  EXPECT_EQ(ops["attention"], 2);
  EXPECT_EQ(ops["softmax"], 3 * 2);
  m.set_compiled_regions({});
  EXPECT_TRUE(m.compiled_regions().empty());
}

TEST_F(LlamaCompiled, HalfPrecisionCompiledTracksEager) {
  LlamaConfig c = tiny();
  c.dtype = DType::bf16;
  LlamaModel m(c, 8);
  std::vector<int64_t> ids = {1, 50, 100, 150, 200};
  KvCache ce;
  std::vector<float> eager = m.prefill(tokens(ids), ce).to_float_vector();
  std::vector<float> eager_step = m.decode(7, ce).to_float_vector();
  m.set_compiled_regions({"all"});
  for (int rep = 0; rep < 2; ++rep) {  // the first pass traces each region (eager values); the second runs them compiled
    KvCache cc;
    Tensor got = m.prefill(tokens(ids), cc);
    EXPECT_EQ(got.dtype(), DType::bf16);
    EXPECT_LT(max_diff(got.to_float_vector(), eager), 0.1) << "pass " << rep;
    EXPECT_LT(max_diff(m.decode(7, cc).to_float_vector(), eager_step), 0.1) << "pass " << rep;
  }
}
