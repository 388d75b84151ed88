#include "opscope/kernels/cpu/conv.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "opscope/kernels/cpu/conv_common.h"
#include "opscope/kernels/cpu/conv_direct.h"
#include "opscope/kernels/cpu/sgemm.h"

namespace opscope::cpu_kernels {

namespace {

using kernels::Window2d;

constexpr int64_t kColsBytes = 512 << 10;           // a core's column buffer: about half of L2
constexpr int64_t kMinPixels = 128;                  // narrower: more sgemm calls, each packing its weights again
constexpr int64_t kChannelBlock = 64;               // output channels per work unit (matmul's row block)

using namespace conv_detail;

// Output pixels per work unit: columns of K rows filling the buffer, but at least
// kMinPixels wide; the plane split into equal blocks (a multiple of 16, sgemm's panel).
int64_t pixel_block(int64_t k, int64_t pixels) {
  int64_t target = std::max(kMinPixels, kColsBytes / int64_t(sizeof(float)) / std::max<int64_t>(k, 1));
  int64_t blocks = (pixels + target - 1) / target;
  int64_t pb = ((pixels + blocks - 1) / blocks + 15) / 16 * 16;
  return std::min(pb, pixels);
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

// conv2d_f32 and conv2d_1x1_f32: units (n, group, pixel block, channel block), channel
// block fastest, so that a core's consecutive units share the columns.
LaunchSpec gemm_conv_spec(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor* bias,
                          const Window2d& g, Activation act, const Tensor* residual) {
  const int64_t K = g.k(), P = g.pixels(), OCg = g.ocg();
  const bool direct = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0;
  const int64_t PB = pixel_block(K, P);
  const int64_t pblocks = (P + PB - 1) / PB, oblocks = (OCg + kChannelBlock - 1) / kChannelBlock;
  LaunchSpec spec;
  spec.name = kernel_name(direct ? ConvKernel::one_by_one : ConvKernel::gemm, residual != nullptr, act);
  spec.work = g.n * g.groups * pblocks * oblocks;
  int64_t unit_flops = 2 * std::min(OCg, kChannelBlock) * K * PB;
  spec.grain = std::max<int64_t>(1, kMinFlopsPerCore / std::max<int64_t>(unit_flops, 1));
  spec.flops = 2 * g.n * g.oc * P * K + (bias ? out.numel() : 0);
  const ConvData d = conv_data(out, x, weight, bias, residual);
  spec.bytes = d.bytes;
  const float *xp = d.x, *wp = d.w, *bp = d.bias, *rp = d.residual;
  float* op = d.out;
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

}  // namespace

LaunchSpec conv2d_spec(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor* bias,
                       const Window2d& g, Activation act, const Tensor* residual) {
  LaunchSpec spec = g.cg() == 1 && g.groups > 1 ? depthwise_spec(out, x, weight, bias, g, act, residual)
                    : grouped_direct_fits(g)      ? grouped_direct_spec(out, x, weight, bias, g, act, residual)
                                                  : gemm_conv_spec(out, x, weight, bias, g, act, residual);
  if (residual) spec.bytes += residual->nbytes(), spec.flops += out.numel();
  return spec;
}

}  // namespace opscope::cpu_kernels
