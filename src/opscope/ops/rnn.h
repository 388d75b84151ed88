// Recurrent layers as torch.nn.LSTM / GRU / RNN compute them (inference: no dropout, no
// projections): per layer and direction, the input projection of every time step is one
// matmul, and each step then costs one recurrent matmul (h W_hh^T) and one pointwise
// launch for the gates. Computed in f32 (bf16/f16 rounded once at the end). CPU device only.
#pragma once
#include <cstdint>
#include <vector>

#include "opscope/runtime/tensor.h"

namespace opscope {

enum class RnnMode : uint8_t { lstm, gru, rnn_tanh, rnn_relu };

// One layer and direction: w_ih (G H, I), w_hh (G H, H), biases (G H) or undefined, with
// G = 4 (LSTM: i, f, g, o), 3 (GRU: r, z, n) or 1.
struct RnnWeights {
  Tensor w_ih, w_hh, b_ih, b_hh;
};

struct RnnResult {
  Tensor output;    // (T, B, D H), or (B, T, D H) when batch_first
  Tensor h_n, c_n;  // (L D, B, H); c_n for LSTM only
};

// x (T, B, I) (batch_first: (B, T, I)); h0 and c0 (LSTM) (L D, B, H); `weights` has L D
// entries, layer-major (layer 0 forward, layer 0 backward, layer 1 forward, ...).
RnnResult rnn(RnnMode mode, const Tensor& x, const Tensor& h0, const Tensor& c0, const std::vector<RnnWeights>& weights,
              int64_t layers, bool bidirectional, bool batch_first);

}  // namespace opscope
