#include "opscope/kernels/cpu/norm.h"

#include <fmt/format.h>

#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "opscope/kernels/cpu/reduce.h"

namespace opscope::cpu_kernels {

namespace {

constexpr int64_t kMinElemsPerCore = int64_t(1) << 14;
constexpr int64_t kColBlock = 128;  // columns per unit of a softmax over an outer axis
// Outputs at least this large are written with streaming stores: they would not stay in
// cache anyway, and skipping the read-for-ownership of y saves a third of the traffic.
constexpr int64_t kStreamBytes = int64_t(8) << 20;

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

// Copies n bytes to dst with non-temporal stores (the caller ends with _mm_sfence()).
void stream_copy(char* dst, const char* src, size_t n) {
  size_t head = std::min(n, size_t(-reinterpret_cast<uintptr_t>(dst) & 63));
  std::memcpy(dst, src, head);
  dst += head, src += head, n -= head;
#if defined(__AVX512F__)
  for (; n >= 64; n -= 64, dst += 64, src += 64)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst), _mm512_loadu_si512(src));
#elif defined(__AVX__)
  for (; n >= 32; n -= 32, dst += 32, src += 32)
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src)));
#else
  for (; n >= 16; n -= 16, dst += 16, src += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst), _mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
#endif
  std::memcpy(dst, src, n);
}

int64_t row_grain(int64_t n) { return std::max<int64_t>(1, kMinElemsPerCore / std::max<int64_t>(n, 1)); }

// Where a row kernel writes row r of y: y itself, or (streaming) an L1-resident scratch
// row that is then copied out with non-temporal stores.
template <class T> class RowOut {
 public:
  RowOut(T* y, int64_t n, bool stream) : y_(y), n_(n), stream_(stream), scratch_(stream ? size_t(n) : 0) {}
  ~RowOut() {
    if (stream_) _mm_sfence();  // streaming stores are weakly ordered: publish them before the launch ends
  }
  T* row(int64_t r) { return stream_ ? scratch_.data() : y_ + r * n_; }
  void done(int64_t r) {
    if (stream_)
      stream_copy(reinterpret_cast<char*>(y_ + r * n_), reinterpret_cast<const char*>(scratch_.data()),
                  size_t(n_) * sizeof(T));
  }

 private:
  T* y_;
  int64_t n_;
  bool stream_;
  std::vector<T> scratch_;
};

// ---- softmax ----
template <class T> void softmax_rows(const T* x, T* y, int64_t b, int64_t e, int64_t n, bool stream) {
  RowOut<T> out(y, n, stream);
  for (int64_t r = b; r < e; ++r) {
    const T* __restrict xr = x + r * n;
    T* __restrict yr = out.row(r);
    float m = row_extreme<true, float>(xr, n);
    float acc[kLanes] = {};
    int64_t i = 0;
    if constexpr (std::is_same_v<T, float>) {  // keep e^(x-m) in y, then scale it there
      for (; i + kLanes <= n; i += kLanes)
        for (int j = 0; j < kLanes; ++j) {
          float v = exp_f32(xr[i + j] - m);
          yr[i + j] = v;
          acc[j] += v;
        }
      float s = 0;
      for (; i < n; ++i) {
        float v = exp_f32(xr[i] - m);
        yr[i] = v;
        s += v;
      }
      for (int j = 0; j < kLanes; ++j) s += acc[j];
      float inv = 1.0f / s;
      for (i = 0; i < n; ++i) yr[i] *= inv;
    } else {  // 16-bit y cannot hold the f32 terms: recompute them
      for (; i + kLanes <= n; i += kLanes)
        for (int j = 0; j < kLanes; ++j) acc[j] += exp_f32(to_f32(xr[i + j]) - m);
      float s = 0;
      for (; i < n; ++i) s += exp_f32(to_f32(xr[i]) - m);
      for (int j = 0; j < kLanes; ++j) s += acc[j];
      float inv = 1.0f / s;
      for (i = 0; i < n; ++i) yr[i] = from_f32<T>(exp_f32(to_f32(xr[i]) - m) * inv);
    }
    out.done(r);
  }
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
  RowOut<T> out(y, n, stream);
  for (int64_t r = b; r < e; ++r) {
    const T* __restrict xr = x + r * n;
    T* __restrict yr = out.row(r);
    float inv = 1.0f / std::sqrt(row_sumsq(xr, n) / float(n) + eps);
    for (int64_t i = 0; i < n; ++i) {
      float v = to_f32(xr[i]) * inv;
      if constexpr (kWeight) v *= to_f32(w[i]);
      yr[i] = from_f32<T>(v);
    }
    out.done(r);
  }
}

// ---- layer_norm: mean, then the biased variance around it, then write ----
template <class T, bool kWeight, bool kBias>
void layer_norm_rows(const T* x, const T* w, const T* bias, T* y, int64_t b, int64_t e, int64_t n, float eps,
                     bool stream) {
  RowOut<T> out(y, n, stream);
  for (int64_t r = b; r < e; ++r) {
    const T* __restrict xr = x + r * n;
    T* __restrict yr = out.row(r);
    float mu = row_sum<float>(xr, n) / float(n);
    float inv = 1.0f / std::sqrt(row_sqdev(xr, n, mu) / float(n) + eps);
    for (int64_t i = 0; i < n; ++i) {
      float v = (to_f32(xr[i]) - mu) * inv;
      if constexpr (kWeight) v *= to_f32(w[i]);
      if constexpr (kBias) v += to_f32(bias[i]);
      yr[i] = from_f32<T>(v);
    }
    out.done(r);
  }
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
