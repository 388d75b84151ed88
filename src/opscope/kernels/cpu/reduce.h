// Reduction kernels (sum, mean, max, min, var, argmax) and the row primitives the
// normalization kernels share. Row primitives keep kLanes independent accumulators so
// that the compiler vectorizes them without -ffast-math (f32 addition is not associative).
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <type_traits>

#include "opscope/core/dtype.h"
#include "opscope/kernels/cpu/bf16_even_odd.h"
#include "opscope/kernels/cpu/half_rows.h"
#include "opscope/runtime/launch.h"
#include "opscope/runtime/tensor.h"

namespace opscope::cpu_kernels {

enum class ReduceKind : uint8_t { sum, mean, max, min, var, argmax };
std::string_view reduce_name(ReduceKind k);

// The launch that reduces x over `axes` (normalized, unique) into the contiguous `out`,
// whose elements are x's kept dims in row-major order. var divides by N - correction
// (NaN when that is <= 0); argmax takes exactly one axis and writes i64. Paths: rows
// (the reduced extent is unit-stride), columns (the kept inner dim is unit-stride, e.g.
// sums over outer axes), strided (anything else). The kernel name says which.
LaunchSpec reduce_spec(ReduceKind kind, const Tensor& out, const Tensor& x, std::span<const int> axes,
                       int64_t correction);

// ---- row primitives ----
constexpr int kLanes = 32;

// Accumulator of a reduction over T: f32 for floating types, i64 for integers.
template <class T> using acc_t = std::conditional_t<std::is_integral_v<T>, int64_t, float>;

template <class Acc, class T> [[gnu::always_inline]] inline Acc load_as(T v) {
  if constexpr (std::is_integral_v<T>) return Acc(v);
  else return Acc(to_f32(v));
}

// Rows of floating T (f32, bf16, f16), summed in f32: the kLanes accumulators as vectors
// (two of 16 lanes under AVX-512, four of 8 under AVX2), f(u) added per lane. As an array,
// GCC 12 kept them in memory inside the kernels, and each step waited on a store and a
// reload (32x4096 rms_norm: 19.5 us against 13 us for the compiled kernel's same loop).
// The lanes are those of the array form, summed in the same order. (f32v and load_f32v:
// half_rows.h.)
// bf16 rows come in as even and odd lanes (bf16_even_odd.h): each pair of accumulators then
// holds the array form's lanes 2j and 2j + 1, and is folded back in that order.
template <class T, class F> inline float row_lanes(const T* x, int64_t n, F f) {
  static_assert(kLanes == 32 && kLanes % (2 * kVecLanes) == 0);
  constexpr int64_t V = kVecLanes;
  constexpr bool kEvenOdd = kBf16EvenOddRows && std::is_same_v<T, bf16_t>;
  f32v a0 = {}, a1 = {}, a2 = {}, a3 = {};  // a2, a3: only with 8 lanes
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    if constexpr (kEvenOdd) {
      auto h0 = load_bf16_even_odd(x + i);  // auto: dependent, discarded where kEvenOdd is false
      a0 += f(h0.even);
      a1 += f(h0.odd);
      if constexpr (V == 8) {
        auto h1 = load_bf16_even_odd(x + i + 2 * V);
        a2 += f(h1.even);
        a3 += f(h1.odd);
      }
    } else {
      a0 += f(load_f32v(x + i));
      a1 += f(load_f32v(x + i + V));
      if constexpr (V == 8) {
        a2 += f(load_f32v(x + i + 2 * V));
        a3 += f(load_f32v(x + i + 3 * V));
      }
    }
  }
  float s = 0;
  for (; i < n; ++i) s += f(to_f32(x[i]));
  const f32v acc[4] = {a0, a1, a2, a3};
  if constexpr (kEvenOdd) {
    for (int64_t a = 0; a < kLanes / V; a += 2)
      for (int j = 0; j < V; ++j) {
        s += acc[a][j];
        s += acc[a + 1][j];
      }
  } else {
    for (int64_t a = 0; a < kLanes / V; ++a)
      for (int j = 0; j < V; ++j) s += acc[a][j];
  }
  return s;
}

template <class Acc, class T> inline Acc row_sum(const T* x, int64_t n) {
  if constexpr (kFloatRow<T> && std::is_same_v<Acc, float>) return row_lanes(x, n, [](auto u) { return u; });
  Acc acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] += load_as<Acc>(x[i + j]);
  Acc s = 0;
  for (; i < n; ++i) s += load_as<Acc>(x[i]);
  for (int j = 0; j < kLanes; ++j) s += acc[j];
  return s;
}

template <class T> inline float row_sumsq(const T* x, int64_t n) {
  if constexpr (kFloatRow<T>) return row_lanes(x, n, [](auto u) { return u * u; });
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      float v = to_f32(x[i + j]);
      acc[j] += v * v;
    }
  float s = 0;
  for (; i < n; ++i) {
    float v = to_f32(x[i]);
    s += v * v;
  }
  for (int j = 0; j < kLanes; ++j) s += acc[j];
  return s;
}

// Sum of (x - mu)^2: the second pass of a two-pass variance.
template <class T> inline float row_sqdev(const T* x, int64_t n, float mu) {
  if constexpr (kFloatRow<T>)
    return row_lanes(x, n, [mu](auto u) {
      auto d = u - mu;
      return d * d;
    });
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      float d = to_f32(x[i + j]) - mu;
      acc[j] += d * d;
    }
  float s = 0;
  for (; i < n; ++i) {
    float d = to_f32(x[i]) - mu;
    s += d * d;
  }
  for (int j = 0; j < kLanes; ++j) s += acc[j];
  return s;
}

// v replaces the running extreme m when it is larger (smaller) or NaN: NaN is sticky,
// as in torch.max.
template <bool kMax, class A> inline bool better(A v, A m) {
  if constexpr (kMax) return v > m || v != v;
  else return v < m || v != v;
}
// m or v per lane, whichever is better (NaN aside: the callers track it apart).
template <bool kMax> [[gnu::always_inline]] inline f32v better_of_lanes(f32v v, f32v m) {
  if constexpr (kMax) return v > m ? v : m;
  else return v < m ? v : m;
}

// The lanes of v folded by `f` in halvings: four dependent steps for 16 lanes (three for
// 8) where a scan of the lanes takes fifteen (a softmax row of 128 spent most of its time
// in such scans).
template <class V, class F> [[gnu::always_inline]] inline auto fold_lanes(V v, F f) {
  if constexpr (sizeof(V) / sizeof(v[0]) == 16) {
    v = f(v, __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7));
    v = f(v, __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11));
    v = f(v, __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13));
    v = f(v, __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14));
  } else {
    static_assert(sizeof(V) / sizeof(v[0]) == 8);
    v = f(v, __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3));
    v = f(v, __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5));
    v = f(v, __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6));
  }
  return v[0];
}

// Largest (smallest) value of x[0..n), n >= 1.
template <bool kMax, class Acc, class T> inline Acc row_extreme(const T* x, int64_t n) {
  if constexpr (kFloatRow<T> && std::is_same_v<Acc, float>) {
    // the lanes below, as two vectors; NaN is noted off the chains of selects, so that each
    // step waits on one compare-and-select (the max of 4096 f32 from L2: 370 -> 230 ns here)
    f32v m0 = {}, m1;
    m0 += to_f32(x[0]);
    m1 = m0;
    i32v nan = {};
    int64_t i = 0;
    for (; i + 2 * kVecLanes <= n; i += 2 * kVecLanes) {
      f32v v0 = load_f32v(x + i), v1 = load_f32v(x + i + kVecLanes);
      m0 = better_of_lanes<kMax>(v0, m0);
      m1 = better_of_lanes<kMax>(v1, m1);
      nan |= (v0 != v0) | (v1 != v1);
    }
    float r = fold_lanes(better_of_lanes<kMax>(m1, m0), [](f32v a, f32v b) { return better_of_lanes<kMax>(b, a); });
    if (fold_lanes(nan, [](i32v a, i32v b) { return a | b; })) r = std::numeric_limits<float>::quiet_NaN();
    for (; i < n; ++i) {
      float v = to_f32(x[i]);
      r = better<kMax>(v, r) ? v : r;
    }
    return r;
  }
  Acc m[kLanes];
  Acc first = load_as<Acc>(x[0]);
  for (int j = 0; j < kLanes; ++j) m[j] = first;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      Acc v = load_as<Acc>(x[i + j]);
      m[j] = better<kMax>(v, m[j]) ? v : m[j];
    }
  Acc r = m[0];
  for (int j = 1; j < kLanes; ++j) r = better<kMax>(m[j], r) ? m[j] : r;
  for (; i < n; ++i) {
    Acc v = load_as<Acc>(x[i]);
    r = better<kMax>(v, r) ? v : r;
  }
  return r;
}

}  // namespace opscope::cpu_kernels
