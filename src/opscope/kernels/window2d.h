// The geometry of a 2-d window op over NCHW (convolution, pooling): input (n, c, h, w),
// output (n, oc, oh, ow), a kh x kw window with stride, padding and dilation per axis.
// Plain C++ with no opscope header: the CUDA kernels (nvcc) and their host emulation
// in the tests include it too.
#pragma once
#include <stdint.h>

namespace opscope::kernels {

struct Window2d {
  int64_t n = 0, c = 0, h = 0, w = 0;  // input
  int64_t oc = 0, oh = 0, ow = 0;      // output channels (pooling: c) and size
  int64_t kh = 1, kw = 1;              // window
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  int64_t groups = 1;                  // conv: channels split in groups (pooling: 1)

  int64_t cg() const { return c / groups; }    // input channels per group
  int64_t ocg() const { return oc / groups; }  // output channels per group
  int64_t k() const { return cg() * kh * kw; } // a group's im2col rows (the gemm's K)
  int64_t pixels() const { return oh * ow; }   // outputs per plane (the gemm's N)
};

// Outputs along one axis: (in + 2p - d(k - 1) - 1) / s + 1, rounded down, or up with
// ceil_mode, where the last window must still start inside the input or the left
// padding (torch's rule). Rounds towards -inf as torch does, so a window larger than the
// padded input gives 0 outputs (or 1 with ceil_mode when it starts inside the input).
inline int64_t window_out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

// The output columns [lo, hi) for which window column kj reads inside the input:
// 0 <= ox * sw - pw + kj * dw < w (lo == hi when none does).
inline void window_columns(const Window2d& g, int64_t kj, int64_t& lo, int64_t& hi) {
  int64_t off = kj * g.dw - g.pw;
  int64_t first = off >= 0 ? 0 : (-off + g.sw - 1) / g.sw;
  int64_t end = g.w - 1 - off >= 0 ? (g.w - 1 - off) / g.sw + 1 : 0;
  lo = first < g.ow ? first : g.ow;
  hi = end < lo ? lo : end > g.ow ? g.ow : end;
}

}  // namespace opscope::kernels
