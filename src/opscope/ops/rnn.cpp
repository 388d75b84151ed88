// rnn: LSTM, GRU and Elman RNN layers over a sequence (kernels/cpu/rnn for the gates).
#include "opscope/ops/rnn.h"

#include "opscope/core/error.h"
#include "opscope/kernels/cpu/rnn.h"
#include "opscope/kernels/dispatch.h"
#include "opscope/ops/ops.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/runtime.h"

namespace opscope {

namespace {

int64_t gates_of(RnnMode m) { return m == RnnMode::lstm ? 4 : m == RnnMode::gru ? 3 : 1; }

cpu_kernels::RnnCell cell_of(RnnMode m) {
  switch (m) {
    case RnnMode::lstm: return cpu_kernels::RnnCell::lstm;
    case RnnMode::gru: return cpu_kernels::RnnCell::gru;
    case RnnMode::rnn_tanh: return cpu_kernels::RnnCell::tanh;
    case RnnMode::rnn_relu: return cpu_kernels::RnnCell::relu;
  }
  return cpu_kernels::RnnCell::tanh;
}

Tensor f32(const Tensor& t) { return t.defined() ? t.to(DType::f32) : t; }

void check_weights(const RnnWeights& w, int64_t GH, int64_t in, int64_t H, size_t i) {
  auto shape_is = [](const Tensor& t, std::initializer_list<int64_t> s) { return t.defined() && t.shape() == Shape(s); };
  if (!shape_is(w.w_ih, {GH, in}) || !shape_is(w.w_hh, {GH, H}))
    fail("rnn", "weights {}: w_ih {} and w_hh {} must be ({}, {}) and ({}, {})", i,
         w.w_ih.defined() ? w.w_ih.shape().str() : "undefined", w.w_hh.defined() ? w.w_hh.shape().str() : "undefined",
         GH, in, GH, H);
  for (const Tensor* b : {&w.b_ih, &w.b_hh})
    if (b->defined() && !shape_is(*b, {GH})) fail("rnn", "weights {}: a bias has shape {}, not ({})", i, b->shape().str(), GH);
}

}  // namespace

RnnResult rnn(RnnMode mode, const Tensor& x, const Tensor& h0, const Tensor& c0, const std::vector<RnnWeights>& weights,
              int64_t layers, bool bidirectional, bool batch_first) {
  OPSCOPE_OP("rnn", &x, &h0);
  const bool lstm = mode == RnnMode::lstm;
  if (!x.defined() || !h0.defined() || (lstm && !c0.defined()))
    fail("rnn", "x, h0{} must be defined", lstm ? " and c0" : "");
  if (x.ndim() != 3) fail("rnn", "x has shape {}; it must be (T, B, I) or, batch_first, (B, T, I)", x.shape().str());
  if (!is_floating(x.dtype())) fail("rnn", "x has dtype {}, not a floating type", dtype_name(x.dtype()));
  const int64_t D = bidirectional ? 2 : 1, G = gates_of(mode);
  if (layers < 1 || weights.size() != size_t(layers * D))
    fail("rnn", "{} weight sets for {} layers x {} directions", weights.size(), layers, D);
  const Tensor xs = batch_first ? x.transpose(0, 1) : x;  // (T, B, I)
  const int64_t T = xs.shape()[0], B = xs.shape()[1], H = weights[0].w_hh.defined() ? weights[0].w_hh.shape()[1] : 0;
  if (h0.ndim() != 3 || h0.shape() != Shape{layers * D, B, H} || (lstm && c0.shape() != h0.shape()))
    fail("rnn", "h0{} has shape {}; it must be ({}, {}, {})", lstm ? "/c0" : "", h0.shape().str(), layers * D, B, H);
  for (size_t i = 0; i < weights.size(); ++i)
    check_weights(weights[i], G * H, i < size_t(D) ? xs.shape()[2] : D * H, H, i);
  ops_detail::cpu_only("rnn", x.device());
  Device& dev = x.device();
  Tensor h_n = runtime::allocate({layers * D, B, H}, DType::f32, dev);
  Tensor c_n = lstm ? runtime::allocate({layers * D, B, H}, DType::f32, dev) : Tensor();
  Tensor h0f = f32(h0), c0f = f32(c0);
  Tensor in = f32(xs);
  for (int64_t l = 0; l < layers; ++l) {
    Tensor out = runtime::allocate({T, B, D * H}, DType::f32, dev);
    for (int64_t d = 0; d < D; ++d) {
      const RnnWeights& w = weights[size_t(l * D + d)];
      int64_t k = l * D + d;
      Tensor h = h0f.slice(0, k, k + 1).squeeze(0);
      Tensor c = lstm ? c0f.slice(0, k, k + 1).squeeze(0).clone() : Tensor();
      if (T > 0 && B > 0) {
        Tensor w_ih = f32(w.w_ih), w_hh_t = f32(w.w_hh).transpose(0, 1), b_ih = f32(w.b_ih), b_hh = f32(w.b_hh);
        // Every step's input projection at once; the recurrent bias joins it except for
        // the GRU, whose n gate scales it by r.
        Tensor xp = matmul(in.reshape({T * B, in.shape()[2]}), w_ih.transpose(0, 1));
        if (b_ih.defined()) xp = add(xp, b_ih);
        if (b_hh.defined() && mode != RnnMode::gru) xp = add(xp, b_hh);
        if (mode == RnnMode::gru && !b_hh.defined()) b_hh = zeros({G * H}, DType::f32, &dev);
        xp = xp.reshape({T, B, G * H});
        for (int64_t s = 0; s < T; ++s) {
          int64_t t = d == 0 ? s : T - 1 - s;
          Tensor hp = matmul(h, w_hh_t);
          Tensor xt = xp.slice(0, t, t + 1).squeeze(0);
          Tensor h_out = out.slice(0, t, t + 1).squeeze(0).slice(1, d * H, (d + 1) * H);
          LaunchSpec spec = cpu_kernels::rnn_cell_spec(cell_of(mode), xt, hp, mode == RnnMode::gru ? &b_hh : nullptr,
                                                       h, h_out, lstm ? &c : nullptr);
          if (lstm) runtime::launch(dev, std::move(spec), {&xt, &hp, &h}, {&h_out, &c});
          else if (mode == RnnMode::gru) runtime::launch(dev, std::move(spec), {&xt, &hp, &h, &b_hh}, {&h_out});
          else runtime::launch(dev, std::move(spec), {&xt, &hp, &h}, {&h_out});
          h = h_out;
        }
      }
      if (B * H > 0) {
        kernels::launch_copy(h_n.slice(0, k, k + 1).squeeze(0), h);
        if (lstm) kernels::launch_copy(c_n.slice(0, k, k + 1).squeeze(0), c);
      }
    }
    in = out;
  }
  RnnResult r;
  r.output = batch_first ? in.transpose(0, 1).contiguous() : in;
  DType dt = x.dtype();
  r.output = r.output.to(dt), r.h_n = h_n.to(dt), r.c_n = lstm ? c_n.to(dt) : Tensor();
  return r;
}

}  // namespace opscope
