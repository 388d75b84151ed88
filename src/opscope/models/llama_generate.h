// The decoder case study's workload, shared by `opscope profile llama` and the
// advisor's --verify (which must re-run exactly what was profiled).
#pragma once
#include <cstdint>

#include "opscope/models/llama.h"

namespace opscope::models {

// `tokens` prompt ids drawn from `seed` (mt19937_64) below the vocabulary size.
Tensor llama_prompt(const LlamaConfig& cfg, int64_t tokens, uint64_t seed);

struct GenerateTiming {
  double prefill_wall_ms = 0, decode_wall_ms = 0;  // per prefill, per decode step
};

// One generation: prefill (logits of the last token only, as transformers' generate),
// then greedy decode steps; each token is read back to the host, as a generate loop does.
GenerateTiming llama_generate(LlamaModel& m, const Tensor& prompt, int64_t steps);

}  // namespace opscope::models
