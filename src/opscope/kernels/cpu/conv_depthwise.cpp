#include "opscope/kernels/cpu/conv_depthwise.h"

#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <vector>

#include "opscope/kernels/cpu/conv_common.h"
#include "opscope/kernels/cpu/half_rows.h"

namespace opscope::cpu_kernels {

namespace {

using kernels::Window2d;
using namespace conv_detail;

constexpr int64_t kTapBlock = 4 * kVecLanes;  // outputs kept in registers (tap_block)

// ---- Stride phases. The zero-padded input plane split into sh x sw phases: phase (a, p)
// holds the padded rows a, a + sh, ... and columns p, p + sw, ..., each row wq wide, and a
// row of tail.
// Tap (ki, kj) of output (oy, ox) then reads phase ((ki dh) % sh, (kj dw) % sw) at row
// oy + (ki dh) / sh and column ox + (kj dw) / sw: one fixed offset per tap for every
// stride, so a tap is a unit-stride read of a row of outputs (a row read with a stride-2
// gather, or a 14x14 plane split into rows of 7, took 1.3-8.5x torch's oneDNN) ----
struct Phases {
  int64_t wq, rows;  // a phase's row length, and its rows (one of tail)
  int64_t floats() const { return wq * rows; }
};

Phases phases_for(const Window2d& g) {
  return {(g.w + 2 * g.pw + g.sw - 1) / g.sw, (g.h + 2 * g.ph + g.sh - 1) / g.sh + 1};
}

// dst[j] = src[j] for j < n, inline: the rows here are short (7 to 230 floats), where a
// call to memmove per row weighed on small planes.
[[gnu::always_inline]] inline void copy_row(const float* __restrict src, float* __restrict dst, int64_t n) {
  int64_t j = 0;
  for (; j + kVecLanes <= n; j += kVecLanes) store_f32v(dst + j, load_f32v(src + j), false);
  for (; j < n; ++j) dst[j] = src[j];
}

// The plane's rows into their phases in `to` (sh x sw phases of ph.floats()), the interior
// only: the padding is the same zeros for every plane of a launch, cleared once
// (clear_phases). Rows are counted, not divided (a division per row took most of a small
// plane's time), and a phase's row is a strided read, which GCC vectorizes.
void build_phases(const float* plane, const Window2d& g, const Phases& ph, float* to) {
  for (int64_t p = 0; p < g.sw; ++p) {
    // Column cq of phase p is padded column cq sw + p, input column cq sw + p - pw: inside
    // the input for cq in [lo, hi) (empty for a plane narrower than the stride).
    const int64_t lo = (g.pw - p + g.sw - 1) / g.sw, hi = std::max(lo, (g.w - 1 + g.pw - p + g.sw) / g.sw);
    // Input row iy is padded row iy + ph: row (iy + ph) / sh of phase ((iy + ph) % sh, p).
    for (int64_t iy = 0, a = g.ph % g.sh, q = g.ph / g.sh; iy < g.h; ++iy) {
      float* __restrict row = to + (a * g.sw + p) * ph.floats() + q * ph.wq;
      const float* __restrict from = plane + iy * g.w + p - g.pw;
      if (g.sw == 1)
        copy_row(from + lo, row + lo, hi - lo);
      else if (g.sw == 2)
        for (int64_t cq = lo; cq < hi; ++cq) row[cq] = from[2 * cq];
      else
        for (int64_t cq = lo; cq < hi; ++cq) row[cq] = from[cq * g.sw];
      if (++a == g.sh) a = 0, ++q;
    }
  }
}

void clear_phases(const Window2d& g, const Phases& ph, float* to) {
  std::fill(to, to + g.sh * g.sw * ph.floats(), 0.0f);
}

// Where each tap reads in the phases, for the output at row 0, column 0; in the weights'
// order (ki, kj).
std::vector<int64_t> tap_offsets(const Window2d& g, const Phases& ph) {
  std::vector<int64_t> off;
  for (int64_t ki = 0; ki < g.kh; ++ki)
    for (int64_t kj = 0; kj < g.kw; ++kj) {
      const int64_t ro = ki * g.dh, co = kj * g.dw;
      off.push_back(((ro % g.sh) * g.sw + co % g.sw) * ph.floats() + (ro / g.sh) * ph.wq + co / g.sw);
    }
  return off;
}

// ---- Taps over a block of outputs ----

// v in every lane: one vbroadcastss (GCC makes f32v{} + v a scalar add, then the broadcast).
[[gnu::always_inline]] inline f32v broadcast(float v) {
#if defined(__AVX512F__)
  return std::bit_cast<f32v>(_mm512_set1_ps(v));
#elif defined(__AVX__)
  return std::bit_cast<f32v>(_mm256_set1_ps(v));
#else
  return f32v{} + v;
#endif
}

// y[i] = b + sum over taps t of w[t] * src[off[t] + i] for i in [0, kTapBlock): four vectors
// of y stay in registers through every tap and are stored once, the even and odd taps in
// two sets of accumulators to keep eight FMA chains in flight. (A pass over the whole plane
// per tap loaded and stored y taps times: 1-16 GFLOP/s, 1.5-6x oneDNN's time.)
[[gnu::always_inline]] inline void tap_block(const float* src, const int64_t* __restrict off, const float* __restrict w,
                                             int64_t taps, float b, float* y) {
  constexpr int64_t V = kVecLanes;
  f32v a0 = broadcast(b), a1 = a0, a2 = a0, a3 = a0, c0 = {}, c1 = {}, c2 = {}, c3 = {};
  int64_t t = 0;
  for (; t + 2 <= taps; t += 2) {
    const float* s = src + off[t];
    const float* r = src + off[t + 1];
    f32v ws = broadcast(w[t]), wr = broadcast(w[t + 1]);
    a0 += ws * load_f32v(s);
    a1 += ws * load_f32v(s + V);
    a2 += ws * load_f32v(s + 2 * V);
    a3 += ws * load_f32v(s + 3 * V);
    c0 += wr * load_f32v(r);
    c1 += wr * load_f32v(r + V);
    c2 += wr * load_f32v(r + 2 * V);
    c3 += wr * load_f32v(r + 3 * V);
  }
  if (t < taps) {
    const float* s = src + off[t];
    f32v ws = broadcast(w[t]);
    a0 += ws * load_f32v(s);
    a1 += ws * load_f32v(s + V);
    a2 += ws * load_f32v(s + 2 * V);
    a3 += ws * load_f32v(s + 3 * V);
  }
  store_f32v(y, a0 + c0, false);
  store_f32v(y + V, a1 + c1, false);
  store_f32v(y + 2 * V, a2 + c2, false);
  store_f32v(y + 3 * V, a3 + c3, false);
}

// tap_block over `rows` rows of `cols` outputs (at least kTapBlock), the rows of src
// in_stride apart and those of y out_stride apart. A row's last block starts at
// cols - kTapBlock, overlapping the one before it with the same values.
[[gnu::noinline]] void run_taps(const float* src, const int64_t* off, const float* w, int64_t taps, float b, float* y,
                                int64_t rows, int64_t in_stride, int64_t out_stride, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; c += kTapBlock) {
      const int64_t at = std::min(c, cols - kTapBlock);
      tap_block(src + r * in_stride + at, off, w, taps, b, y + r * out_stride + at);
    }
}

// The oh rows of wq a plane of short rows runs as (plane_outputs), rounded up to a block.
int64_t wide_floats(const Window2d& g, const Phases& ph) {
  return (g.oh * ph.wq + kTapBlock - 1) / kTapBlock * kTapBlock;
}

// An output plane y: b + its taps over the phases. Rows of a block or more are written in
// place; shorter ones run as one span of oh rows wq wide (the columns past ow scratch) into
// `wide`, then are copied out. A block past the phases' end reads on into `wide` (scratch
// outputs only), and one past wide_floats into the kTapBlock after it.
void plane_outputs(const float* phases, const int64_t* off, const float* w, int64_t taps, float b, float* y,
                   const Window2d& g, const Phases& ph, float* wide) {
  if (g.ow >= kTapBlock) return run_taps(phases, off, w, taps, b, y, g.oh, ph.wq, g.ow, g.ow);
  run_taps(phases, off, w, taps, b, wide, 1, 0, 0, wide_floats(g, ph));
  for (int64_t r = 0; r < g.oh; ++r) copy_row(wide + r * ph.wq, y + r * g.ow, g.ow);
}

}  // namespace

// conv2d_depthwise_f32: a unit is one output plane (n, o), from input channel o / (oc / c).
LaunchSpec depthwise_spec(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor* bias,
                          const Window2d& g, Activation act, const Tensor* residual) {
  const int64_t P = g.pixels(), taps = g.kh * g.kw, mult = g.ocg();
  LaunchSpec spec;
  spec.name = kernel_name(ConvKernel::depthwise, residual != nullptr, act);
  spec.work = g.n * g.oc;
  // Vector loops over a plane at a time: a quarter of the gemm kernels' threshold is worth a core.
  spec.grain = std::max<int64_t>(1, kMinFlopsPerCore / 4 / std::max<int64_t>(2 * P * taps, 1));
  spec.flops = 2 * g.n * g.oc * P * taps + (bias ? out.numel() : 0);
  const ConvData d = conv_data(out, x, weight, bias, residual);
  spec.bytes = d.bytes;
  const float *xp = d.x, *wp = d.w, *bp = d.bias, *rp = d.residual;
  float* op = d.out;
  const Phases ph = phases_for(g);
  const int64_t phase_floats = g.sh * g.sw * ph.floats(), buf_size = phase_floats + wide_floats(g, ph) + kTapBlock;
  std::vector<int64_t> off = tap_offsets(g, ph);
  spec.body = [=](int64_t begin, int64_t end) {
    float* buf = cols_buffer(size_t(buf_size));
    clear_phases(g, ph, buf);
    for (int64_t u = begin; u < end; ++u) {
      int64_t n = u / g.oc, o = u % g.oc;
      build_phases(xp + (n * g.c + o / mult) * g.h * g.w, g, ph, buf);
      plane_outputs(buf, off.data(), wp + o * taps, taps, bp ? bp[o] : 0.0f, op + u * P, g, ph, buf + phase_floats);
      // The bias is in already (the taps start from it): the residual and activation.
      if (rp || act != Activation::none) epilogue(op + u * P, P, nullptr, rp ? rp + u * P : nullptr, act, 1, P);
    }
  };
  return spec;
}

}  // namespace opscope::cpu_kernels
