// The pointwise half of a recurrent layer's time step: the gates from the input
// projection (computed for every step at once) and the recurrent product h W_hh^T
// (this step's gemm), then the new hidden (and cell) state. f32, one launch per step.
#pragma once
#include <cstdint>

#include "opscope/runtime/launch.h"
#include "opscope/runtime/tensor.h"

namespace opscope::cpu_kernels {

enum class RnnCell : uint8_t { lstm, gru, tanh, relu };

// Per batch row b, with G gates of H (torch's order: LSTM i, f, g, o; GRU r, z, n):
//   xp (B, G H)  x_t W_ih^T + b_ih (+ b_hh, except for the GRU), contiguous rows
//   hp (B, G H)  h_{t-1} W_hh^T, contiguous
//   b_hh (G H)   the GRU's recurrent bias (its n part is scaled by r); null otherwise
//   h_prev (B, H) and h_out (B, H): any row strides, unit column stride (h_out may be a
//                slice of the layer's output); c (B, H) contiguous, updated in place (LSTM)
LaunchSpec rnn_cell_spec(RnnCell kind, const Tensor& xp, const Tensor& hp, const Tensor* b_hh, const Tensor& h_prev,
                         const Tensor& h_out, const Tensor* c);

}  // namespace opscope::cpu_kernels
