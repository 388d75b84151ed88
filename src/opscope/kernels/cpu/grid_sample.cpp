#include "opscope/kernels/cpu/grid_sample.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace opscope::cpu_kernels {

namespace {

// Pixel positions past this are outside any image (and would overflow int64 when floored).
constexpr float kFar = 1e9f;

// A grid coordinate in [-1, 1] as a pixel position along an axis of `size`.
float unnormalize(float g, int64_t size, bool align_corners) {
  return align_corners ? (g + 1) / 2 * float(size - 1) : ((g + 1) * float(size) - 1) / 2;
}

// Into [0, size - 1]; NaN to 0, as torch's vectorized clip.
float clip(float v, int64_t size) { return v > 0 ? std::min(float(size - 1), v) : 0.0f; }

// v reflected into [twice_low / 2, twice_high / 2] (GridSampler.h's reflect_coordinates).
// NaN stays NaN (the clip after it gives pixel 0, as torch's); the flips' parity is taken in
// float, so a point far outside does not overflow an integer.
float reflect(float v, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return 0;
  if (v != v) return v;
  float lo = float(twice_low) / 2, span = float(twice_high - twice_low) / 2;
  v = std::fabs(v - lo);
  float extra = std::fmod(v, span);
  bool even = std::fmod(std::floor(v / span), 2.0f) == 0.0f;
  return even ? extra + lo : span - extra + lo;
}

float source(float g, int64_t size, GridPadding padding, bool align_corners) {
  float v = unnormalize(g, size, align_corners);
  if (padding == GridPadding::border) return clip(v, size);
  if (padding == GridPadding::reflection) {
    v = align_corners ? reflect(v, 0, 2 * (size - 1)) : reflect(v, -1, 2 * size - 1);
    return clip(v, size);
  }
  return v;
}

}  // namespace

LaunchSpec grid_sample_spec(const Tensor& out, const Tensor& x, const Tensor& grid, GridInterp mode, GridPadding padding,
                            bool align_corners) {
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t Ho = grid.shape()[1], Wo = grid.shape()[2];
  LaunchSpec spec;
  spec.name = fmt::format("grid_sample_{}", dtype_name(x.dtype()));
  spec.work = N * Ho;  // a row of output points, every channel
  spec.grain = std::max<int64_t>(1, (int64_t(1) << 14) / std::max<int64_t>(Wo * C, 1));
  spec.bytes = x.nbytes() + grid.nbytes() + out.nbytes();
  spec.flops = out.numel() * (mode == GridInterp::bilinear ? 8 : 1);
  OPSCOPE_DISPATCH_FLOAT(x.dtype(), T, [&] {
    const T* xp = x.data<T>();
    const T* gp = grid.data<T>();
    T* op = out.data<T>();
    spec.body = [=](int64_t b, int64_t e) {
      for (int64_t u = b; u < e; ++u) {
        const int64_t n = u / Ho, i = u % Ho;
        const T* plane0 = xp + n * C * H * W;
        for (int64_t j = 0; j < Wo; ++j) {
          const T* g = gp + ((n * Ho + i) * Wo + j) * 2;
          float ix = source(to_f32(g[0]), W, padding, align_corners), iy = source(to_f32(g[1]), H, padding, align_corners);
          T* o = op + n * C * Ho * Wo + i * Wo + j;
          if (!(std::fabs(ix) < kFar && std::fabs(iy) < kFar)) {  // NaN (zeros padding), or far outside
            // no tap inside: 0; bilinear's weights of a NaN point are NaN, as torch's
            const bool nan = mode == GridInterp::bilinear && (ix != ix || iy != iy);
            for (int64_t c = 0; c < C; ++c) o[c * Ho * Wo] = from_f32<T>(nan ? NAN : 0.0f);
            continue;
          }
          auto inside = [&](int64_t yy, int64_t xx) { return yy >= 0 && yy < H && xx >= 0 && xx < W; };
          if (mode == GridInterp::nearest) {
            int64_t xx = int64_t(std::nearbyint(ix)), yy = int64_t(std::nearbyint(iy));
            bool in = inside(yy, xx);
            for (int64_t c = 0; c < C; ++c)
              o[c * Ho * Wo] = in ? plane0[c * H * W + yy * W + xx] : from_f32<T>(0.0f);
            continue;
          }
          const float fx = std::floor(ix), fy = std::floor(iy);
          const int64_t x0 = int64_t(fx), y0 = int64_t(fy);
          const float tx = ix - fx, ty = iy - fy;
          const float w00 = (1 - tx) * (1 - ty), w01 = tx * (1 - ty), w10 = (1 - tx) * ty, w11 = tx * ty;
          const bool i00 = inside(y0, x0), i01 = inside(y0, x0 + 1), i10 = inside(y0 + 1, x0), i11 = inside(y0 + 1, x0 + 1);
          for (int64_t c = 0; c < C; ++c) {
            const T* p = plane0 + c * H * W;
            float s = 0;
            if (i00) s += w00 * to_f32(p[y0 * W + x0]);
            if (i01) s += w01 * to_f32(p[y0 * W + x0 + 1]);
            if (i10) s += w10 * to_f32(p[(y0 + 1) * W + x0]);
            if (i11) s += w11 * to_f32(p[(y0 + 1) * W + x0 + 1]);
            o[c * Ho * Wo] = from_f32<T>(s);
          }
        }
      }
    };
  });
  return spec;
}

}  // namespace opscope::cpu_kernels
