#include "opscope/kernels/cpu/conv_nd.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "opscope/kernels/cpu/sgemm.h"

namespace opscope::cpu_kernels {

namespace {

constexpr int64_t kColsBytes = 512 << 10;               // a core's column buffer: about half of L2
constexpr int64_t kMinPixels = 128;                      // narrower: more sgemm calls
constexpr int64_t kChannelBlock = 64;                    // output channels per work unit
constexpr int64_t kMinFlopsPerCore = int64_t(1) << 21;   // below this a second core costs more than it helps

float* core_buffer(size_t n) {
  thread_local std::vector<float> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// The output columns [lo, hi) whose tap kx reads inside the input along w.
void tap_columns(const ConvGeometry& g, int64_t kx, int64_t& lo, int64_t& hi) {
  int64_t off = kx * g.dilation[2] - g.pad[2], s = g.stride[2];
  int64_t first = off >= 0 ? 0 : (-off + s - 1) / s;
  int64_t end = g.in[2] - 1 - off >= 0 ? (g.in[2] - 1 - off) / s + 1 : 0;
  lo = std::min(first, g.out[2]);
  hi = std::clamp(end, lo, g.out[2]);
}

// The im2col columns of output pixels [p0, p1) of one group: K = cg * taps rows.
void im2col_3d(const float* xg, const ConvGeometry& g, const std::vector<int64_t>& cols_lo,
               const std::vector<int64_t>& cols_hi, int64_t p0, int64_t p1, float* cols) {
  const int64_t OW = g.out[2], OHW = g.out[1] * OW, W = g.in[2], HW = g.in[1] * W, n = p1 - p0;
  float* d = cols;
  for (int64_t ci = 0; ci < g.cg(); ++ci) {
    const float* plane = xg + ci * g.in_pixels();
    for (int64_t kz = 0; kz < g.kernel[0]; ++kz)
      for (int64_t ky = 0; ky < g.kernel[1]; ++ky)
        for (int64_t kx = 0; kx < g.kernel[2]; ++kx) {
          int64_t off = kx * g.dilation[2] - g.pad[2];
          for (int64_t p = p0; p < p1;) {  // runs along output rows
            int64_t oz = p / OHW, oy = (p % OHW) / OW, ox0 = p % OW, ox1 = std::min(OW, ox0 + (p1 - p));
            int64_t iz = oz * g.stride[0] - g.pad[0] + kz * g.dilation[0];
            int64_t iy = oy * g.stride[1] - g.pad[1] + ky * g.dilation[1];
            int64_t lo = std::clamp(cols_lo[size_t(kx)], ox0, ox1), hi = std::clamp(cols_hi[size_t(kx)], lo, ox1);
            if (iz < 0 || iz >= g.in[0] || iy < 0 || iy >= g.in[1]) hi = lo;
            float* dr = d + (p - p0);
            std::fill(dr, dr + (lo - ox0), 0.0f);
            const float* src = plane + iz * HW + iy * W + off;
            for (int64_t ox = lo; ox < hi; ++ox) dr[ox - ox0] = src[ox * g.stride[2]];
            std::fill(dr + (hi - ox0), dr + (ox1 - ox0), 0.0f);
            p += ox1 - ox0;
          }
          d += n;
        }
  }
}

}  // namespace

LaunchSpec conv3d_spec(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor* bias,
                       const ConvGeometry& g) {
  const int64_t K = g.cg() * g.taps(), P = g.out_pixels(), OCg = g.ocg();
  int64_t target = std::max(kMinPixels, kColsBytes / int64_t(sizeof(float)) / std::max<int64_t>(K, 1));
  int64_t nblocks = (P + target - 1) / target;
  const int64_t PB = std::min(P, ((P + nblocks - 1) / nblocks + 15) / 16 * 16);
  const int64_t pblocks = (P + PB - 1) / PB, oblocks = (OCg + kChannelBlock - 1) / kChannelBlock;
  LaunchSpec spec;
  spec.name = fmt::format("conv{}d_f32", g.spatial);
  spec.work = g.n * g.groups * pblocks * oblocks;
  spec.grain = std::max<int64_t>(1, kMinFlopsPerCore / std::max<int64_t>(2 * std::min(OCg, kChannelBlock) * K * PB, 1));
  spec.flops = 2 * g.n * g.oc * P * K + (bias ? out.numel() : 0);
  spec.bytes = x.nbytes() + weight.nbytes() + out.nbytes() + (bias ? bias->nbytes() : 0);
  std::vector<int64_t> lo(size_t(g.kernel[2])), hi(size_t(g.kernel[2]));
  for (int64_t kx = 0; kx < g.kernel[2]; ++kx) tap_columns(g, kx, lo[size_t(kx)], hi[size_t(kx)]);
  const float* xp = x.data<float>();
  const float* wp = weight.data<float>();
  const float* bp = bias ? bias->data<float>() : nullptr;
  float* op = out.data<float>();
  static std::atomic<uint64_t> tokens{0};
  const uint64_t token = ++tokens;  // this launch, to the cores' column buffers
  spec.body = [=](int64_t begin, int64_t end) {
    float* cols = core_buffer(size_t(K * PB));
    // The (n, group, pixel block) whose columns are in `cols`, kept across this core's
    // chunks of the launch.
    thread_local std::pair<uint64_t, int64_t> held{0, -1};
    if (held.first != token) held = {token, -1};
    for (int64_t u = begin; u < end; ++u) {
      int64_t ob = u % oblocks, key = u / oblocks, pb = key % pblocks, ng = key / pblocks;
      int64_t n = ng / g.groups, grp = ng % g.groups;
      int64_t p0 = pb * PB, p1 = std::min(P, p0 + PB), o0 = ob * kChannelBlock, o1 = std::min(OCg, o0 + kChannelBlock);
      const float* xg = xp + (n * g.c + grp * g.cg()) * g.in_pixels();
      if (key != held.second) im2col_3d(xg, g, lo, hi, p0, p1, cols), held.second = key;
      int64_t oc0 = grp * OCg + o0;
      float* c = op + (n * g.oc + oc0) * P + p0;
      sgemm("convolution", false, false, o1 - o0, p1 - p0, K, wp + oc0 * K, K, cols, p1 - p0, 0.0f, c, P);
      if (bp)
        for (int64_t o = 0; o < o1 - o0; ++o)
          for (int64_t j = 0; j < p1 - p0; ++j) c[o * P + j] += bp[oc0 + o];
    }
  };
  return spec;
}

LaunchSpec conv_transpose_spec(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor* bias,
                               const ConvGeometry& g) {
  const int64_t taps = g.taps(), IP = g.in_pixels(), OP = g.out_pixels(), Cg = g.cg(), OCg = g.ocg();
  // Output channels per unit: their columns (ocb * taps rows of IP) fill about the buffer.
  const int64_t ocb = std::clamp<int64_t>(kColsBytes / int64_t(sizeof(float)) / std::max<int64_t>(taps * IP, 1), 1, OCg);
  const int64_t oblocks = (OCg + ocb - 1) / ocb;
  LaunchSpec spec;
  spec.name = fmt::format("conv_transpose{}d_f32", g.spatial);
  spec.work = g.n * g.groups * oblocks;
  spec.grain = std::max<int64_t>(1, kMinFlopsPerCore / std::max<int64_t>(2 * ocb * taps * IP * Cg, 1));
  spec.flops = 2 * g.n * g.oc * taps * IP * Cg + (bias ? out.numel() : 0);
  spec.bytes = x.nbytes() + weight.nbytes() + out.nbytes() + (bias ? bias->nbytes() : 0);
  const float* xp = x.data<float>();
  const float* wp = weight.data<float>();
  const float* bp = bias ? bias->data<float>() : nullptr;
  float* op = out.data<float>();
  spec.body = [=](int64_t begin, int64_t end) {
    float* cols = core_buffer(size_t(ocb * taps * IP));
    for (int64_t u = begin; u < end; ++u) {
      int64_t ob = u % oblocks, ng = u / oblocks, n = ng / g.groups, grp = ng % g.groups;
      int64_t o0 = ob * ocb, o1 = std::min(OCg, o0 + ocb), rows = (o1 - o0) * taps;
      // cols (rows x IP) = W_g[:, o0:o1]^T (rows x Cg) @ x_g (Cg x IP); W_g is (Cg, OCg * taps).
      const float* wg = wp + grp * Cg * OCg * taps + o0 * taps;
      const float* xg = xp + (n * g.c + grp * Cg) * IP;
      sgemm("conv_transpose", true, false, rows, IP, Cg, wg, OCg * taps, xg, IP, 0.0f, cols, IP);
      for (int64_t o = o0; o < o1; ++o) {
        int64_t oc = grp * OCg + o;
        float* y = op + (n * g.oc + oc) * OP;
        std::fill(y, y + OP, bp ? bp[oc] : 0.0f);
        const float* cr = cols + (o - o0) * taps * IP;
        for (int64_t kz = 0; kz < g.kernel[0]; ++kz)
          for (int64_t ky = 0; ky < g.kernel[1]; ++ky)
            for (int64_t kx = 0; kx < g.kernel[2]; ++kx, cr += IP)
              for (int64_t iz = 0; iz < g.in[0]; ++iz) {
                int64_t oz = iz * g.stride[0] - g.pad[0] + kz * g.dilation[0];
                if (oz < 0 || oz >= g.out[0]) continue;
                for (int64_t iy = 0; iy < g.in[1]; ++iy) {
                  int64_t oy = iy * g.stride[1] - g.pad[1] + ky * g.dilation[1];
                  if (oy < 0 || oy >= g.out[1]) continue;
                  const float* src = cr + (iz * g.in[1] + iy) * g.in[2];
                  float* dst = y + (oz * g.out[1] + oy) * g.out[2];
                  int64_t off = kx * g.dilation[2] - g.pad[2];
                  // ix with 0 <= ix * s + off < OW
                  int64_t s = g.stride[2];
                  int64_t ix0 = off >= 0 ? 0 : (-off + s - 1) / s;
                  int64_t ix1 = std::min(g.in[2], g.out[2] - 1 - off >= 0 ? (g.out[2] - 1 - off) / s + 1 : 0);
                  for (int64_t ix = ix0; ix < ix1; ++ix) dst[ix * s + off] += src[ix];
                }
              }
      }
    }
  };
  return spec;
}

}  // namespace opscope::cpu_kernels
