#include "opscope/kernels/cpu/pool.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "opscope/kernels/cpu/half_rows.h"

namespace opscope::cpu_kernels {

namespace {

constexpr int64_t kMinComparesPerCore = int64_t(1) << 15;  // as elementwise kernels: 32K before a second core

// Where the window of output (oy, ox) first reads inside the input: torch's index when
// nothing beats -inf. -1 if the window lies in the padding (the op's checks rule it out).
int64_t first_inside(const kernels::Window2d& g, int64_t oy, int64_t ox) {
  for (int64_t ki = 0; ki < g.kh; ++ki) {
    int64_t iy = oy * g.sh - g.ph + ki * g.dh;
    if (iy < 0 || iy >= g.h) continue;
    for (int64_t kj = 0; kj < g.kw; ++kj) {
      int64_t ix = ox * g.sw - g.pw + kj * g.dw;
      if (ix >= 0 && ix < g.w) return iy * g.w + ix;
    }
  }
  return -1;
}

// Output row oy from its windows' winners: the value (the input's own: exact for every
// dtype; -inf for a window in the padding) and, with idx, its position. In f32 the maxima
// are the input's values already, and the positions a loop without branches; a window
// nothing won (all -inf) takes torch's index, its first element inside the input, after.
// tap_offset[ki * kw + kj]: that window element's input position past the window's origin.
// Out of line: inlined, its loops kept a branch per output.
template <class T>
[[gnu::noinline]] void write_row(const T* x, T* __restrict y, int64_t* __restrict idx, const kernels::Window2d& g,
                                 int64_t oy, const int64_t* tap_offset, const float* __restrict best,
                                 const float* __restrict tap) {
  const int64_t ow = g.ow, sw = g.sw, row0 = (oy * g.sh - g.ph) * g.w - g.pw;
  if constexpr (std::is_same_v<T, float>) {
    std::copy(best, best + ow, y);
    if (idx)
      for (int64_t ox = 0; ox < ow; ++ox) {
        int32_t t = int32_t(tap[ox]);
        idx[ox] = row0 + ox * sw + tap_offset[t & ~(t >> 31)];  // -1 (nothing won) reads element 0's; fixed below
      }
  } else {
    for (int64_t ox = 0; ox < ow; ++ox) {
      if (tap[ox] < 0) continue;  // nothing won: below
      const int64_t a = row0 + ox * sw + tap_offset[int64_t(tap[ox])];
      y[ox] = x[a];
      if (idx) idx[ox] = a;
    }
  }
  uint32_t signs = 0;  // a sign bit where nothing won: an OR over the row, which vectorizes
  for (int64_t ox = 0; ox < ow; ++ox) signs |= std::bit_cast<uint32_t>(tap[ox]);
  if (!(signs >> 31)) return;
  for (int64_t ox = 0; ox < ow; ++ox) {
    if (tap[ox] >= 0) continue;
    const int64_t a = first_inside(g, oy, ox);
    y[ox] = a >= 0 ? x[a] : from_f32<T>(best[ox]);
    if (idx) idx[ox] = a;
  }
}

// Max pooling a band of output rows at a time, as depthwise_plane (conv.cpp) convolves: the
// band's input rows, zero-padded with -inf, are split into sh x sw phases (phase (a, p): the
// padded rows a, a + sh, ... and columns p, p + sw, ..., wq wide), so that window element
// (ki, kj) reads one phase at a fixed offset for every output: one long unit-stride loop
// per window element over the band's oh x wq outputs (the columns past ow are scratch).
// Row by row, the loops ran 56 outputs at a time with a strided read, and the loop
// overheads and a scalar index pass held ResNet's 3x3/2 pool on 64x112x112 to 1.1 ms.
// Each output keeps its best value and the number of the window element that gave it (a
// float: one blend each in 8 or 16 lanes); the elements come in torch's order (row by row
// of the window), so ties keep the first and the last NaN wins; -inf padding never wins.
struct PoolBands {
  int64_t wq = 0;     // phase and output row width
  int64_t rows = 0;   // output rows per band
  int64_t phase = 0;  // floats per phase of a band (its rows and a tail row, wq each)

  explicit PoolBands(const kernels::Window2d& g) {
    wq = std::max((g.w + g.pw - 1) / g.sw + 1, g.ow + (g.kw - 1) * g.dw / g.sw);
    constexpr int64_t kBandFloats = int64_t(1) << 16;  // the phases of a band: 256 KiB, in L2
    const int64_t reach = (g.kh - 1) * g.dh + 2 * g.sh;  // padded rows beyond R * sh, tail included
    rows = std::clamp<int64_t>((kBandFloats / (wq * g.sw) - reach) / g.sh, 1, std::max<int64_t>(g.oh, 1));
    phase = band_rows(g, rows) * wq;
  }
  // Rows per phase for a band of r output rows: the padded rows it reads, and a tail row.
  static int64_t band_rows(const kernels::Window2d& g, int64_t r) {
    return ((r - 1) * g.sh + (g.kh - 1) * g.dh + 1 + g.sh - 1) / g.sh + 1;
  }
  int64_t floats(const kernels::Window2d& g) const { return g.sh * g.sw * phase; }
};

// Input row x of w into its sw phases, `stride` floats apart: input column ix is padded
// column ix + pw, phase (ix + pw) % sw at (ix + pw) / sw. Counted, not divided; stride 1 and
// 2 (the pools of every CNN here) as loops GCC vectorizes.
void split_f32_row(const float* __restrict x, int64_t w, int64_t sw, int64_t pw, int64_t stride,
                   float* __restrict dst) {
  if (sw == 1) {
    std::copy(x, x + w, dst + pw);
    return;
  }
  if (sw == 2) {
    const int64_t e = pw % 2;  // the phase of input column 0
    float* __restrict a = dst + e * stride + pw / 2;              // columns 0, 2, 4, ...
    float* __restrict b = dst + (1 - e) * stride + (pw + 1) / 2;  // columns 1, 3, 5, ...
    for (int64_t j = 0; j < w / 2; ++j) {
      a[j] = x[2 * j];
      b[j] = x[2 * j + 1];
    }
    if (w % 2) a[w / 2] = x[w - 1];
    return;
  }
  for (int64_t p = 0; p < sw; ++p) {
    const int64_t ix0 = ((p - pw) % sw + sw) % sw;  // the first input column in phase p
    float* __restrict o = dst + p * stride + (ix0 + pw) / sw;
    for (int64_t j = 0, ix = ix0; ix < w; ++j, ix += sw) o[j] = x[ix];
  }
}

// The same for a row of any dtype: a 16-bit row is converted into `row_f32` first, by the
// hardware's converts (GCC 12 converts _Float16 an element at a time).
template <class T>
void split_row(const T* x, int64_t w, int64_t sw, int64_t pw, int64_t stride, float* dst, float* row_f32) {
  if constexpr (std::is_same_v<T, float>) {
    split_f32_row(x, w, sw, pw, stride, dst);
  } else {
    row_to_f32(x, row_f32, w);
    split_f32_row(row_f32, w, sw, pw, stride, dst);
  }
}

// best[i], tap[i] = src[i], t where src[i] beats best[i] or is NaN. Out of line, so that
// GCC sees three restrict arrays and vectorizes it (inlined into pool_band it stayed
// scalar: 4x the row-by-row kernel's time).
[[gnu::noinline]] void take_max(const float* __restrict src, float* __restrict best, float* __restrict tap, float t,
                                int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float v = src[i];
    bool take = v > best[i] || v != v;
    best[i] = take ? v : best[i];
    tap[i] = take ? t : tap[i];
  }
}

template <class T>
void pool_band(const T* x, T* y, int64_t* idx, const kernels::Window2d& g, const PoolBands& bands, int64_t oy0,
               int64_t oy1, const int64_t* tap_offset, float* __restrict phases, float* __restrict best,
               float* __restrict tap, float* __restrict row_f32) {
  const int64_t wq = bands.wq, sh = g.sh, sw = g.sw, w = g.w;
  const int64_t nr = (oy1 - oy0 - 1) * sh + (g.kh - 1) * g.dh + 1;  // padded rows the band reads
  std::fill(phases, phases + bands.floats(g), -std::numeric_limits<float>::infinity());
  for (int64_t rr = 0; rr < nr; ++rr) {  // the band's padded rows, from its first window row
    const int64_t iy = oy0 * sh + rr - g.ph;
    if (iy < 0 || iy >= g.h) continue;
    const T* src = x + iy * w;
    float* dst = phases + (rr % sh) * sw * bands.phase + (rr / sh) * wq;
    split_row(src, w, sw, g.pw, bands.phase, dst, row_f32);
  }
  const int64_t n = (oy1 - oy0) * wq;
  std::fill(best, best + n, -std::numeric_limits<float>::infinity());
  std::fill(tap, tap + n, -1.0f);
  for (int64_t ki = 0; ki < g.kh; ++ki)
    for (int64_t kj = 0; kj < g.kw; ++kj) {
      const int64_t ro = ki * g.dh, co = kj * g.dw;
      const float* __restrict src = phases + ((ro % sh) * sw + co % sw) * bands.phase + (ro / sh) * wq + co / sw;
      take_max(src, best, tap, float(ki * g.kw + kj), n);
    }
  for (int64_t oy = oy0; oy < oy1; ++oy) {
    const float* b = best + (oy - oy0) * wq;
    const float* k = tap + (oy - oy0) * wq;
    write_row(x, y + oy * g.ow, idx ? idx + oy * g.ow : nullptr, g, oy, tap_offset, b, k);
  }
}

}  // namespace

LaunchSpec max_pool2d_spec(const Tensor& out, const Tensor* indices, const Tensor& x, const kernels::Window2d& g) {
  const int64_t P = g.pixels(), in_plane = g.h * g.w, taps = g.kh * g.kw;
  LaunchSpec spec;
  spec.name = fmt::format("max_pool2d_{}", dtype_name(x.dtype()));
  spec.work = g.n * g.c;
  spec.grain = std::max<int64_t>(1, kMinComparesPerCore / std::max<int64_t>(P * taps, 1));
  spec.bytes = x.nbytes() + out.nbytes() + (indices ? indices->nbytes() : 0);
  spec.flops = out.numel() * taps;  // one comparison per window element
  int64_t* ip = indices ? indices->data<int64_t>() : nullptr;
  std::vector<int64_t> tap_offset;
  for (int64_t ki = 0; ki < g.kh; ++ki)
    for (int64_t kj = 0; kj < g.kw; ++kj) tap_offset.push_back(ki * g.dh * g.w + kj * g.dw);
  const PoolBands bands(g);
  OPSCOPE_DISPATCH_FLOAT(x.dtype(), T, [&] {
    const T* xp = x.data<T>();
    T* yp = out.data<T>();
    spec.body = [=](int64_t begin, int64_t end) {
      const int64_t n = bands.rows * bands.wq;
      std::vector<float> phases(size_t(bands.floats(g))), best(static_cast<size_t>(n)), tap(static_cast<size_t>(n));
      std::vector<float> row_f32(std::is_same_v<T, float> ? 0 : size_t(g.w));  // a 16-bit input row, converted
      for (int64_t u = begin; u < end; ++u)
        for (int64_t oy = 0; oy < g.oh; oy += bands.rows)
          pool_band(xp + u * in_plane, yp + u * P, ip ? ip + u * P : nullptr, g, bands, oy,
                    std::min(g.oh, oy + bands.rows), tap_offset.data(), phases.data(), best.data(), tap.data(),
                    row_f32.data());
    };
  });
  return spec;
}

}  // namespace opscope::cpu_kernels
