#include "opscope/kernels/cpu/rnn.h"

#include <algorithm>

// The gates' sigmoid and tanh as the eager elementwise kernels compute them: branch-free
// polynomials that vectorize, where the C library's scalar expf/tanhf took ~20 ns an
// element (a 4x256 tanh cell: 19 us, as long as its recurrent matmul).
#include "opscope/kernels/cpu/vec_math.inc"

namespace opscope::cpu_kernels {

namespace {

constexpr int64_t kMinElemsPerCore = int64_t(1) << 14;

// One batch row of the LSTM cell: gates i, f, g, o in xb / rb (4H each), c updated in place.
// A function of its own: inside the kernel's lambda GCC 12 did not vectorize this loop.
void lstm_row(const float* __restrict xb, const float* __restrict rb, float* __restrict cb, float* __restrict ob,
              int64_t H) {
  for (int64_t j = 0; j < H; ++j) {
    float i = ofs_sigmoid(xb[j] + rb[j]), f = ofs_sigmoid(xb[H + j] + rb[H + j]);
    float g = ofs_tanh(xb[2 * H + j] + rb[2 * H + j]), o = ofs_sigmoid(xb[3 * H + j] + rb[3 * H + j]);
    float cn = f * cb[j] + i * g;
    cb[j] = cn;
    ob[j] = o * ofs_tanh(cn);
  }
}

const char* cell_name(RnnCell k) {
  switch (k) {
    case RnnCell::lstm: return "lstm_cell_f32";
    case RnnCell::gru: return "gru_cell_f32";
    case RnnCell::tanh: return "rnn_tanh_cell_f32";
    case RnnCell::relu: return "rnn_relu_cell_f32";
  }
  return "rnn_cell_f32";
}

int gates(RnnCell k) { return k == RnnCell::lstm ? 4 : k == RnnCell::gru ? 3 : 1; }

}  // namespace

LaunchSpec rnn_cell_spec(RnnCell kind, const Tensor& xp, const Tensor& hp, const Tensor* b_hh, const Tensor& h_prev,
                         const Tensor& h_out, const Tensor* c) {
  const int64_t B = h_out.shape()[0], H = h_out.shape()[1], G = gates(kind), GH = G * H;
  const int64_t ldp = h_prev.strides()[0], ldo = h_out.strides()[0];
  const float* x = xp.data<float>();
  const float* r = hp.data<float>();
  const float* bh = b_hh ? b_hh->data<float>() : nullptr;
  const float* hprev = h_prev.data<float>();
  float* hout = h_out.data<float>();
  float* cp = c ? c->data<float>() : nullptr;
  LaunchSpec spec;
  spec.name = cell_name(kind);
  spec.work = B;
  spec.grain = std::max<int64_t>(1, kMinElemsPerCore / std::max<int64_t>(GH, 1));
  spec.bytes = 2 * xp.nbytes() + 3 * B * H * 4 + (c ? 2 * c->nbytes() : 0);
  spec.flops = B * GH * 4;
  spec.body = [=](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const float* __restrict xb = x + b * GH;
      const float* __restrict rb = r + b * GH;
      const float* __restrict hb = hprev + b * ldp;
      float* __restrict ob = hout + b * ldo;
      switch (kind) {
        case RnnCell::lstm:
          lstm_row(xb, rb, cp + b * H, ob, H);
          break;
        case RnnCell::gru:
          for (int64_t j = 0; j < H; ++j) {
            float rg = ofs_sigmoid(xb[j] + rb[j] + bh[j]), z = ofs_sigmoid(xb[H + j] + rb[H + j] + bh[H + j]);
            float n = ofs_tanh(xb[2 * H + j] + rg * (rb[2 * H + j] + bh[2 * H + j]));
            ob[j] = (1.0f - z) * n + z * hb[j];
          }
          break;
        case RnnCell::tanh:
          for (int64_t j = 0; j < H; ++j) ob[j] = ofs_tanh(xb[j] + rb[j]);
          break;
        case RnnCell::relu:
          for (int64_t j = 0; j < H; ++j) ob[j] = std::max(xb[j] + rb[j], 0.0f);
          break;
      }
    }
  };
  return spec;
}

}  // namespace opscope::cpu_kernels
