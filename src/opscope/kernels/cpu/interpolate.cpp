#include "opscope/kernels/cpu/interpolate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

namespace opscope::cpu_kernels {

namespace {

constexpr int64_t kMinElemsPerCore = int64_t(1) << 15;

// Where output coordinate o of an axis reads: K input positions and their weights.
struct AxisTable {
  int taps = 1;
  std::vector<int64_t> idx;  // out * taps
  std::vector<float> w;      // out * taps (unused for nearest)
};

// torch's compute_scales_value / area_pixel_compute_scale (UpSample.h), in f32.
float scale_of(int64_t in, int64_t out, std::optional<double> scale) {
  return scale && *scale > 0 ? float(1.0 / *scale) : float(in) / float(out);
}
float area_scale(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  if (align_corners) return out > 1 ? float(in - 1) / float(out - 1) : 0.0f;
  return scale_of(in, out, scale);
}
// area_pixel_compute_source_index: (o + 0.5) is a double there, so is the product.
float source_index(float scale, int64_t o, bool align_corners, bool cubic) {
  if (align_corners) return scale * float(o);
  float src = float(double(scale) * (double(o) + 0.5) - 0.5);
  return (!cubic && src < 0) ? 0.0f : src;
}

AxisTable nearest_table(int64_t in, int64_t out, std::optional<double> scale, bool exact) {
  AxisTable t;
  t.idx.resize(size_t(out));
  float s = scale_of(in, out, scale);
  for (int64_t o = 0; o < out; ++o) {
    int64_t i;
    if (!exact && out == in) i = o;  // torch's exact special cases
    else if (!exact && out == 2 * in) i = o >> 1;
    else if (!exact) i = std::min(int64_t(std::floor(float(o) * s)), in - 1);
    else i = std::min(int64_t(std::floor(float((double(o) + 0.5) * double(s)))), in - 1);  // as torch's floorf
    t.idx[size_t(o)] = i;
  }
  return t;
}

AxisTable linear_table(int64_t in, int64_t out, std::optional<double> scale, bool align_corners) {
  AxisTable t;
  t.taps = 2;
  t.idx.resize(size_t(2 * out));
  t.w.resize(size_t(2 * out));
  float s = area_scale(in, out, align_corners, scale);
  for (int64_t o = 0; o < out; ++o) {
    int64_t i0 = o, i1 = o;
    float l1 = 0;
    if (in != out) {
      float src = source_index(s, o, align_corners, false);
      i0 = int64_t(src);
      i1 = i0 + (i0 < in - 1 ? 1 : 0);
      l1 = std::min(std::max(src - float(i0), 0.0f), 1.0f);
    }
    t.idx[size_t(2 * o)] = i0, t.idx[size_t(2 * o + 1)] = i1;
    t.w[size_t(2 * o)] = 1.0f - l1, t.w[size_t(2 * o + 1)] = l1;
  }
  return t;
}

// Keys' cubic convolution with A = -0.75 (torch's get_cubic_upsample_coefficients).
void cubic_weights(float t, float* w) {
  constexpr float A = -0.75f;
  auto near = [](float x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };
  auto far = [](float x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };
  w[0] = far(t + 1.0f);
  w[1] = near(t);
  w[2] = near(1.0f - t);
  w[3] = far(2.0f - t);
}

AxisTable cubic_table(int64_t in, int64_t out, std::optional<double> scale, bool align_corners) {
  AxisTable t;
  t.taps = 4;
  t.idx.resize(size_t(4 * out));
  t.w.resize(size_t(4 * out));
  float s = area_scale(in, out, align_corners, scale);
  for (int64_t o = 0; o < out; ++o) {
    int64_t i = o;
    float frac = 0;
    if (in != out) {
      float src = source_index(s, o, align_corners, true);
      i = int64_t(std::floor(src));
      frac = src - float(i);
    }
    cubic_weights(frac, &t.w[size_t(4 * o)]);
    for (int j = 0; j < 4; ++j) t.idx[size_t(4 * o + j)] = std::clamp(i - 1 + j, int64_t(0), in - 1);
  }
  return t;
}

AxisTable identity_table(int64_t n) {
  AxisTable t;
  t.idx.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) t.idx[size_t(i)] = i;
  return t;
}

// One output row: out[ow] = sum_j w[ow, j] * row[idx[ow, j]] (nearest: the element itself).
template <int K, class T>
[[gnu::always_inline]] inline float row_value(const T* row, const int64_t* ix, const float* wx, int64_t ow) {
  if constexpr (K == 1) {
    return to_f32(row[ix[ow]]);
  } else {
    float s = to_f32(row[ix[ow * K]]) * wx[ow * K];
    for (int j = 1; j < K; ++j) s += to_f32(row[ix[ow * K + j]]) * wx[ow * K + j];
    return s;
  }
}

// One output plane. Axes beyond the last `axes` pass through (their table is the identity);
// the interpolated ones nest as torch's do: the first axis outermost.
template <int K, class T>
void interp_plane(const T* x, T* y, const std::array<int64_t, 3>& in, const std::array<int64_t, 3>& out, int axes,
                  const AxisTable* t) {
  const int64_t* id = t[0].idx.data();
  const int64_t* ih = t[1].idx.data();
  const int64_t* iw = t[2].idx.data();
  const float* wd = t[0].w.data();
  const float* wh = t[1].w.data();
  const float* ww = t[2].w.data();
  for (int64_t od = 0; od < out[0]; ++od)
    for (int64_t oh = 0; oh < out[1]; ++oh) {
      T* yr = y + (od * out[1] + oh) * out[2];
      auto row = [&](int64_t d, int64_t h) { return x + (d * in[1] + h) * in[2]; };
      if (axes == 1 || K == 1) {  // one input row per output row
        const T* r = row(id[od * (axes == 3 ? K : 1)], ih[oh * (axes >= 2 ? K : 1)]);
        if constexpr (K == 1) {
          for (int64_t ow = 0; ow < out[2]; ++ow) yr[ow] = r[iw[ow]];  // exact for every dtype
        } else {
          for (int64_t ow = 0; ow < out[2]; ++ow) yr[ow] = from_f32<T>(row_value<K>(r, iw, ww, ow));
        }
      } else if (axes == 2) {
        const int64_t d = id[od];
        for (int64_t ow = 0; ow < out[2]; ++ow) {
          float s = row_value<K>(row(d, ih[oh * K]), iw, ww, ow) * wh[oh * K];
          for (int j = 1; j < K; ++j) s += row_value<K>(row(d, ih[oh * K + j]), iw, ww, ow) * wh[oh * K + j];
          yr[ow] = from_f32<T>(s);
        }
      } else {
        for (int64_t ow = 0; ow < out[2]; ++ow) {
          float s = 0;
          for (int a = 0; a < K; ++a) {
            int64_t d = id[od * K + a];
            float sh = row_value<K>(row(d, ih[oh * K]), iw, ww, ow) * wh[oh * K];
            for (int j = 1; j < K; ++j) sh += row_value<K>(row(d, ih[oh * K + j]), iw, ww, ow) * wh[oh * K + j];
            s = a == 0 ? sh * wd[od * K] : s + sh * wd[od * K + a];
          }
          yr[ow] = from_f32<T>(s);
        }
      }
    }
}

const char* mode_name(InterpMode m) {
  switch (m) {
    case InterpMode::nearest: return "nearest";
    case InterpMode::nearest_exact: return "nearest_exact";
    case InterpMode::linear: return "linear";
    case InterpMode::cubic: return "cubic";
  }
  return "?";
}

}  // namespace

LaunchSpec interpolate_spec(InterpMode mode, const Tensor& out, const Tensor& x, const InterpGeometry& g) {
  auto tables = std::make_shared<std::array<AxisTable, 3>>();
  for (int a = 0; a < 3; ++a) {
    if (a < 3 - g.axes) {
      (*tables)[size_t(a)] = identity_table(g.out[size_t(a)]);
      continue;
    }
    int64_t in = g.in[size_t(a)], o = g.out[size_t(a)];
    const auto& sc = g.scales[size_t(a)];
    switch (mode) {
      case InterpMode::nearest: (*tables)[size_t(a)] = nearest_table(in, o, sc, false); break;
      case InterpMode::nearest_exact: (*tables)[size_t(a)] = nearest_table(in, o, sc, true); break;
      case InterpMode::linear: (*tables)[size_t(a)] = linear_table(in, o, sc, g.align_corners); break;
      case InterpMode::cubic: (*tables)[size_t(a)] = cubic_table(in, o, sc, g.align_corners); break;
    }
  }
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2], out_plane = g.out[0] * g.out[1] * g.out[2];
  const int taps = mode == InterpMode::linear ? 2 : mode == InterpMode::cubic ? 4 : 1;
  int64_t per_output = 1;
  for (int a = 0; a < g.axes; ++a) per_output *= taps;
  LaunchSpec spec;
  spec.name = fmt::format("upsample_{}{}d_{}", mode_name(mode), g.axes, dtype_name(x.dtype()));
  spec.work = g.planes;
  spec.grain = std::max<int64_t>(1, kMinElemsPerCore / std::max<int64_t>(out_plane * per_output, 1));
  spec.bytes = x.nbytes() + out.nbytes();
  spec.flops = out.numel() * per_output * 2;
  OPSCOPE_DISPATCH_FLOAT(x.dtype(), T, [&] {
    const T* xp = x.data<T>();
    T* yp = out.data<T>();
    auto plane = [&]<int K>() {
      spec.body = [=, in = g.in, os = g.out, axes = g.axes](int64_t b, int64_t e) {
        for (int64_t u = b; u < e; ++u) interp_plane<K>(xp + u * in_plane, yp + u * out_plane, in, os, axes, tables->data());
      };
    };
    if (taps == 1) plane.template operator()<1>();
    else if (taps == 2) plane.template operator()<2>();
    else plane.template operator()<4>();
  });
  return spec;
}

}  // namespace opscope::cpu_kernels
