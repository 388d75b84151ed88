#include "opscope/kernels/cpu/conv.h"

#include <fmt/format.h>
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstring>
#include <string>
#include <vector>

#include "opscope/kernels/cpu/half_rows.h"
#include "opscope/kernels/cpu/sgemm.h"

namespace opscope::cpu_kernels {

namespace {

using kernels::Window2d;

constexpr int64_t kColsBytes = 512 << 10;           // a core's column buffer: about half of L2
constexpr int64_t kMinPixels = 128;                  // narrower: more sgemm calls, each packing its weights again
constexpr int64_t kChannelBlock = 64;               // output channels per work unit (matmul's row block)
constexpr int64_t kMinFlopsPerCore = int64_t(1) << 21;  // below this a second core costs more than it helps
constexpr int64_t kTapBlock = 4 * kVecLanes;             // depthwise outputs kept in registers (depthwise_taps)

// Output pixels per work unit: columns of K rows filling the buffer, but at least
// kMinPixels wide; the plane split into equal blocks (a multiple of 16, sgemm's panel).
int64_t pixel_block(int64_t k, int64_t pixels) {
  int64_t target = std::max(kMinPixels, kColsBytes / int64_t(sizeof(float)) / std::max<int64_t>(k, 1));
  int64_t blocks = (pixels + target - 1) / target;
  int64_t pb = ((pixels + blocks - 1) / blocks + 15) / 16 * 16;
  return std::min(pb, pixels);
}

// This core's column buffer, kept between launches (a fresh one per launch would be
// page-faulted in every time).
float* cols_buffer(size_t n) {
  thread_local std::vector<float> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// Where window column kj reads inside the input: output columns [lo, hi) of any row,
// computed once per launch (the divisions stay out of the copy loops).
struct ColumnRange {
  int64_t lo, hi;
};
std::vector<ColumnRange> column_ranges(const Window2d& g) {
  std::vector<ColumnRange> r(size_t(g.kw));
  for (int64_t kj = 0; kj < g.kw; ++kj) kernels::window_columns(g, kj, r[size_t(kj)].lo, r[size_t(kj)].hi);
  return r;
}

// The pixels [p0, p1) of a block as runs along output rows: row oy, columns [ox0, ox1).
struct Run {
  int64_t oy, ox0, ox1;
};

// The block's im2col columns, K rows of p1 - p0 pixels, from the group's input planes xg:
// the input under each pixel's window position, 0 in the padding.
void im2col_block(const float* xg, const Window2d& g, const ColumnRange* ranges, int64_t p0, int64_t p1, float* cols,
                  std::vector<Run>& runs) {
  runs.clear();
  for (int64_t p = p0; p < p1;) {
    int64_t oy = p / g.ow, ox0 = p % g.ow, ox1 = std::min(g.ow, ox0 + (p1 - p));
    runs.push_back({oy, ox0, ox1});
    p += ox1 - ox0;
  }
  float* d = cols;
  for (int64_t ci = 0; ci < g.cg(); ++ci) {
    const float* plane = xg + ci * g.h * g.w;
    for (int64_t ki = 0; ki < g.kh; ++ki)
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        int64_t off = kj * g.dw - g.pw;
        for (const Run& r : runs) {
          int64_t iy = r.oy * g.sh - g.ph + ki * g.dh;
          int64_t lo = std::clamp(ranges[kj].lo, r.ox0, r.ox1), hi = std::clamp(ranges[kj].hi, lo, r.ox1);
          if (iy < 0 || iy >= g.h) hi = lo;  // the whole run is padding
          std::fill(d, d + (lo - r.ox0), 0.0f);
          float* dv = d + (lo - r.ox0);
          if (hi > lo) {
            const float* src = plane + iy * g.w + lo * g.sw + off;
            if (g.sw == 1)
              for (int64_t i = 0; i < hi - lo; ++i) dv[i] = src[i];
            else
              for (int64_t i = 0; i < hi - lo; ++i) dv[i] = src[i * g.sw];
          }
          std::fill(dv + (hi - lo), d + (r.ox1 - r.ox0), 0.0f);
          d += r.ox1 - r.ox0;
        }
      }
  }
}

// The block C (rows x cols, row stride ldc) after sgemm: bias[o] added to row o, the
// residual's block (same place, same strides) added, then the activation, while the block
// is in cache. bias and residual may be null.
void epilogue(float* c, int64_t ldc, const float* bias, const float* residual, Activation act, int64_t rows,
              int64_t cols) {
  for (int64_t o = 0; o < rows; ++o) {
    float* r = c + o * ldc;
    if (bias) {
      float b = bias[o];
      for (int64_t j = 0; j < cols; ++j) r[j] += b;
    }
    if (residual) {
      const float* e = residual + o * ldc;
      for (int64_t j = 0; j < cols; ++j) r[j] += e[j];
    }
    apply_activation(act, r, cols);
  }
}

// "conv2d_1x1_f32"; with a residual and an activation fused, "conv2d_1x1_add_relu_f32".
// Made once per name.
const std::string& kernel_name(int base, bool residual, Activation act) {
  static const std::array<const char*, 3> bases = {"conv2d", "conv2d_1x1", "conv2d_depthwise"};
  static const auto names = [] {
    std::array<std::array<std::array<std::string, 5>, 2>, 3> n;
    for (size_t b = 0; b < bases.size(); ++b)
      for (int r = 0; r < 2; ++r)
        for (int a = 0; a < 5; ++a) {
          std::string_view act_name = activation_name(Activation(a));
          n[b][r][a] = fmt::format("{}{}{}{}_f32", bases[b], r ? "_add" : "", act_name.empty() ? "" : "_", act_name);
        }
    return n;
  }();
  return names[size_t(base)][residual][size_t(act)];
}

// conv2d_f32 and conv2d_1x1_f32: units (n, group, pixel block, channel block), channel
// block fastest, so that a core's consecutive units share the columns.
LaunchSpec gemm_conv_spec(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor* bias,
                          const Window2d& g, Activation act, const Tensor* residual) {
  const int64_t K = g.k(), P = g.pixels(), OCg = g.ocg();
  const bool direct = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0;
  const int64_t PB = pixel_block(K, P);
  const int64_t pblocks = (P + PB - 1) / PB, oblocks = (OCg + kChannelBlock - 1) / kChannelBlock;
  LaunchSpec spec;
  spec.name = kernel_name(direct ? 1 : 0, residual != nullptr, act);
  spec.work = g.n * g.groups * pblocks * oblocks;
  int64_t unit_flops = 2 * std::min(OCg, kChannelBlock) * K * PB;
  spec.grain = std::max<int64_t>(1, kMinFlopsPerCore / std::max<int64_t>(unit_flops, 1));
  spec.flops = 2 * g.n * g.oc * P * K + (bias ? out.numel() : 0);
  spec.bytes = x.nbytes() + weight.nbytes() + out.nbytes() + (bias ? bias->nbytes() : 0);
  const float* xp = x.data<float>();
  const float* wp = weight.data<float>();
  const float* bp = bias ? bias->data<float>() : nullptr;
  const float* rp = residual ? residual->data<float>() : nullptr;
  float* op = out.data<float>();
  std::vector<ColumnRange> ranges = column_ranges(g);
  static std::atomic<uint64_t> tokens{0};
  const uint64_t token = ++tokens;  // this launch, to the cores' column buffers
  spec.body = [=](int64_t begin, int64_t end) {
    float* cols = direct ? nullptr : cols_buffer(size_t(K * PB));
    std::vector<Run> runs;
    // The (n, group, pixel block) whose columns are in `cols`. Kept across calls: the
    // device hands a core its slice in a few consecutive chunks, which share columns.
    thread_local std::pair<uint64_t, int64_t> held{0, -1};  // (launch token, key)
    if (held.first != token) held = {token, -1};
    int64_t& built = held.second;
    for (int64_t u = begin; u < end; ++u) {
      int64_t ob = u % oblocks, key = u / oblocks, pb = key % pblocks, ng = key / pblocks;
      int64_t n = ng / g.groups, grp = ng % g.groups;
      int64_t p0 = pb * PB, p1 = std::min(P, p0 + PB), o0 = ob * kChannelBlock, o1 = std::min(OCg, o0 + kChannelBlock);
      const float* xg = xp + (n * g.c + grp * g.cg()) * g.h * g.w;  // the group's first input plane
      const float* b_mat = xg + p0;
      int64_t ldb = P;
      if (!direct) {
        if (key != built) im2col_block(xg, g, ranges.data(), p0, p1, cols, runs), built = key;
        b_mat = cols;
        ldb = p1 - p0;
      }
      int64_t oc0 = grp * OCg + o0;
      float* c = op + (n * g.oc + oc0) * P + p0;
      sgemm("conv2d", false, false, o1 - o0, p1 - p0, K, wp + oc0 * K, K, b_mat, ldb, 0.0f, c, P);
      if (bp || rp || act != Activation::none)
        epilogue(c, P, bp ? bp + oc0 : nullptr, rp ? rp + (c - op) : nullptr, act, o1 - o0, p1 - p0);
    }
  };
  return spec;
}

// One depthwise output plane y from its input plane. The zero-padded plane is split into
// sh x sw phases (phase (a, p): the padded rows a, a + sh, ... and columns p, p + sw, ...,
// each wq wide, with a row of tail), so that for every stride a tap (ki, kj) reads one
// phase at a fixed offset: output (oy, ox) takes phase ((ki dh) % sh, (kj dw) % sw) at
// (oy + ki dh / sh, ox + kj dw / sw). Each tap then adds w * (that phase, shifted) to a
// wide output of oh rows of wq, the columns past ow being scratch: one long unit-stride
// loop per tap, even for stride 2 on small planes (a row at a time, stride 2 read with a
// gather and a 14x14 plane made loops of 7: 2.8-8.5x torch's oneDNN, now 1.3-2.6x).
int64_t phase_width(const Window2d& g) { return (g.w + 2 * g.pw + g.sw - 1) / g.sw; }

int64_t depthwise_phase_floats(const Window2d& g) {
  const int64_t hq = (g.h + 2 * g.ph + g.sh - 1) / g.sh;
  return (hq + 1) * phase_width(g);  // a row of tail
}

// The phases, then the wide output rows, each run of them rounded up to kTapBlock: a block
// of depthwise_taps past the last output reads and writes there.
int64_t depthwise_buffer_floats(const Window2d& g) {
  return g.sh * g.sw * depthwise_phase_floats(g) + (g.oh * phase_width(g) + kTapBlock - 1) / kTapBlock * kTapBlock +
         kTapBlock;
}

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
// per tap loaded and stored y taps times: 1-16 GFLOP/s, 1.5-3x torch's time.)
[[gnu::always_inline]] inline void depthwise_block(const float* src, const int64_t* __restrict off,
                                                   const float* __restrict w, int64_t taps, float b, float* y) {
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

// depthwise_block over `rows` rows of `cols` outputs (at least kTapBlock), the rows of src
// in_stride apart and those of y out_stride apart. A row's last block starts at
// cols - kTapBlock, overlapping the one before it with the same values.
[[gnu::noinline]] void depthwise_taps(const float* src, const int64_t* off, const float* w, int64_t taps, float b,
                                      float* y, int64_t rows, int64_t in_stride, int64_t out_stride, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; c += kTapBlock) {
      const int64_t at = std::min(c, cols - kTapBlock);
      depthwise_block(src + r * in_stride + at, off, w, taps, b, y + r * out_stride + at);
    }
}

// Where tap (ki, kj) reads in the phases (below): from the start of the buffer, for the
// output at 0 of the wide rows.
std::vector<int64_t> depthwise_tap_offsets(const Window2d& g) {
  const int64_t wq = phase_width(g), phase = depthwise_phase_floats(g);
  std::vector<int64_t> off;
  for (int64_t ki = 0; ki < g.kh; ++ki)
    for (int64_t kj = 0; kj < g.kw; ++kj) {
      const int64_t ro = ki * g.dh, co = kj * g.dw;
      off.push_back(((ro % g.sh) * g.sw + co % g.sw) * phase + (ro / g.sh) * wq + co / g.sw);
    }
  return off;
}

// dst[j] = src[j] for j < n, inline: the rows here are short (7 to 112 floats), where a
// call to memmove per row weighed on small planes.
[[gnu::always_inline]] inline void copy_row(const float* __restrict src, float* __restrict dst, int64_t n) {
  int64_t j = 0;
  for (; j + kVecLanes <= n; j += kVecLanes) store_f32v(dst + j, load_f32v(src + j), false);
  for (; j < n; ++j) dst[j] = src[j];
}

// The phases' padding is zero in every plane: clear the buffer once for a run of planes,
// after which depthwise_plane writes only the phases' interior.
void depthwise_clear(const Window2d& g, float* buf) {
  std::fill(buf, buf + g.sh * g.sw * depthwise_phase_floats(g), 0.0f);
}

void depthwise_plane(const float* plane, const float* w, float b, float* y, const Window2d& g, float* buf,
                     const int64_t* tap_off) {
  const int64_t wq = phase_width(g), phase = depthwise_phase_floats(g);
  float* phases = buf;
  float* yw = buf + g.sh * g.sw * phase;
  // Input row iy is padded row iy + ph, row (iy + ph) / sh of the phases (iy + ph) % sh, p;
  // its column cq sw + p - pw is column cq of phase p. Counted, not divided (a division per
  // row took most of a small plane's time), and a strided read per phase, which GCC
  // vectorizes.
  for (int64_t p = 0; p < g.sw; ++p) {
    // cq from the first whose input column is >= 0 to the last whose column is < w (none
    // where w - 1 + pw - p < 0: a plane narrower than the stride).
    const int64_t lo = (g.pw - p + g.sw - 1) / g.sw, hi = (g.w - 1 + g.pw - p + g.sw) / g.sw;
    for (int64_t iy = 0, a = g.ph % g.sh, q = g.ph / g.sh; iy < g.h; ++iy) {
      float* __restrict dst = phases + (a * g.sw + p) * phase + q * wq;
      const float* __restrict from = plane + iy * g.w + p - g.pw;
      if (g.sw == 1)
        copy_row(from + lo, dst + lo, hi - lo);
      else if (g.sw == 2)
        for (int64_t cq = lo; cq < hi; ++cq) dst[cq] = from[2 * cq];
      else
        for (int64_t cq = lo; cq < hi; ++cq) dst[cq] = from[cq * g.sw];
      if (++a == g.sh) a = 0, ++q;
    }
  }
  const int64_t taps = g.kh * g.kw;
  if (g.ow >= kTapBlock) return depthwise_taps(phases, tap_off, w, taps, b, y, g.oh, wq, g.ow, g.ow);
  // Short rows: the oh rows of wq (the columns past ow scratch) as one run, rounded up to
  // kTapBlock into the buffer's slack, then copied out.
  const int64_t n = (g.oh * wq + kTapBlock - 1) / kTapBlock * kTapBlock;
  depthwise_taps(phases, tap_off, w, taps, b, yw, 1, 0, 0, n);
  for (int64_t oy = 0; oy < g.oh; ++oy) copy_row(yw + oy * wq, y + oy * g.ow, g.ow);
}

// conv2d_depthwise_f32: a unit is one output plane (n, o), from input channel o / (oc / c).
LaunchSpec depthwise_spec(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor* bias,
                          const Window2d& g, Activation act, const Tensor* residual) {
  const int64_t P = g.pixels(), taps = g.kh * g.kw, mult = g.ocg();
  LaunchSpec spec;
  spec.name = kernel_name(2, residual != nullptr, act);
  spec.work = g.n * g.oc;
  // Vector loops over a plane at a time: a quarter of the gemm kernels' threshold is worth a core.
  spec.grain = std::max<int64_t>(1, kMinFlopsPerCore / 4 / std::max<int64_t>(2 * P * taps, 1));
  spec.flops = 2 * g.n * g.oc * P * taps + (bias ? out.numel() : 0);
  spec.bytes = x.nbytes() + weight.nbytes() + out.nbytes() + (bias ? bias->nbytes() : 0);
  const float* xp = x.data<float>();
  const float* wp = weight.data<float>();
  const float* bp = bias ? bias->data<float>() : nullptr;
  const float* rp = residual ? residual->data<float>() : nullptr;
  float* op = out.data<float>();
  const int64_t buf_size = depthwise_buffer_floats(g);
  std::vector<int64_t> tap_off = depthwise_tap_offsets(g);
  spec.body = [=](int64_t begin, int64_t end) {
    float* buf = cols_buffer(size_t(buf_size));
    depthwise_clear(g, buf);
    for (int64_t u = begin; u < end; ++u) {
      int64_t n = u / g.oc, o = u % g.oc;
      const float* plane = xp + (n * g.c + o / mult) * g.h * g.w;
      float b = bp ? bp[o] : 0.0f;
      depthwise_plane(plane, wp + o * taps, b, op + u * P, g, buf, tap_off.data());
      // The bias is in already (the plane loops start from it): the residual and activation.
      if (rp || act != Activation::none) epilogue(op + u * P, P, nullptr, rp ? rp + u * P : nullptr, act, 1, P);
    }
  };
  return spec;
}

}  // namespace

LaunchSpec conv2d_spec(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor* bias,
                       const Window2d& g, Activation act, const Tensor* residual) {
  LaunchSpec spec = g.cg() == 1 && g.groups > 1 ? depthwise_spec(out, x, weight, bias, g, act, residual)
                                                : gemm_conv_spec(out, x, weight, bias, g, act, residual);
  if (residual) spec.bytes += residual->nbytes(), spec.flops += out.numel();
  return spec;
}

}  // namespace opscope::cpu_kernels
