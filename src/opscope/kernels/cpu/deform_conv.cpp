#include "opscope/kernels/cpu/deform_conv.h"

#include <cmath>
#include <limits>

namespace opscope::cpu_kernels {

namespace {

// x's plane (H, W) at the fractional point (y, x): the four neighbours weighted by distance,
// a neighbour outside the plane counting 0, and 0 once the point is a pixel or more outside.
float bilinear_or_zero(const float* plane, int64_t H, int64_t W, float y, float x) {
  if (std::isnan(y) || std::isnan(x)) return std::numeric_limits<float>::quiet_NaN();
  if (y <= -1.0f || y >= float(H) || x <= -1.0f || x >= float(W)) return 0.0f;
  const float fy = std::floor(y), fx = std::floor(x);
  const int64_t y0 = int64_t(fy), x0 = int64_t(fx), y1 = y0 + 1, x1 = x0 + 1;
  const float ly = y - fy, lx = x - fx, hy = 1.0f - ly, hx = 1.0f - lx;
  const bool top = y0 >= 0, bottom = y1 < H, left = x0 >= 0, right = x1 < W;
  const float v00 = top && left ? plane[y0 * W + x0] : 0.0f;
  const float v01 = top && right ? plane[y0 * W + x1] : 0.0f;
  const float v10 = bottom && left ? plane[y1 * W + x0] : 0.0f;
  const float v11 = bottom && right ? plane[y1 * W + x1] : 0.0f;
  return hy * hx * v00 + hy * lx * v01 + ly * hx * v10 + ly * lx * v11;
}

}  // namespace

LaunchSpec deform_im2col_spec(const Tensor& cols, const Tensor& x, const Tensor& offset, const Tensor* mask,
                              const DeformParams& p) {
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t OH = offset.shape()[2], OW = offset.shape()[3], L = OH * OW, taps = p.kh * p.kw;
  const int64_t per_group = C / p.offset_groups;
  LaunchSpec spec;
  spec.name = "deform_im2col_f32";
  spec.work = N * C;
  spec.bytes = cols.nbytes() * 5 + offset.nbytes() + (mask ? mask->nbytes() : 0);  // four reads per sample, at least
  spec.flops = cols.numel() * 12;
  const float* xp = x.data<float>();
  const float* offp = offset.data<float>();
  const float* mp = mask ? mask->data<float>() : nullptr;
  float* cp = cols.data<float>();
  spec.body = [=](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u) {
      const int64_t n = u / C, c = u % C, g = c / per_group;
      const float* plane = xp + u * H * W;
      const float* off = offp + (n * p.offset_groups + g) * 2 * taps * L;
      const float* m = mp ? mp + (n * p.offset_groups + g) * taps * L : nullptr;
      float* row = cp + u * taps * L;  // rows (c, i, j) of image n
      for (int64_t i = 0; i < p.kh; ++i)
        for (int64_t j = 0; j < p.kw; ++j, row += L) {
          const int64_t t = i * p.kw + j;
          const float* dy = off + 2 * t * L;
          const float* dx = dy + L;
          for (int64_t oy = 0; oy < OH; ++oy) {
            const float y0 = float(oy * p.stride_h - p.pad_h + i * p.dil_h);
            for (int64_t ox = 0; ox < OW; ++ox) {
              const int64_t at = oy * OW + ox;
              const float xx = float(ox * p.stride_w - p.pad_w + j * p.dil_w) + dx[at];
              float v = bilinear_or_zero(plane, H, W, y0 + dy[at], xx);
              row[at] = m ? m[t * L + at] * v : v;
            }
          }
        }
    }
  };
  return spec;
}

}  // namespace opscope::cpu_kernels
