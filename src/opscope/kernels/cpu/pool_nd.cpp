#include "opscope/kernels/cpu/pool_nd.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <vector>

namespace opscope::cpu_kernels {

namespace {

constexpr int64_t kMinElemsPerCore = int64_t(1) << 15;

// The valid input range [lo, hi) of window `o` along one axis, and its extent inside
// the padded input [start, padded_end) (count_include_pad's divisor).
struct Range {
  int64_t lo, hi, start, padded_end;
};
Range window(int64_t o, int64_t n, int64_t k, int64_t s, int64_t p) {
  int64_t start = o * s - p, end = std::min(start + k, n + p);
  return {std::max<int64_t>(start, 0), std::min(end, n), start, end};
}

// [floor(i n / m), ceil((i + 1) n / m))
Range adaptive(int64_t i, int64_t n, int64_t m) {
  int64_t lo = i * n / m, hi = ((i + 1) * n + m - 1) / m;
  return {lo, hi, lo, hi};
}

LaunchSpec plane_spec(const char* kind, const Tensor& out, const Tensor& x, int64_t planes, int64_t work_per_plane) {
  LaunchSpec spec;
  spec.name = fmt::format("{}_{}", kind, dtype_name(x.dtype()));
  spec.work = planes;
  spec.grain = std::max<int64_t>(1, kMinElemsPerCore / std::max<int64_t>(work_per_plane, 1));
  spec.bytes = x.nbytes() + out.nbytes();
  return spec;
}

// One plane of avg_pool: for each output row, the valid (d, h) input rows of its window
// are summed into one row (a vector loop over the input width), then each output sums
// its columns of that row.
template <class T>
void avg_plane(const T* x, T* y, const PoolGeometry& g, float* row) {
  const int64_t W = g.in[2], HW = g.in[1] * W;
  for (int64_t od = 0; od < g.out[0]; ++od) {
    Range rd = window(od, g.in[0], g.kernel[0], g.stride[0], g.pad[0]);
    for (int64_t oh = 0; oh < g.out[1]; ++oh) {
      Range rh = window(oh, g.in[1], g.kernel[1], g.stride[1], g.pad[1]);
      std::fill(row, row + W, 0.0f);
      for (int64_t z = rd.lo; z < rd.hi; ++z)
        for (int64_t h = rh.lo; h < rh.hi; ++h) {
          const T* __restrict src = x + z * HW + h * W;
          float* __restrict acc = row;
          for (int64_t i = 0; i < W; ++i) acc[i] += to_f32(src[i]);
        }
      T* yr = y + (od * g.out[1] + oh) * g.out[2];
      for (int64_t ow = 0; ow < g.out[2]; ++ow) {
        Range rw = window(ow, W, g.kernel[2], g.stride[2], g.pad[2]);
        float s = 0;
        for (int64_t i = rw.lo; i < rw.hi; ++i) s += row[i];
        int64_t div = g.divisor ? g.divisor
                      : g.count_include_pad
                          ? (rd.padded_end - rd.start) * (rh.padded_end - rh.start) * (rw.padded_end - rw.start)
                          : (rd.hi - rd.lo) * (rh.hi - rh.lo) * (rw.hi - rw.lo);
        yr[ow] = from_f32<T>(s / float(div));
      }
    }
  }
}

// The maximum of the input box [lo, hi) per axis (dilated by dil), torch's way: ties keep
// the first position, NaN beats everything (the last NaN wins); an empty box gives -inf
// at index -1.
template <class T>
void box_max(const T* x, const Axes3& in, const Range (&r)[3], const Axes3& dil, T* y, int64_t* idx) {
  float best = -std::numeric_limits<float>::infinity();
  int64_t at = -1;
  for (int64_t z = r[0].lo; z < r[0].hi; z += dil[0])
    for (int64_t h = r[1].lo; h < r[1].hi; h += dil[1])
      for (int64_t w = r[2].lo; w < r[2].hi; w += dil[2]) {
        int64_t i = (z * in[1] + h) * in[2] + w;
        float v = to_f32(x[i]);
        if (at < 0) at = i;
        if (v > best || v != v) best = v, at = i;
      }
  *y = at >= 0 ? x[at] : from_f32<T>(best);
  if (idx) *idx = at;
}

// A dilated window's valid inputs: the first tap inside the input, stepping by dilation.
Range dilated(int64_t o, int64_t n, int64_t k, int64_t s, int64_t p, int64_t d) {
  int64_t start = o * s - p, end = std::min(start + (k - 1) * d + 1, n);
  while (start < 0) start += d;
  return {start, std::max(start, end), start, end};
}

}  // namespace

LaunchSpec avg_pool_spec(const Tensor& out, const Tensor& x, const PoolGeometry& g) {
  int64_t in_plane = g.in[0] * g.in[1] * g.in[2], out_plane = g.out[0] * g.out[1] * g.out[2];
  LaunchSpec spec = plane_spec("avg_pool", out, x, g.planes, in_plane + out_plane * g.kernel[2]);
  spec.flops = g.planes * (in_plane * g.kernel[0] * g.kernel[1] + out_plane * g.kernel[2]);
  OPSCOPE_DISPATCH_FLOAT(x.dtype(), T, [&] {
    const T* xp = x.data<T>();
    T* yp = out.data<T>();
    spec.body = [=](int64_t b, int64_t e) {
      std::vector<float> row(size_t(g.in[2]));
      for (int64_t u = b; u < e; ++u) avg_plane(xp + u * in_plane, yp + u * out_plane, g, row.data());
    };
  });
  return spec;
}

LaunchSpec max_pool_nd_spec(const Tensor& out, const Tensor* indices, const Tensor& x, const PoolGeometry& g) {
  int64_t in_plane = g.in[0] * g.in[1] * g.in[2], out_plane = g.out[0] * g.out[1] * g.out[2];
  int64_t taps = g.kernel[0] * g.kernel[1] * g.kernel[2];
  LaunchSpec spec = plane_spec("max_pool3d", out, x, g.planes, out_plane * taps);
  spec.flops = g.planes * out_plane * taps;
  if (indices) spec.bytes += indices->nbytes();
  int64_t* ip = indices ? indices->data<int64_t>() : nullptr;
  OPSCOPE_DISPATCH_FLOAT(x.dtype(), T, [&] {
    const T* xp = x.data<T>();
    T* yp = out.data<T>();
    spec.body = [=](int64_t b, int64_t e) {
      for (int64_t u = b; u < e; ++u)
        for (int64_t od = 0; od < g.out[0]; ++od)
          for (int64_t oh = 0; oh < g.out[1]; ++oh)
            for (int64_t ow = 0; ow < g.out[2]; ++ow) {
              Range r[3] = {dilated(od, g.in[0], g.kernel[0], g.stride[0], g.pad[0], g.dilation[0]),
                            dilated(oh, g.in[1], g.kernel[1], g.stride[1], g.pad[1], g.dilation[1]),
                            dilated(ow, g.in[2], g.kernel[2], g.stride[2], g.pad[2], g.dilation[2])};
              int64_t o = u * out_plane + (od * g.out[1] + oh) * g.out[2] + ow;
              box_max(xp + u * in_plane, g.in, r, g.dilation, yp + o, ip ? ip + o : nullptr);
            }
    };
  });
  return spec;
}

LaunchSpec adaptive_avg_pool_spec(const Tensor& out, const Tensor& x, int64_t planes, Axes3 in, Axes3 os) {
  int64_t in_plane = in[0] * in[1] * in[2], out_plane = os[0] * os[1] * os[2];
  LaunchSpec spec = plane_spec("adaptive_avg_pool", out, x, planes, in_plane + out_plane);
  spec.flops = planes * (in_plane + out_plane);
  OPSCOPE_DISPATCH_FLOAT(x.dtype(), T, [&] {
    const T* xp = x.data<T>();
    T* yp = out.data<T>();
    spec.body = [=](int64_t b, int64_t e) {
      for (int64_t u = b; u < e; ++u) {
        const T* xu = xp + u * in_plane;
        T* yu = yp + u * out_plane;
        for (int64_t od = 0; od < os[0]; ++od) {
          Range rd = adaptive(od, in[0], os[0]);
          for (int64_t oh = 0; oh < os[1]; ++oh) {
            Range rh = adaptive(oh, in[1], os[1]);
            for (int64_t ow = 0; ow < os[2]; ++ow) {
              Range rw = adaptive(ow, in[2], os[2]);
              float s = 0;
              for (int64_t z = rd.lo; z < rd.hi; ++z)
                for (int64_t h = rh.lo; h < rh.hi; ++h)
                  for (int64_t w = rw.lo; w < rw.hi; ++w) s += to_f32(xu[(z * in[1] + h) * in[2] + w]);
              // As torch: divided by each extent in turn.
              yu[(od * os[1] + oh) * os[2] + ow] =
                  from_f32<T>(s / float(rd.hi - rd.lo) / float(rh.hi - rh.lo) / float(rw.hi - rw.lo));
            }
          }
        }
      }
    };
  });
  return spec;
}

LaunchSpec adaptive_max_pool_spec(const Tensor& out, const Tensor& indices, const Tensor& x, int64_t planes, Axes3 in,
                                  Axes3 os) {
  int64_t in_plane = in[0] * in[1] * in[2], out_plane = os[0] * os[1] * os[2];
  LaunchSpec spec = plane_spec("adaptive_max_pool", out, x, planes, in_plane + out_plane);
  spec.flops = planes * in_plane;
  spec.bytes += indices.nbytes();
  int64_t* ip = indices.data<int64_t>();
  OPSCOPE_DISPATCH_FLOAT(x.dtype(), T, [&] {
    const T* xp = x.data<T>();
    T* yp = out.data<T>();
    const Axes3 unit{1, 1, 1};
    spec.body = [=](int64_t b, int64_t e) {
      for (int64_t u = b; u < e; ++u)
        for (int64_t od = 0; od < os[0]; ++od)
          for (int64_t oh = 0; oh < os[1]; ++oh)
            for (int64_t ow = 0; ow < os[2]; ++ow) {
              Range r[3] = {adaptive(od, in[0], os[0]), adaptive(oh, in[1], os[1]), adaptive(ow, in[2], os[2])};
              int64_t o = u * out_plane + (od * os[1] + oh) * os[2] + ow;
              box_max(xp + u * in_plane, in, r, unit, yp + o, ip + o);
            }
    };
  });
  return spec;
}

}  // namespace opscope::cpu_kernels
