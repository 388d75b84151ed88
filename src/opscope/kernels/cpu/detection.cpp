#include "opscope/kernels/cpu/detection.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "opscope/core/error.h"

namespace opscope::cpu_kernels {

namespace {

// One bilinear sample of roi_align: four input positions and their weights.
struct Sample {
  int64_t pos[4];
  float w[4];
};

// torchvision's bilinear_interpolate setup (roi_align_kernel.cpp), in f32. An image with no
// rows or columns has no pixel to read: every sample contributes 0 (torchvision's CPU kernel
// reads before the plane there).
Sample sample_at(float y, float x, int64_t h, int64_t w) {
  Sample s{};
  if (h <= 0 || w <= 0) return s;
  if (y < -1.0f || y > float(h) || x < -1.0f || x > float(w)) return s;  // outside: contributes 0
  y = std::max(y, 0.0f);
  x = std::max(x, 0.0f);
  int64_t y0 = int64_t(y), x0 = int64_t(x), y1, x1;
  if (y0 >= h - 1) y1 = y0 = h - 1, y = float(y0);
  else y1 = y0 + 1;
  if (x0 >= w - 1) x1 = x0 = w - 1, x = float(x0);
  else x1 = x0 + 1;
  float ly = y - float(y0), lx = x - float(x0), hy = 1.0f - ly, hx = 1.0f - lx;
  s.pos[0] = y0 * w + x0, s.pos[1] = y0 * w + x1, s.pos[2] = y1 * w + x0, s.pos[3] = y1 * w + x1;
  s.w[0] = hy * hx, s.w[1] = hy * lx, s.w[2] = ly * hx, s.w[3] = ly * lx;
  return s;
}

// The samples of a region's bins, bin after bin (row-major), gh x gw in each: torchvision's
// grid, each sample at the middle of its cell. (y1, x1): the region's corner; bh x bw: a bin.
void bin_samples(std::vector<Sample>& samples, float y1, float x1, float bh, float bw, int64_t ph, int64_t pw,
                 int64_t gh, int64_t gw, int64_t h, int64_t w) {
  samples.clear();
  for (int64_t oy = 0; oy < ph; ++oy)
    for (int64_t ox = 0; ox < pw; ++ox)
      for (int64_t iy = 0; iy < gh; ++iy) {
        float y = y1 + float(oy) * bh + (float(iy) + 0.5f) * bh / float(gh);
        for (int64_t ix = 0; ix < gw; ++ix) {
          float xx = x1 + float(ox) * bw + (float(ix) + 0.5f) * bw / float(gw);
          samples.push_back(sample_at(y, xx, h, w));
        }
      }
}

// The sum of n samples' bilinear values over one plane.
float sample_sum(const Sample* s, int64_t n, const float* plane) {
  float v = 0;
  for (int64_t t = 0; t < n; ++t)
    v += s[t].w[0] * plane[s[t].pos[0]] + s[t].w[1] * plane[s[t].pos[1]] + s[t].w[2] * plane[s[t].pos[2]] +
         s[t].w[3] * plane[s[t].pos[3]];
  return v;
}

}  // namespace

LaunchSpec nms_spec(const Tensor& keep, const Tensor& kept, const Tensor& boxes, const Tensor& scores,
                    double iou_threshold) {
  int64_t n = boxes.shape()[0];
  LaunchSpec spec;
  spec.name = "nms_f32";
  spec.bytes = boxes.nbytes() + scores.nbytes() + keep.nbytes();
  spec.flops = n * n * 10;  // the worst case: every pair's IoU
  const float* bp = boxes.data<float>();
  const float* sp = scores.data<float>();
  int64_t* kp = keep.data<int64_t>();
  int64_t* cp = kept.data<int64_t>();
  spec.body = [=](int64_t, int64_t) {
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {  // descending, NaN first (torch's sort)
      float x = sp[a], y = sp[b];
      bool xn = x != x, yn = y != y;
      return (xn && !yn) || (!xn && !yn && x > y);
    });
    std::vector<float> area(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) area[size_t(i)] = (bp[4 * i + 2] - bp[4 * i]) * (bp[4 * i + 3] - bp[4 * i + 1]);
    std::vector<char> suppressed(static_cast<size_t>(n));
    int64_t count = 0;
    for (int64_t a = 0; a < n; ++a) {
      int64_t i = order[size_t(a)];
      if (suppressed[size_t(i)]) continue;
      kp[count++] = i;
      const float* bi = bp + 4 * i;
      for (int64_t b = a + 1; b < n; ++b) {
        int64_t j = order[size_t(b)];
        if (suppressed[size_t(j)]) continue;
        const float* bj = bp + 4 * j;
        float w = std::max(0.0f, std::min(bi[2], bj[2]) - std::max(bi[0], bj[0]));
        float h = std::max(0.0f, std::min(bi[3], bj[3]) - std::max(bi[1], bj[1]));
        float inter = w * h;
        if (double(inter / (area[size_t(i)] + area[size_t(j)] - inter)) > iou_threshold) suppressed[size_t(j)] = 1;
      }
    }
    *cp = count;
  };
  return spec;
}

LaunchSpec roi_align_spec(const Tensor& out, const Tensor& x, const Tensor& rois, const RoiAlignParams& p) {
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3], K = rois.shape()[0];
  const int64_t ph = p.pooled_h, pw = p.pooled_w;
  LaunchSpec spec;
  spec.name = "roi_align_f32";
  spec.work = K;
  spec.bytes = out.nbytes() * 5 + rois.nbytes();  // four samples per output, at least
  spec.flops = out.numel() * 8;
  const float* xp = x.data<float>();
  const float* rp = rois.data<float>();
  float* op = out.data<float>();
  spec.body = [=](int64_t b, int64_t e) {
    std::vector<Sample> samples;
    for (int64_t k = b; k < e; ++k) {
      const float* r = rp + 5 * k;
      int64_t batch = int64_t(r[0]);
      if (batch < 0 || batch >= N) fail("roi_align", "roi {} names batch index {} of an input with {} images", k, batch, N);
      float ss = float(p.spatial_scale), offset = p.aligned ? 0.5f : 0.0f;
      float x1 = r[1] * ss - offset, y1 = r[2] * ss - offset, x2 = r[3] * ss - offset, y2 = r[4] * ss - offset;
      float rw = x2 - x1, rh = y2 - y1;
      if (!p.aligned) rw = std::max(rw, 1.0f), rh = std::max(rh, 1.0f);  // malformed rois count as 1x1
      float bh = rh / float(ph), bw = rw / float(pw);
      int64_t gh = p.sampling_ratio > 0 ? p.sampling_ratio : int64_t(std::ceil(rh / float(ph)));
      int64_t gw = p.sampling_ratio > 0 ? p.sampling_ratio : int64_t(std::ceil(rw / float(pw)));
      float count = float(std::max<int64_t>(gh * gw, 1));
      bin_samples(samples, y1, x1, bh, bw, ph, pw, gh, gw, H, W);
      const int64_t per_bin = gh * gw;
      for (int64_t c = 0; c < C; ++c) {
        const float* plane = xp + (batch * C + c) * H * W;
        float* o = op + (k * C + c) * ph * pw;
        for (int64_t bin = 0; bin < ph * pw; ++bin)
          o[bin] = sample_sum(samples.data() + bin * per_bin, per_bin, plane) / count;
      }
    }
  };
  return spec;
}

LaunchSpec roi_pool_spec(const Tensor& out, const Tensor& argmax, const Tensor& x, const Tensor& rois,
                         double spatial_scale) {
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3], K = rois.shape()[0];
  const int64_t ph = out.shape()[2], pw = out.shape()[3];
  LaunchSpec spec;
  spec.name = "roi_pool_f32";
  spec.work = K;
  spec.bytes = out.nbytes() * 2 + argmax.nbytes() + rois.nbytes();
  const float* xp = x.data<float>();
  const float* rp = rois.data<float>();
  float* op = out.data<float>();
  int32_t* ap = argmax.data<int32_t>();
  const float ss = float(spatial_scale);
  spec.body = [=](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      const float* r = rp + 5 * k;
      int64_t batch = int64_t(r[0]);
      if (batch < 0 || batch >= N) fail("roi_pool", "roi {} names batch index {} of an input with {} images", k, batch, N);
      // torchvision's arithmetic: the box rounded to pixels (half away from zero), at least one
      const int64_t x1 = int64_t(std::round(r[1] * ss)), y1 = int64_t(std::round(r[2] * ss));
      const int64_t x2 = int64_t(std::round(r[3] * ss)), y2 = int64_t(std::round(r[4] * ss));
      const float bh = float(std::max<int64_t>(y2 - y1 + 1, 1)) / float(ph);
      const float bw = float(std::max<int64_t>(x2 - x1 + 1, 1)) / float(pw);
      for (int64_t oy = 0; oy < ph; ++oy)
        for (int64_t ox = 0; ox < pw; ++ox) {
          const int64_t h0 = std::clamp<int64_t>(int64_t(std::floor(float(oy) * bh)) + y1, 0, H);
          const int64_t h1 = std::clamp<int64_t>(int64_t(std::ceil(float(oy + 1) * bh)) + y1, 0, H);
          const int64_t w0 = std::clamp<int64_t>(int64_t(std::floor(float(ox) * bw)) + x1, 0, W);
          const int64_t w1 = std::clamp<int64_t>(int64_t(std::ceil(float(ox + 1) * bw)) + x1, 0, W);
          const bool empty = h1 <= h0 || w1 <= w0;
          for (int64_t c = 0; c < C; ++c) {
            const float* plane = xp + (batch * C + c) * H * W;
            float best = empty ? 0.0f : -std::numeric_limits<float>::max();
            int32_t at = -1;
            for (int64_t h = h0; h < h1; ++h)
              for (int64_t w = w0; w < w1; ++w)
                if (plane[h * W + w] > best) best = plane[h * W + w], at = int32_t(h * W + w);  // NaN never wins
            const int64_t o = ((k * C + c) * ph + oy) * pw + ox;
            op[o] = best;
            ap[o] = at;
          }
        }
    }
  };
  return spec;
}

LaunchSpec ps_roi_align_spec(const Tensor& out, const Tensor& channels, const Tensor& x, const Tensor& rois,
                             const RoiAlignParams& p) {
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3], K = rois.shape()[0];
  const int64_t ph = p.pooled_h, pw = p.pooled_w, C_out = out.shape()[1];
  LaunchSpec spec;
  spec.name = "ps_roi_align_f32";
  spec.work = K;
  spec.bytes = out.nbytes() * 5 + channels.nbytes() + rois.nbytes();
  spec.flops = out.numel() * 8;
  const float* xp = x.data<float>();
  const float* rp = rois.data<float>();
  float* op = out.data<float>();
  int32_t* cp = channels.data<int32_t>();
  const float ss = float(p.spatial_scale);
  spec.body = [=](int64_t b, int64_t e) {
    std::vector<Sample> samples;
    for (int64_t k = b; k < e; ++k) {
      const float* r = rp + 5 * k;
      int64_t batch = int64_t(r[0]);
      if (batch < 0 || batch >= N)
        fail("ps_roi_align", "roi {} names batch index {} of an input with {} images", k, batch, N);
      // torchvision's arithmetic: shifted by half a pixel, no rounding, no minimum size
      const float x1 = r[1] * ss - 0.5f, y1 = r[2] * ss - 0.5f;
      const float rw = r[3] * ss - 0.5f - x1, rh = r[4] * ss - 0.5f - y1;
      const float bh = rh / float(ph), bw = rw / float(pw);
      const int64_t gh = p.sampling_ratio > 0 ? p.sampling_ratio : int64_t(std::ceil(rh / float(ph)));
      const int64_t gw = p.sampling_ratio > 0 ? p.sampling_ratio : int64_t(std::ceil(rw / float(pw)));
      const float count = float(gh * gw);
      // The same grid in every output channel: bin (oy, ox) of channel c reads input
      // channel (c * ph + oy) * pw + ox.
      bin_samples(samples, y1, x1, bh, bw, ph, pw, gh, gw, H, W);
      for (int64_t c = 0; c < C_out; ++c)
        for (int64_t bin = 0; bin < ph * pw; ++bin) {
          const int64_t c_in = c * ph * pw + bin, o = (k * C_out + c) * ph * pw + bin;
          op[o] = sample_sum(samples.data() + bin * gh * gw, gh * gw, xp + (batch * C + c_in) * H * W) / count;
          cp[o] = int32_t(c_in);
        }
    }
  };
  return spec;
}

}  // namespace opscope::cpu_kernels
