#include "opscope/kernels/cpu/gemv.h"

#include <immintrin.h>

#include <type_traits>
#include <vector>

#include "opscope/kernels/cpu/half_rows.h"
#include "opscope/kernels/cpu/reduce.h"

namespace opscope::cpu_kernels {

namespace {

// One row at a time, one 16-wide FMA chain: the chain outruns a core's reads. In the
// decoder (tinyllama, 2 layers, both cores, a Zen 4 host) this read the weights fastest
// against 2, 4 and 8 rows sharing each load of x (f32 11.5 ms a token against 14.6, 18.5 and
// 15.8; bf16, then widened to f32 as it loaded, 6.9 against 11.6, 11.3 and 9.0), and as fast
// as OpenBLAS's sgemv for f32 (11.3). Under AVX-512 every dtype takes four rows since, as an
// Intel host measured it (below).
#if defined(__AVX512F__) && defined(__AVX512BW__)
// A sum through memory and the maskz forms below: GCC 12 warns that the lane extracts' and
// the plain forms' undefined operand may be used uninitialized (-Werror). Once per row.
inline float hsum(__m512 a) {
  alignas(64) float v[16];
  _mm512_store_ps(v, a);
  float s = 0;
  for (float x : v) s += x;
  return s;
}

// 16 elements of a row as f32 (the first `m` of them where masked).
template <class T> inline __m512 load16(const T* p, __mmask16 m = 0xffff) { return load_f32_masked(p, m); }

// Four accumulators: one FMA chain retires 16 products per FMA latency (4 cycles), 64 B
// of f32 weights but only 32 B of bf16 / f16 a cycle-group, under what a core can read.
template <class T> float dot_row(const T* w, const float* x, int64_t k) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 64 <= k; i += 64) {
    a0 = _mm512_fmadd_ps(load16(w + i), _mm512_loadu_ps(x + i), a0);
    a1 = _mm512_fmadd_ps(load16(w + i + 16), _mm512_loadu_ps(x + i + 16), a1);
    a2 = _mm512_fmadd_ps(load16(w + i + 32), _mm512_loadu_ps(x + i + 32), a2);
    a3 = _mm512_fmadd_ps(load16(w + i + 48), _mm512_loadu_ps(x + i + 48), a3);
  }
  for (; i + 16 <= k; i += 16) a0 = _mm512_fmadd_ps(load16(w + i), _mm512_loadu_ps(x + i), a0);
  if (i < k) {
    __mmask16 m = __mmask16((1u << (k - i)) - 1);
    a1 = _mm512_fmadd_ps(load16(w + i, m), _mm512_maskz_loadu_ps(m, x + i), a1);
  }
  return hsum(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

// Four rows at once, two chains each, sharing each load of x: on an Intel core one row at a
// time read a 32000x2048 f32 weight at 24-25 GB/s on both cores, four at 28 (a plain read of
// those bytes: 25-26). As dot_row, the first k elements of each of w's four rows.
template <class T> void dot_rows4(const T* w, int64_t ldw, const float* x, int64_t k, float* y) {
  __m512 a[4][2];
  for (auto& r : a) r[0] = r[1] = _mm512_setzero_ps();
  auto step = [&](int64_t i, __mmask16 m0, __mmask16 m1) {
    __m512 x0 = _mm512_maskz_loadu_ps(m0, x + i), x1 = _mm512_maskz_loadu_ps(m1, x + i + 16);
    for (int r = 0; r < 4; ++r) {
      a[r][0] = _mm512_fmadd_ps(load16(w + r * ldw + i, m0), x0, a[r][0]);
      a[r][1] = _mm512_fmadd_ps(load16(w + r * ldw + i + 16, m1), x1, a[r][1]);
    }
  };
  int64_t i = 0;
  for (; i + 32 <= k; i += 32) step(i, 0xffff, 0xffff);
  if (i < k) {  // the last 1-31 elements, masked: none of row r + 1 is read
    auto mask = [](int64_t left) { return left >= 16 ? __mmask16(0xffff) : __mmask16((1u << left) - 1); };
    step(i, mask(k - i), k - i > 16 ? mask(k - i - 16) : __mmask16(0));
  }
  for (int r = 0; r < 4; ++r) y[r] = hsum(_mm512_add_ps(a[r][0], a[r][1]));
}

#if defined(__AVX512BF16__)
// bf16 weights against bf16 x with AVX512-BF16's vdpbf16ps: 32 products a instruction summed
// into f32 lanes, where the loop above converts and multiplies 16 at a time (three
// instructions per 32 B of weights). x is bf16 already, so its values are the same; the
// sums are reassociated in pairs, and the instruction reads bf16 denormals as 0 (below
// 1.2e-38: nothing a weight or an activation holds in practice).
inline __m512bh bf16x32(const bf16_t* p, __mmask32 m = ~__mmask32(0)) {
  return (__m512bh)_mm512_maskz_loadu_epi16(m, p);
}

float dot_row_bf16(const bf16_t* w, const bf16_t* x, int64_t k) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 128 <= k; i += 128) {
    a0 = _mm512_dpbf16_ps(a0, bf16x32(w + i), bf16x32(x + i));
    a1 = _mm512_dpbf16_ps(a1, bf16x32(w + i + 32), bf16x32(x + i + 32));
    a2 = _mm512_dpbf16_ps(a2, bf16x32(w + i + 64), bf16x32(x + i + 64));
    a3 = _mm512_dpbf16_ps(a3, bf16x32(w + i + 96), bf16x32(x + i + 96));
  }
  for (; i + 32 <= k; i += 32) a0 = _mm512_dpbf16_ps(a0, bf16x32(w + i), bf16x32(x + i));
  if (i < k) {
    __mmask32 m = __mmask32((uint64_t(1) << (k - i)) - 1);
    a1 = _mm512_dpbf16_ps(a1, bf16x32(w + i, m), bf16x32(x + i, m));
  }
  return hsum(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

// Four rows at once, two chains each, sharing each load of x: on an Intel core (AVX512-BF16,
// AMX) one row at a time read tinyllama's 32000x2048 head at 23-26 GB/s on both cores, four
// at 30-32, as fast as a plain read of the same bytes.
void dot_rows4_bf16(const bf16_t* w, int64_t ldw, const bf16_t* x, int64_t k, float* y) {
  __m512 a[4][2];
  for (auto& r : a) r[0] = r[1] = _mm512_setzero_ps();
  auto step = [&](int64_t i, __mmask32 m0, __mmask32 m1) {
    __m512bh x0 = bf16x32(x + i, m0), x1 = bf16x32(x + i + 32, m1);
    for (int r = 0; r < 4; ++r) {
      a[r][0] = _mm512_dpbf16_ps(a[r][0], bf16x32(w + r * ldw + i, m0), x0);
      a[r][1] = _mm512_dpbf16_ps(a[r][1], bf16x32(w + r * ldw + i + 32, m1), x1);
    }
  };
  int64_t i = 0;
  for (; i + 64 <= k; i += 64) step(i, ~__mmask32(0), ~__mmask32(0));
  if (i < k) {  // the last 1-63 elements, masked: none of row r + 1 is read
    auto mask = [](int64_t left) { return left >= 32 ? ~__mmask32(0) : __mmask32((uint64_t(1) << left) - 1); };
    step(i, mask(k - i), k - i > 32 ? mask(k - i - 32) : __mmask32(0));
  }
  for (int r = 0; r < 4; ++r) y[r] = hsum(_mm512_add_ps(a[r][0], a[r][1]));
}
#endif
#else
// The same four chains in the row kernels' f32 lanes (half_rows.h: one register, 8 lanes
// on AVX2), loaded and widened as they load them. A plain loop is one scalar chain (bf16
// weights read at 4 GB/s on an AVX2 core), and vectors wider than the register went
// through the stack every iteration (10 GB/s).
template <class T> float dot_row(const T* w, const float* x, int64_t k) {
  constexpr int64_t V = kVecLanes;
  f32v a0 = {}, a1 = {}, a2 = {}, a3 = {};
  int64_t i = 0;
  for (; i + 4 * V <= k; i += 4 * V) {
    a0 += load_f32v(w + i) * load_f32v(x + i);
    a1 += load_f32v(w + i + V) * load_f32v(x + i + V);
    a2 += load_f32v(w + i + 2 * V) * load_f32v(x + i + 2 * V);
    a3 += load_f32v(w + i + 3 * V) * load_f32v(x + i + 3 * V);
  }
  for (; i + V <= k; i += V) a0 += load_f32v(w + i) * load_f32v(x + i);
  float s = fold_lanes((a0 + a1) + (a2 + a3), [](f32v a, f32v b) { return a + b; });
  for (; i < k; ++i) s += to_f32(w[i]) * x[i];
  return s;
}
#endif

// y[j] for the n rows: four(j, d) the dot products of rows j..j+3 into d, one(j) row j's
// alone, for the rows left over (all of them where kFours is false).
template <bool kFours, class T, class Four, class One> inline void rows_by_four(T* y, int64_t n, Four four, One one) {
  int64_t j = 0;
  if constexpr (kFours)
    for (float d[4]; j + 4 <= n; j += 4) {
      four(j, d);
      for (int r = 0; r < 4; ++r) y[j + r] = from_f32<T>(d[r]);
    }
  for (; j < n; ++j) y[j] = from_f32<T>(one(j));
}

template <class T>
void gemv(const T* w, int64_t ldw, const T* x, int64_t incx, T* y, int64_t n, int64_t k, float* xf) {
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512BF16__)
  if constexpr (std::is_same_v<T, bf16_t>) {
    std::vector<bf16_t> packed;  // x strided (a column of a matrix): copied once, contiguous
    const bf16_t* xb = x;
    if (incx != 1) {
      packed.resize(size_t(k));
      for (int64_t i = 0; i < k; ++i) packed[size_t(i)] = x[i * incx];
      xb = packed.data();
    }
    rows_by_four<true>(
        y, n, [&](int64_t j, float* d) { dot_rows4_bf16(w + j * ldw, ldw, xb, k, d); },
        [&](int64_t j) { return dot_row_bf16(w + j * ldw, xb, k); });
    return;
  }
#endif
  const float* xs = xf;
  if constexpr (std::is_same_v<T, float>)
    if (incx == 1) xs = x;
  if (xs == xf)
    for (int64_t i = 0; i < k; ++i) xf[i] = to_f32(x[i * incx]);
#if defined(__AVX512F__) && defined(__AVX512BW__)
  auto four = [&](int64_t j, float* d) { dot_rows4(w + j * ldw, ldw, xs, k, d); };
  constexpr bool kFours = true;
#else
  auto four = [](int64_t, float*) {};
  constexpr bool kFours = false;
#endif
  rows_by_four<kFours>(y, n, four, [&](int64_t j) { return dot_row(w + j * ldw, xs, k); });
}

}  // namespace

void gemv_rows(const float* w, int64_t ldw, const float* x, int64_t incx, float* y, int64_t n, int64_t k, float* xf) {
  gemv(w, ldw, x, incx, y, n, k, xf);
}
void gemv_rows(const bf16_t* w, int64_t ldw, const bf16_t* x, int64_t incx, bf16_t* y, int64_t n, int64_t k,
               float* xf) {
  gemv(w, ldw, x, incx, y, n, k, xf);
}
void gemv_rows(const f16_t* w, int64_t ldw, const f16_t* x, int64_t incx, f16_t* y, int64_t n, int64_t k,
               float* xf) {
  gemv(w, ldw, x, incx, y, n, k, xf);
}

}  // namespace opscope::cpu_kernels
