#include "opscope/kernels/cpu/attention.h"

#include <fmt/format.h>

#include <algorithm>

#include "opscope/core/error.h"
#include "opscope/kernels/cpu/elementwise.h"
#include "opscope/kernels/cpu/norm.h"
#include "opscope/kernels/cpu/sgemm.h"
#include "opscope/kernels/cpu/strided.h"
#include "opscope/kernels/cpu/thread_row.h"

namespace opscope::cpu_kernels {

namespace {

// Scores a core keeps for one work unit: query rows x Tk floats (256 KiB), within one core's
// L2. A ViT-B/16 head (197 x 197) is then one unit, not two that each pack kᵀ and v for
// sgemm again: compiled ViT-B/16's attention 6.4-7.0 -> 5.8-6.0 ms a forward (Zen 5).
constexpr int64_t kScoreFloats = int64_t(1) << 16;

// A step's operand as the kernel reads it: for head h (of BH), row i and column j, the
// element at base[h] + i * row + j * col.
struct Operand {
  const float* data = nullptr;
  std::vector<int64_t> base;  // per head
  int64_t row = 0, col = 0;
};

Operand broadcast_operand(const Tensor& t, const Shape& scores) {
  const int n = scores.size(), m = t.ndim();
  if (t.dtype() != DType::f32 || m > n) fail("attention", "a score operand must be f32 of at most {} dims, got {} {}", n, dtype_name(t.dtype()), t.shape().str());
  if (!broadcasts_to(t.shape(), scores))
    fail("attention", "a score operand of shape {} does not broadcast to the scores' {}", t.shape().str(), scores.str());
  const Strides st = broadcast_strides(t, scores);
  Operand o;
  o.data = t.data<float>();
  o.row = st[n - 2];
  o.col = st[n - 1];
  int64_t heads = 1;
  for (int d = 0; d < n - 2; ++d) heads *= scores[d];
  o.base.resize(size_t(heads));
  for (int64_t h = 0; h < heads; ++h) o.base[size_t(h)] = offset_of(h, scores, st, n - 2);  // over the leading dims
  return o;
}

template <class F> inline void each(float* s, int64_t n, const float* x, int64_t col, F f) {
  if (col == 1)
    for (int64_t j = 0; j < n; ++j) s[j] = f(s[j], x[j]);
  else
    for (int64_t j = 0; j < n; ++j) s[j] = f(s[j], x[j * col]);
}

template <class F> inline void each_scalar(float* s, int64_t n, float x, F f) {
  for (int64_t j = 0; j < n; ++j) s[j] = f(s[j], x);
}

// One step on a row of n scores; x: the operand's row (null: the scalar), col its stride
// (0: one value for the whole row, as the scalar).
void apply(const ScoreStep& st, float* s, int64_t n, const float* x, int64_t col) {
  using Op = ScoreStep::Op;
  auto run = [&](auto f) {
    if (x && col != 0) each(s, n, x, col, f);
    else each_scalar(s, n, x ? x[0] : st.scalar, f);
  };
  if (!st.swap) {
    switch (st.op) {
      case Op::add: return run([](float a, float b) { return a + b; });
      case Op::sub: return run([](float a, float b) { return a - b; });
      case Op::mul: return run([](float a, float b) { return a * b; });
      case Op::div: return run([](float a, float b) { return a / b; });
    }
  }
  switch (st.op) {
    case Op::add: return run([](float a, float b) { return b + a; });
    case Op::sub: return run([](float a, float b) { return b - a; });
    case Op::mul: return run([](float a, float b) { return b * a; });
    case Op::div: return run([](float a, float b) { return b / a; });
  }
}

struct Matrix {
  const float* data;
  int64_t batch;  // stride between heads
  SgemmLayout how;
};

Matrix matrix(const Tensor& t, const char* what) {
  if (t.dtype() != DType::f32 || t.ndim() != 3)
    fail("attention", "{} must be a 3-d f32 tensor, got {} {}", what, dtype_name(t.dtype()), t.shape().str());
  auto how = sgemm_layout(t.shape()[1], t.shape()[2], t.strides()[1], t.strides()[2]);
  if (!how) fail("attention", "{} {} with strides {} has no dense dim", what, t.shape().str(), t.strides().str());
  return {t.data<float>(), t.shape()[0] == 1 ? 0 : t.strides()[0], *how};
}

}  // namespace

LaunchSpec attention_spec(const Tensor& out, const Tensor& q, const Tensor& kt, const Tensor& v,
                          const std::vector<ScoreStep>& steps, const Shape& scores) {
  Matrix mq = matrix(q, "q"), mk = matrix(kt, "kᵀ"), mv = matrix(v, "v");
  const int64_t BH = q.shape()[0], Tq = q.shape()[1], D = q.shape()[2], Tk = kt.shape()[2], Dv = v.shape()[2];
  int64_t heads = 1;
  for (int d = 0; d + 2 < scores.size(); ++d) heads *= scores[d];
  if (kt.shape()[0] != BH || v.shape()[0] != BH || kt.shape()[1] != D || v.shape()[1] != Tk || scores.size() < 2 ||
      scores[scores.size() - 2] != Tq || scores.back() != Tk || heads != BH)
    fail("attention", "shapes do not chain: q {}, kᵀ {}, v {}, scores {}", q.shape().str(), kt.shape().str(),
         v.shape().str(), scores.str());
  // out: any layout whose rows are dense and apart (the compiler may lay the heads out
  // in token order, for the consumer that wants them so)
  const int64_t o_head = out.ndim() == 3 ? out.strides()[0] : 0, o_row = out.ndim() == 3 ? out.strides()[1] : 0;
  if (out.shape() != Shape{BH, Tq, Dv} || out.dtype() != DType::f32 || (Dv > 1 && out.strides()[2] != 1) ||
      (Tq > 1 && o_row < Dv))
    fail("attention", "out must be f32 ({}, {}, {}) with dense rows, got {} {} with strides {}", BH, Tq, Dv,
         dtype_name(out.dtype()), out.shape().str(), out.strides().str());
  struct Step {
    ScoreStep step;
    Operand operand;
  };
  std::vector<Step> ss;
  for (const ScoreStep& s : steps) ss.push_back({s, s.operand ? broadcast_operand(*s.operand, scores) : Operand{}});
  // Query rows per unit: as many as fit kScoreFloats, in blocks of equal size (197 rows of
  // a ViT head as 99 + 98, not 166 + 31).
  const int64_t most = std::clamp<int64_t>(kScoreFloats / std::max<int64_t>(Tk, 1), 1, std::max<int64_t>(Tq, 1));
  const int64_t blocks = (Tq + most - 1) / most, rows = std::max<int64_t>(1, (Tq + blocks - 1) / std::max<int64_t>(blocks, 1));
  float* op = out.data<float>();
  const int64_t ld = (Tk + 15) / 16 * 16;  // score rows start on cache lines (197 keys: 208 apart)

  LaunchSpec spec;
  spec.name = kAttentionKernel;
  spec.work = BH * blocks;
  spec.grain = 1;
  spec.bytes = q.nbytes() + kt.nbytes() + v.nbytes() + out.nbytes();
  for (const ScoreStep& s : steps) spec.bytes += s.operand ? s.operand->nbytes() : 0;
  spec.flops = 2 * BH * Tq * Tk * (D + Dv) + BH * Tq * Tk * (20 + int64_t(steps.size()));
  spec.body = [=, ss = std::move(ss)](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u) {
      const int64_t h = u / blocks, i0 = (u % blocks) * rows, m = std::min(rows, Tq - i0);
      float* s = thread_row(rows * ld);  // softmax_rows_inplace does not use it
      // i0 is a row offset of q: rows step by lda untransposed, by 1 transposed
      const float* qa = mq.data + h * mq.batch + i0 * (mq.how.trans ? 1 : mq.how.ld);
      sgemm("attention", mq.how.trans, mk.how.trans, m, Tk, D, qa, mq.how.ld, mk.data + h * mk.batch, mk.how.ld, 0.0f,
            s, ld);
      for (int64_t i = 0; i < m; ++i)
        for (const Step& st : ss) {
          const Operand& o = st.operand;
          const float* x = o.data ? o.data + o.base[size_t(h)] + (i0 + i) * o.row : nullptr;
          apply(st.step, s + i * ld, Tk, x, o.col);
        }
      softmax_rows_inplace(s, m, Tk, ld);
      sgemm("attention", false, mv.how.trans, m, Dv, Tk, s, ld, mv.data + h * mv.batch, mv.how.ld, 0.0f,
            op + h * o_head + i0 * o_row, std::max(o_row, Dv));
    }
  };
  return spec;
}

}  // namespace opscope::cpu_kernels
