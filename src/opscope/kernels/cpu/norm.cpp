#include "opscope/kernels/cpu/norm.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "opscope/kernels/cpu/half_rows.h"
#include "opscope/kernels/cpu/reduce.h"
#include "opscope/kernels/cpu/stream_store.h"

namespace opscope::cpu_kernels {

namespace {

constexpr int64_t kMinElemsPerCore = int64_t(1) << 14;
constexpr int64_t kColBlock = 128;  // columns per unit of a softmax over an outer axis

// e^x for x <= 88, written without calls or branches so that loops over it vectorize
// (std::exp does not without -ffast-math). Cephes' expf: 2^n * e^r with |r| <= ln2/2,
// about 1 ulp; below -87.3 it returns 0 (softmax's x - max: -inf and tiny terms vanish).
inline float exp_f32(float x) {
  constexpr float kShift = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  float xc = std::min(std::max(x, -87.3f), 88.0f);  // NaN passes through both
  float t = xc * 1.44269504088896341f + kShift;
  float n = t - kShift;
  int32_t ni = std::bit_cast<int32_t>(t) - std::bit_cast<int32_t>(kShift);
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  float scale = std::bit_cast<float>((ni + 127) << 23);
  return x < -87.3f ? 0.0f : p * scale;
}

// y[i] = f(i) rounded to T, streamed when asked (stream_store.h).
template <class T, class F> inline void write_row(T* __restrict y, int64_t n, bool stream, F&& f) {
  write_elements(y, n, stream, [&](int64_t i) { return from_f32<T>(f(i)); });
}

// ---- f16 rows: each converted into an f32 buffer (half_rows.h), the f32 kernel run on
// it, and the result converted back ----
// Runs row(xf, yf), an f32 kernel over one row, for each f16 row r in [b, e) of x into y.
// The callers' rows are noinline lambdas: inlined here, the f32 kernel ran out of registers
// and reloaded its pointers from the stack at every step (layer_norm 32x4096: 50 -> 29 us).
template <class Row> void f16_rows_as_f32(const f16_t* x, f16_t* y, int64_t b, int64_t e, int64_t n, bool stream,
                                          Row&& row) {
  std::vector<float> buf(static_cast<size_t>(2 * n));
  float* xf = buf.data();
  float* yf = xf + n;
  for (int64_t r = b; r < e; ++r) {
    f16_row_to_f32(x + r * n, xf, n);
    row(xf, yf);
    f32_row_to_f16(yf, y + r * n, n, stream);
  }
  end_stream(stream);
}

// An optional f16 parameter row (weight, bias) as f32: empty when absent.
std::vector<float> f16_param_as_f32(const f16_t* p, int64_t n) {
  std::vector<float> v(p ? static_cast<size_t>(n) : 0);
  if (p) f16_row_to_f32(p, v.data(), n);
  return v;
}

int64_t row_grain(int64_t n) { return std::max<int64_t>(1, kMinElemsPerCore / std::max<int64_t>(n, 1)); }

// ---- softmax: max, then e^(x-max) into an f32 row (L1/L2-resident) and its sum, then
// write e/sum ----
// `scratch`: an f32 row to use (else one is allocated), for callers that run one row at a time.
template <class T>
void softmax_rows(const T* x, T* y, int64_t b, int64_t e, int64_t n, bool stream, float* scratch = nullptr) {
  if constexpr (std::is_same_v<T, f16_t>) {
    std::vector<float> row(static_cast<size_t>(n));
    float* t = row.data();
    return f16_rows_as_f32(x, y, b, e, n, stream,
                           [n, t](const float* xf, float* yf) __attribute__((noinline)) {
                             softmax_rows<float>(xf, yf, 0, 1, n, false, t);
                           });
  }
  std::vector<float> row(scratch ? 0 : static_cast<size_t>(n));
  float* __restrict t = scratch ? scratch : row.data();
  for (int64_t r = b; r < e; ++r) {
    const T* __restrict xr = x + r * n;
    float m = row_extreme<true, float>(xr, n);
    float acc[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
      for (int j = 0; j < kLanes; ++j) {
        float v = exp_f32(to_f32(xr[i + j]) - m);
        t[i + j] = v;
        acc[j] += v;
      }
    float s = 0;
    for (; i < n; ++i) {
      float v = exp_f32(to_f32(xr[i]) - m);
      t[i] = v;
      s += v;
    }
    for (int j = 0; j < kLanes; ++j) s += acc[j];
    float inv = 1.0f / s;
    write_row(y + r * n, n, stream, [&](int64_t k) { return t[k] * inv; });
  }
  end_stream(stream);
}

// Softmax over the middle axis of (K0, R, K1), for c <= kColBlock columns at x, y.
template <class T> void softmax_cols(const T* x, T* y, int64_t R, int64_t K1, int64_t c) {
  float m[kColBlock], s[kColBlock] = {};
  for (int64_t j = 0; j < c; ++j) m[j] = to_f32(x[j]);
  for (int64_t r = 1; r < R; ++r)
    for (int64_t j = 0; j < c; ++j) {
      float v = to_f32(x[r * K1 + j]);
      m[j] = better<true>(v, m[j]) ? v : m[j];
    }
  for (int64_t r = 0; r < R; ++r)
    for (int64_t j = 0; j < c; ++j) s[j] += exp_f32(to_f32(x[r * K1 + j]) - m[j]);
  for (int64_t j = 0; j < c; ++j) s[j] = 1.0f / s[j];
  for (int64_t r = 0; r < R; ++r)
    for (int64_t j = 0; j < c; ++j) y[r * K1 + j] = from_f32<T>(exp_f32(to_f32(x[r * K1 + j]) - m[j]) * s[j]);
}

// ---- rms_norm: one pass for the sum of squares, one to write (the row stays in L1/L2) ----
template <class T, bool kWeight>
void rms_norm_rows(const T* x, const T* w, T* y, int64_t b, int64_t e, int64_t n, float eps, bool stream) {
  if constexpr (std::is_same_v<T, f16_t>) {
    std::vector<float> wf = f16_param_as_f32(w, n);
    const float* wp = wf.data();
    return f16_rows_as_f32(x, y, b, e, n, stream, [=](const float* xf, float* yf) __attribute__((noinline)) {
      rms_norm_rows<float, kWeight>(xf, wp, yf, 0, 1, n, eps, false);
    });
  }
  for (int64_t r = b; r < e; ++r) {
    const T* __restrict xr = x + r * n;
    float inv = 1.0f / std::sqrt(row_sumsq(xr, n) / float(n) + eps);
    write_row(y + r * n, n, stream, [&](int64_t i) {
      float v = to_f32(xr[i]) * inv;
      if constexpr (kWeight) v *= to_f32(w[i]);
      return v;
    });
  }
  end_stream(stream);
}

// ---- layer_norm: mean, then the biased variance around it, then write ----
template <class T, bool kWeight, bool kBias>
void layer_norm_rows(const T* x, const T* w, const T* bias, T* y, int64_t b, int64_t e, int64_t n, float eps,
                     bool stream) {
  if constexpr (std::is_same_v<T, f16_t>) {
    std::vector<float> wf = f16_param_as_f32(w, n), bf = f16_param_as_f32(bias, n);
    const float *wp = wf.data(), *bp = bf.data();
    return f16_rows_as_f32(x, y, b, e, n, stream, [=](const float* xf, float* yf) __attribute__((noinline)) {
      layer_norm_rows<float, kWeight, kBias>(xf, wp, bp, yf, 0, 1, n, eps, false);
    });
  }
  for (int64_t r = b; r < e; ++r) {
    const T* __restrict xr = x + r * n;
    float mu = row_sum<float>(xr, n) / float(n);
    float inv = 1.0f / std::sqrt(row_sqdev(xr, n, mu) / float(n) + eps);
    write_row(y + r * n, n, stream, [&](int64_t i) {
      float v = (to_f32(xr[i]) - mu) * inv;
      if constexpr (kWeight) v *= to_f32(w[i]);
      if constexpr (kBias) v += to_f32(bias[i]);
      return v;
    });
  }
  end_stream(stream);
}

// Rows of the contiguous x: (rows, last dim).
void rows_of(const Tensor& x, int64_t& rows, int64_t& n) {
  n = x.ndim() ? x.shape().back() : 1;
  rows = n ? x.numel() / n : 0;
}

}  // namespace

LaunchSpec softmax_spec(const Tensor& out, const Tensor& x, int axis) {
  int64_t K0 = 1, R = x.ndim() ? x.shape()[axis] : 1, K1 = 1;
  for (int d = 0; d < axis; ++d) K0 *= x.shape()[d];
  for (int d = axis + 1; d < x.ndim(); ++d) K1 *= x.shape()[d];
  LaunchSpec spec;
  spec.bytes = x.nbytes() + out.nbytes();
  spec.flops = x.numel() * 20;  // max, exp (about 15), sum, scale
  OPSCOPE_DISPATCH_FLOAT(x.dtype(), T, [&] {
    const T* xp = x.data<T>();
    T* yp = out.data<T>();
    if (K1 == 1) {
      spec.name = fmt::format("softmax_{}", dtype_name(x.dtype()));
      spec.work = K0;
      spec.grain = row_grain(R);
      bool stream = out.nbytes() >= kStreamBytes;
      spec.body = [=](int64_t b, int64_t e) { softmax_rows(xp, yp, b, e, R, stream); };
    } else {
      spec.name = fmt::format("softmax_cols_{}", dtype_name(x.dtype()));
      int64_t blocks = (K1 + kColBlock - 1) / kColBlock;
      spec.work = K0 * blocks;
      spec.grain = row_grain(R * std::min(K1, kColBlock));
      spec.body = [=](int64_t b, int64_t e) {
        for (int64_t u = b; u < e; ++u) {
          int64_t k0 = u / blocks, j0 = (u % blocks) * kColBlock, off = k0 * R * K1 + j0;
          softmax_cols(xp + off, yp + off, R, K1, std::min(kColBlock, K1 - j0));
        }
      };
    }
  });
  return spec;
}

LaunchSpec rms_norm_spec(const Tensor& out, const Tensor& x, const Tensor* weight, float eps) {
  int64_t rows, n;
  rows_of(x, rows, n);
  LaunchSpec spec;
  spec.name = fmt::format("rms_norm_{}", dtype_name(x.dtype()));
  spec.work = rows;
  spec.grain = row_grain(n);
  spec.bytes = x.nbytes() + out.nbytes() + (weight ? weight->nbytes() : 0);
  spec.flops = x.numel() * 4;
  OPSCOPE_DISPATCH_FLOAT(x.dtype(), T, [&] {
    const T* xp = x.data<T>();
    const T* wp = weight ? weight->data<T>() : nullptr;
    T* yp = out.data<T>();
    bool stream = out.nbytes() >= kStreamBytes;
    if (wp)
      spec.body = [=](int64_t b, int64_t e) { rms_norm_rows<T, true>(xp, wp, yp, b, e, n, eps, stream); };
    else
      spec.body = [=](int64_t b, int64_t e) { rms_norm_rows<T, false>(xp, wp, yp, b, e, n, eps, stream); };
  });
  return spec;
}

LaunchSpec layer_norm_spec(const Tensor& out, const Tensor& x, const Tensor* weight, const Tensor* bias, float eps) {
  int64_t rows, n;
  rows_of(x, rows, n);
  LaunchSpec spec;
  spec.name = fmt::format("layer_norm_{}", dtype_name(x.dtype()));
  spec.work = rows;
  spec.grain = row_grain(n);
  spec.bytes = x.nbytes() + out.nbytes() + (weight ? weight->nbytes() : 0) + (bias ? bias->nbytes() : 0);
  spec.flops = x.numel() * 8;
  OPSCOPE_DISPATCH_FLOAT(x.dtype(), T, [&] {
    const T* xp = x.data<T>();
    const T* wp = weight ? weight->data<T>() : nullptr;
    const T* bp = bias ? bias->data<T>() : nullptr;
    T* yp = out.data<T>();
    bool stream = out.nbytes() >= kStreamBytes;
    auto pick = [&]<bool kW, bool kB>() {
      spec.body = [=](int64_t b, int64_t e) { layer_norm_rows<T, kW, kB>(xp, wp, bp, yp, b, e, n, eps, stream); };
    };
    if (wp && bp) pick.template operator()<true, true>();
    else if (wp) pick.template operator()<true, false>();
    else if (bp) pick.template operator()<false, true>();
    else pick.template operator()<false, false>();
  });
  return spec;
}

}  // namespace opscope::cpu_kernels
