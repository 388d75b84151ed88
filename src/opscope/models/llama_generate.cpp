#include "opscope/models/llama_generate.h"

#include <chrono>
#include <random>
#include <vector>

#include "opscope/ops/ops.h"

namespace opscope::models {

Tensor llama_prompt(const LlamaConfig& cfg, int64_t tokens, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> ids(static_cast<size_t>(tokens));
  for (int64_t& id : ids) id = int64_t(rng() % uint64_t(cfg.vocab));
  return from_host_i64(ids, {tokens});
}

GenerateTiming llama_generate(LlamaModel& m, const Tensor& prompt, int64_t steps) {
  using clock = std::chrono::steady_clock;
  GenerateTiming t;
  KvCache cache;
  auto t0 = clock::now();
  Tensor next = argmax(m.prefill(prompt, cache, 1), -1);
  next.to_vector<int64_t>();
  auto t1 = clock::now();
  for (int64_t i = 0; i < steps; ++i) {
    next = argmax(m.decode(next, cache), -1);
    next.to_vector<int64_t>();
  }
  auto t2 = clock::now();
  t.prefill_wall_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  t.decode_wall_ms = steps ? std::chrono::duration<double, std::milli>(t2 - t1).count() / double(steps) : 0;
  return t;
}

}  // namespace opscope::models
