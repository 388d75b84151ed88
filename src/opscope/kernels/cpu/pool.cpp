#include "opscope/kernels/cpu/pool.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace opscope::cpu_kernels {

namespace {

constexpr int64_t kMinComparesPerCore = int64_t(1) << 15;  // as elementwise kernels: 32K before a second core

template <class T>
void pool_plane(const T* x, T* y, int64_t* idx, const kernels::Window2d& g) {
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    for (int64_t ox = 0; ox < g.ow; ++ox) {
      float best = -std::numeric_limits<float>::infinity();
      int64_t at = -1;
      for (int64_t ki = 0; ki < g.kh; ++ki) {
        int64_t iy = oy * g.sh - g.ph + ki * g.dh;
        if (iy < 0 || iy >= g.h) continue;
        for (int64_t kj = 0; kj < g.kw; ++kj) {
          int64_t ix = ox * g.sw - g.pw + kj * g.dw;
          if (ix < 0 || ix >= g.w) continue;
          int64_t pos = iy * g.w + ix;
          float v = to_f32(x[pos]);
          if (at < 0) at = pos;  // torch's index when nothing beats -inf
          if (v > best || std::isnan(v)) best = v, at = pos;
        }
      }
      int64_t o = oy * g.ow + ox;
      // The input's own value: exact for every dtype (and -inf for an all-padding window).
      y[o] = at >= 0 ? x[at] : from_f32<T>(best);
      if (idx) idx[o] = at;
    }
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
  OPSCOPE_DISPATCH_FLOAT(x.dtype(), T, [&] {
    const T* xp = x.data<T>();
    T* yp = out.data<T>();
    spec.body = [=](int64_t begin, int64_t end) {
      for (int64_t u = begin; u < end; ++u) pool_plane(xp + u * in_plane, yp + u * P, ip ? ip + u * P : nullptr, g);
    };
  });
  return spec;
}

}  // namespace opscope::cpu_kernels
