#include "opscope/kernels/cpu/pool.h"

#include <fmt/format.h>

#include <algorithm>
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

// One plane, an output row at a time: each window element (ki, kj) is compared for the
// row's outputs that see it inside the input (their column range, from `cols`), so the
// inner loop has no bounds checks and vectorizes (the sizes are locals and the buffers
// restrict: an int64 store could otherwise alias them; 5x faster). Per output the
// elements come in torch's order (row by row of the window), so ties keep the first
// position and the last NaN wins. The comparisons read xs, the plane as f32 (x itself for
// f32; bf16 and f16 planes are converted first: strided 16-bit loads with a conversion
// kept the loop from vectorizing, 3.5x and 9.5x f32's time); the outputs are x's values.
template <class T, class S>
void pool_plane(const S* __restrict xs, const T* x, T* y, int64_t* idx, const kernels::Window2d& g,
                const int64_t* cols, float* __restrict best, int64_t* __restrict at) {
  const int64_t w = g.w, ow = g.ow, sw = g.sw;
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    std::fill(best, best + ow, -std::numeric_limits<float>::infinity());
    std::fill(at, at + ow, int64_t(-1));
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      int64_t iy = oy * g.sh - g.ph + ki * g.dh;
      if (iy < 0 || iy >= g.h) continue;
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        const int64_t pos = iy * w + kj * g.dw - g.pw;  // + ox * sw: the input position
        const int64_t lo = cols[2 * kj], hi = cols[2 * kj + 1];
        for (int64_t ox = lo; ox < hi; ++ox) {
          float v = xs[pos + ox * sw];
          bool take = v > best[ox] || v != v;
          best[ox] = take ? v : best[ox];
          at[ox] = take ? pos + ox * sw : at[ox];
        }
      }
    }
    for (int64_t ox = 0; ox < ow; ++ox) {
      int64_t a = at[ox] >= 0 ? at[ox] : first_inside(g, oy, ox);
      // The input's own value: exact for every dtype (-inf for a window in the padding).
      y[oy * ow + ox] = a >= 0 ? x[a] : from_f32<T>(best[ox]);
      if (idx) idx[oy * ow + ox] = a;
    }
  }
}

// The n elements at x as f32: x itself, or converted into buf.
template <class T> const float* plane_as_f32(const T* x, int64_t n, float* buf) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else {
    row_to_f32(x, buf, n);
    return buf;
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
  std::vector<int64_t> cols(size_t(2 * g.kw));  // [lo, hi) of output columns per window column
  for (int64_t kj = 0; kj < g.kw; ++kj) kernels::window_columns(g, kj, cols[size_t(2 * kj)], cols[size_t(2 * kj + 1)]);
  OPSCOPE_DISPATCH_FLOAT(x.dtype(), T, [&] {
    const T* xp = x.data<T>();
    T* yp = out.data<T>();
    spec.body = [=](int64_t begin, int64_t end) {
      std::vector<float> best(size_t(g.ow));
      std::vector<int64_t> at(size_t(g.ow));
      std::vector<float> plane(std::is_same_v<T, float> ? 0 : size_t(in_plane));
      for (int64_t u = begin; u < end; ++u) {
        const T* xu = xp + u * in_plane;
        pool_plane(plane_as_f32(xu, in_plane, plane.data()), xu, yp + u * P, ip ? ip + u * P : nullptr, g, cols.data(),
                   best.data(), at.data());
      }
    };
  });
  return spec;
}

}  // namespace opscope::cpu_kernels
