// Recurrent layers: aten's lstm.input, gru.input, rnn_tanh.input and rnn_relu.input (what
// nn.LSTM, nn.GRU and nn.RNN call), on opscope's rnn (ops/rnn.h): the input projection
// batched over time, one recurrent matmul and one gate launch per step. Training with
// dropout, projections (proj_size) and packed sequences fall back.
#include "opscope/core/error.h"
#include "opscope/ops/rnn.h"
#include "opscope/torch/kernels.h"

namespace opscope::torch_bridge {

namespace {

RnnMode mode_of(Rnn r) {
  switch (r) {
    case Rnn::lstm: return RnnMode::lstm;
    case Rnn::gru: return RnnMode::gru;
    case Rnn::tanh: return RnnMode::rnn_tanh;
    case Rnn::relu: return RnnMode::rnn_relu;
  }
  return RnnMode::rnn_tanh;
}

}  // namespace

// lstm.input(input, Tensor[] hx, Tensor[] params, has_biases, num_layers, dropout, train,
// bidirectional, batch_first) -> (output, h_n, c_n); gru.input / rnn_*.input take one hx
// tensor and return (output, h_n).
template <Rnn R>
void rnn_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& input = c.tensor(0);
  std::vector<at::Tensor> hx;
  if (R == Rnn::lstm) {
    for (const at::Tensor& t : c.arg(1).toTensorList()) hx.push_back(t);
  } else {
    hx.push_back(c.tensor(1));
  }
  std::vector<at::Tensor> params;
  for (const at::Tensor& t : c.arg(2).toTensorList()) params.push_back(t);
  bool has_biases = c.arg(3).toBool(), train = c.arg(6).toBool(), bidirectional = c.arg(7).toBool();
  int64_t layers = c.arg(4).toInt();
  double dropout = c.arg(5).toDouble();
  int64_t D = bidirectional ? 2 : 1, per = has_biases ? 4 : 2;
  if (hx.size() != (R == Rnn::lstm ? 2u : 1u) || (train && dropout > 0 && layers > 1) ||
      params.size() != size_t(layers * D * per) || input.dim() != 3)
    return c.fall_back();  // projections (5 params per layer), training dropout, packed input
  for (const at::Tensor& t : hx)
    if (!has_kernels({&t}) || t.scalar_type() != input.scalar_type()) return c.fall_back();
  for (const at::Tensor& t : params)
    if (!has_kernels({&t}) || t.scalar_type() != input.scalar_type()) return c.fall_back();
  if (!has_kernels({&input})) return c.fall_back();
  try {
    Tensor x = from_torch(input, c.name());
    AtenScope scope(c.name(), {&x});
    std::vector<RnnWeights> w;
    for (int64_t i = 0; i < layers * D; ++i) {
      RnnWeights rw;
      rw.w_ih = from_torch(params[size_t(i * per)], c.name());
      rw.w_hh = from_torch(params[size_t(i * per + 1)], c.name());
      if (has_biases) {
        rw.b_ih = from_torch(params[size_t(i * per + 2)], c.name());
        rw.b_hh = from_torch(params[size_t(i * per + 3)], c.name());
      }
      w.push_back(std::move(rw));
    }
    Tensor h0 = from_torch(hx[0], c.name());
    Tensor c0 = R == Rnn::lstm ? from_torch(hx[1], c.name()) : Tensor();
    RnnResult r = rnn(mode_of(R), x, h0, c0, w, layers, bidirectional, c.arg(8).toBool());
    if (R == Rnn::lstm) c.ret_tuple(to_torch(r.output), to_torch(r.h_n), to_torch(r.c_n));
    else c.ret_tuple(to_torch(r.output), to_torch(r.h_n));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

template void rnn_kernel<Rnn::lstm>(const c10::OperatorHandle&, Stack*);
template void rnn_kernel<Rnn::gru>(const c10::OperatorHandle&, Stack*);
template void rnn_kernel<Rnn::tanh>(const c10::OperatorHandle&, Stack*);
template void rnn_kernel<Rnn::relu>(const c10::OperatorHandle&, Stack*);

}  // namespace opscope::torch_bridge
