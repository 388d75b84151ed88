#include "opscope/kernels/cpu/conv_direct.h"

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
constexpr int64_t kGroupedMaxChannels = 16;    // input channels a group of conv2d_grouped_f32
constexpr int64_t kGroupedMinUnits = 16;       // units a launch: work for every core

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

// The phases of a band of out_rows output rows: the input rows they read, and a row of tail.
Phases band_phases_for(const Window2d& g, int64_t out_rows) {
  const int64_t input_rows = (out_rows - 1) * g.sh + (g.kh - 1) * g.dh + 1;
  return {(g.w + 2 * g.pw + g.sw - 1) / g.sw, (input_rows + g.sh - 1) / g.sh + 1};
}

// dst[j] = src[j] for j < n, inline: the rows here are short (7 to 230 floats), where a
// call to memmove per row weighed on small planes.
[[gnu::always_inline]] inline void copy_row(const float* __restrict src, float* __restrict dst, int64_t n) {
  int64_t j = 0;
  for (; j + kVecLanes <= n; j += kVecLanes) store_f32v(dst + j, load_f32v(src + j), false);
  for (; j < n; ++j) dst[j] = src[j];
}

// Column cq of phase p is padded column cq sw + p, input column cq sw + p - pw: inside the
// input for cq in [lo, hi) (empty for a plane narrower than the stride).
void phase_columns(const Window2d& g, int64_t p, int64_t& lo, int64_t& hi) {
  lo = (g.pw - p + g.sw - 1) / g.sw;
  hi = std::max(lo, (g.w - 1 + g.pw - p + g.sw) / g.sw);
}

// Input columns [lo, hi) of phase p's row from `from` (the input row, shifted by p - pw):
// a strided read, which GCC vectorizes.
[[gnu::always_inline]] inline void copy_phase_row(const float* __restrict from, float* __restrict row, int64_t lo,
                                                  int64_t hi, int64_t sw) {
  if (sw == 1)
    copy_row(from + lo, row + lo, hi - lo);
  else if (sw == 2)
    for (int64_t cq = lo; cq < hi; ++cq) row[cq] = from[2 * cq];
  else
    for (int64_t cq = lo; cq < hi; ++cq) row[cq] = from[cq * sw];
}

// The plane's rows into their phases in `to` (sh x sw phases of ph.floats()), the interior
// only: the padding is the same zeros for every plane of a launch, cleared once
// (clear_phases). Rows are counted, not divided (a division per row took most of a small
// plane's time).
void build_phases(const float* plane, const Window2d& g, const Phases& ph, float* to) {
  for (int64_t p = 0; p < g.sw; ++p) {
    int64_t lo, hi;
    phase_columns(g, p, lo, hi);
    // Input row iy is padded row iy + ph: row (iy + ph) / sh of phase ((iy + ph) % sh, p).
    for (int64_t iy = 0, a = g.ph % g.sh, q = g.ph / g.sh; iy < g.h; ++iy) {
      copy_phase_row(plane + iy * g.w + p - g.pw, to + (a * g.sw + p) * ph.floats() + q * ph.wq, lo, hi, g.sw);
      if (++a == g.sh) a = 0, ++q;
    }
  }
}

// A band of the plane from input row a0 (negative, or past h at the end: padding) into its
// phases: row r of phase (a, p) is input row a0 + r sh + a. Its padding rows differ from band
// to band and are written as zeros; the padding columns stay as cleared once (clear_phases).
void build_band_phases(const float* plane, const Window2d& g, int64_t a0, const Phases& ph, float* to) {
  for (int64_t p = 0; p < g.sw; ++p) {
    int64_t lo, hi;
    phase_columns(g, p, lo, hi);
    for (int64_t a = 0; a < g.sh; ++a) {
      float* phase = to + (a * g.sw + p) * ph.floats();
      for (int64_t r = 0, iy = a0 + a; r < ph.rows; ++r, iy += g.sh) {
        float* row = phase + r * ph.wq;
        if (iy < 0 || iy >= g.h) std::fill(row, row + ph.wq, 0.0f);
        else copy_phase_row(plane + iy * g.w + p - g.pw, row, lo, hi, g.sw);
      }
    }
  }
}

// Zeros over `planes` planes' phases.
void clear_phases(const Window2d& g, const Phases& ph, float* to, int64_t planes = 1) {
  std::fill(to, to + planes * g.sh * g.sw * ph.floats(), 0.0f);
}

// Where each tap reads in the phases of `planes` input planes laid one after another, for the
// output at row 0, column 0; in the weights' order (plane, ki, kj).
std::vector<int64_t> tap_offsets(const Window2d& g, const Phases& ph, int64_t planes = 1) {
  std::vector<int64_t> off;
  for (int64_t c = 0; c < planes; ++c)
    for (int64_t ki = 0; ki < g.kh; ++ki)
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        const int64_t ro = ki * g.dh, co = kj * g.dw;
        off.push_back((c * g.sh * g.sw + (ro % g.sh) * g.sw + co % g.sw) * ph.floats() + (ro / g.sh) * ph.wq +
                      co / g.sw);
      }
  return off;
}

// ---- Taps over a block of outputs ----

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
// in_stride apart and those of y out_stride apart, for `oc` output channels (their weights
// k apart, their outputs y_step apart, biases b or none). A row's last block starts at
// cols - kTapBlock, overlapping the one before it with the same values. The channel loop is
// inside the block loop: the inputs of a block's taps, a few lines of each phase of each
// input plane, stay in L1 for every channel.
[[gnu::noinline]] void run_taps(const float* src, const int64_t* off, const float* w, int64_t k, const float* b,
                                int64_t oc, float* y, int64_t y_step, int64_t rows, int64_t in_stride,
                                int64_t out_stride, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; c += kTapBlock) {
      const int64_t at = std::min(c, cols - kTapBlock);
      for (int64_t o = 0; o < oc; ++o)
        tap_block(src + r * in_stride + at, off, w + o * k, k, b ? b[o] : 0.0f, y + o * y_step + r * out_stride + at);
    }
}

// The span `rows` short output rows run as (plane_outputs), wq each, rounded up to a block.
int64_t span_floats(const Phases& ph, int64_t rows) { return (rows * ph.wq + kTapBlock - 1) / kTapBlock * kTapBlock; }

// `rows` output rows of one channel into y (ow apart): b (or 0) + its taps over the phases.
// Rows of a block or more are written in place; shorter ones run as one span of rows wq wide
// (the columns past ow scratch) into `wide`, then are copied out. A block past the phases'
// end reads on into `wide` (scratch outputs only), and one past span_floats into the
// kTapBlock after it.
void plane_outputs(const float* phases, const int64_t* off, const float* w, int64_t taps, const float* b, float* y,
                   int64_t rows, const Window2d& g, const Phases& ph, float* wide) {
  if (g.ow >= kTapBlock) return run_taps(phases, off, w, taps, b, 1, y, 0, rows, ph.wq, g.ow, g.ow);
  run_taps(phases, off, w, taps, b, 1, wide, 0, 1, 0, 0, span_floats(ph, rows));
  for (int64_t r = 0; r < rows; ++r) copy_row(wide + r * ph.wq, y + r * g.ow, g.ow);
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
  const int64_t phase_floats = g.sh * g.sw * ph.floats(), buf_size = phase_floats + span_floats(ph, g.oh) + kTapBlock;
  std::vector<int64_t> off = tap_offsets(g, ph);
  spec.body = [=](int64_t begin, int64_t end) {
    float* buf = cols_buffer(size_t(buf_size));
    clear_phases(g, ph, buf);
    for (int64_t u = begin; u < end; ++u) {
      int64_t n = u / g.oc, o = u % g.oc;
      build_phases(xp + (n * g.c + o / mult) * g.h * g.w, g, ph, buf);
      plane_outputs(buf, off.data(), wp + o * taps, taps, bp ? bp + o : nullptr, op + u * P, g.oh, g, ph,
                    buf + phase_floats);
      // The bias is in already (the taps start from it): the residual and activation.
      if (rp || act != Activation::none) epilogue(op + u * P, P, nullptr, rp ? rp + u * P : nullptr, act, 1, P);
    }
  };
  return spec;
}

bool grouped_direct_fits(const Window2d& g) {
  return g.groups > 1 && g.cg() > 1 && g.cg() <= kGroupedMaxChannels && g.kh * g.kw > 1;
}

// conv2d_grouped_f32: a unit is a band of output rows of one group of one image: the band's
// rows of the group's cg input planes split into phases once, then each of the group's
// output channels sums its cg x kh x kw taps over them.
LaunchSpec grouped_direct_spec(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor* bias,
                               const Window2d& g, Activation act, const Tensor* residual) {
  const int64_t P = g.pixels(), K = g.k(), cg = g.cg(), ocg = g.ocg();
  // Bands enough for kGroupedMinUnits units in all.
  const int64_t images = g.n * g.groups;  // (image, group) pairs
  const int64_t bands = std::min(g.oh, std::max<int64_t>(1, (kGroupedMinUnits + images - 1) / images));
  const int64_t band = (g.oh + bands - 1) / bands;
  LaunchSpec spec;
  spec.name = kernel_name(ConvKernel::grouped, residual != nullptr, act);
  spec.work = g.n * g.groups * bands;
  spec.grain = std::max<int64_t>(1, kMinFlopsPerCore / std::max<int64_t>(2 * ocg * band * g.ow * K, 1));
  spec.flops = 2 * g.n * g.oc * P * K + (bias ? out.numel() : 0);
  const ConvData d = conv_data(out, x, weight, bias, residual);
  spec.bytes = d.bytes;
  const float *xp = d.x, *wp = d.w, *bp = d.bias, *rp = d.residual;
  float* op = d.out;
  const Phases ph = band_phases_for(g, band);
  const int64_t plane_floats = g.sh * g.sw * ph.floats();
  std::vector<int64_t> off = tap_offsets(g, ph, cg);
  spec.body = [=](int64_t begin, int64_t end) {
    float* buf = cols_buffer(size_t(cg * plane_floats + span_floats(ph, band) + kTapBlock));
    float* wide = buf + cg * plane_floats;
    clear_phases(g, ph, buf, cg);
    for (int64_t u = begin; u < end; ++u) {
      const int64_t ng = u / bands, oy0 = (u % bands) * band, rows = std::min(band, g.oh - oy0);
      const int64_t n = ng / g.groups, grp = ng % g.groups;
      for (int64_t c = 0; c < cg; ++c)
        build_band_phases(xp + (n * g.c + grp * cg + c) * g.h * g.w, g, oy0 * g.sh - g.ph, ph, buf + c * plane_floats);
      const int64_t o0 = grp * ocg;
      const float* b0 = bp ? bp + o0 : nullptr;
      float* y0 = op + (n * g.oc + o0) * P + oy0 * g.ow;
      if (g.ow >= kTapBlock)  // all the group's channels block by block
        run_taps(buf, off.data(), wp + o0 * K, K, b0, ocg, y0, P, rows, ph.wq, g.ow, g.ow);
      else  // short rows: a small band, a channel at a time through the span
        for (int64_t o = 0; o < ocg; ++o)
          plane_outputs(buf, off.data(), wp + (o0 + o) * K, K, b0 ? b0 + o : nullptr, y0 + o * P, rows, g, ph, wide);
      if (rp || act != Activation::none)
        for (int64_t o = 0; o < ocg; ++o) {
          float* y = y0 + o * P;
          epilogue(y, rows * g.ow, nullptr, rp ? rp + (y - op) : nullptr, act, 1, rows * g.ow);
        }
    }
  };
  return spec;
}

}  // namespace opscope::cpu_kernels
