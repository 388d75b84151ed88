// Floating rows (f32, bf16, f16) to and from f32, 16 lanes at a time: load_f32x16 and
// store_f32x16 for kernels that compute in f32 registers and read or write half rows
// directly, and whole-row converts built on them.
// f16: the hardware's converts (AVX-512F 16-wide; F16C's 8-wide where that is all there
// is). GCC 12 emits one scalar vcvtph2ps per _Float16 element, and the bit-pattern
// conversions of dtype.h cost about a dozen vector instructions per 16 elements.
// bf16: f32's upper half, converted on the bits (GCC vector types: zmm under AVX-512,
// split in two or four on narrower ISAs). Not AVX512-BF16's vcvtneps2bf16: it flushes
// denormal inputs to zero, where torch (and f32_to_bf16) round them.
// The values are those of converting element by element.
#pragma once
#include <immintrin.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "opscope/core/dtype.h"
#include "opscope/kernels/cpu/stream_store.h"

namespace opscope::cpu_kernels {

// Elements per f32 buffer of the elementwise kernels' f16 loops: a few KiB of stack, in L1.
constexpr int64_t kHalfBlock = 512;

using f32x16 = float __attribute__((vector_size(64)));
using u16x16 = uint16_t __attribute__((vector_size(32)));
using u32x16 = uint32_t __attribute__((vector_size(64)));
using i32x16 = int32_t __attribute__((vector_size(64)));
template <class T> constexpr bool kFloatRow =
    std::is_same_v<T, float> || std::is_same_v<T, bf16_t> || std::is_same_v<T, f16_t>;

// 16 elements from p, as f32.
template <class T> [[gnu::always_inline]] inline f32x16 load_f32x16(const T* p) {
  f32x16 v;
  if constexpr (std::is_same_v<T, float>) {
    std::memcpy(&v, p, sizeof v);
  } else if constexpr (std::is_same_v<T, bf16_t>) {  // bf16 is the high half of an f32: exact
#if defined(__AVX512F__)  // GCC 12 splits __builtin_convertvector's widening in two here; maskz: as below
    __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    __m512i w = _mm512_maskz_slli_epi32(0xffff, _mm512_maskz_cvtepu16_epi32(0xffff, h), 16);
#else
    u16x16 h;
    std::memcpy(&h, p, sizeof h);
    u32x16 w = __builtin_convertvector(h, u32x16) << 16;
#endif
    std::memcpy(&v, &w, sizeof v);
  } else {  // f16: GCC 12 turns __builtin_convertvector into 16 scalar converts
#if defined(__AVX512F__)  // maskz: GCC 12 warns of _mm512_cvtph_ps's undefined operand
    __m512 w = _mm512_maskz_cvtph_ps(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    std::memcpy(&v, &w, sizeof v);
#elif defined(__F16C__)
    __m256 w[2] = {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
                   _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)))};
    std::memcpy(&v, w, sizeof v);
#else
    for (int j = 0; j < 16; ++j) v[j] = f16_to_f32(p[j]);
#endif
  }
  return v;
}

// The first k < 16 elements from p as f32, the other lanes `pad`: a row's tail, without
// reading past its end.
template <class T> inline f32x16 load_f32x16_tail(const T* p, int64_t k, float pad) {
  f32x16 v = f32x16{} + pad;
  for (int64_t j = 0; j < k; ++j) v[j] = to_f32(p[j]);
  return v;
}

// 16 f32 lanes rounded to bf16 on the bits: to nearest even, NaN kept and quieted.
[[gnu::always_inline]] inline u16x16 bf16_lanes_on_bits(f32x16 v) {
  u32x16 u;
  std::memcpy(&u, &v, sizeof u);
  u32x16 rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  u32x16 nan = (u >> 16) | 0x40u;
  return __builtin_convertvector((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded, u16x16);
}

// The same; under AVX512-BF16 one vcvtneps2bf16 (the same rounding and NaN), with the bit
// rounding only for the 16 lanes that hold a denormal, which that instruction reads as 0.
[[gnu::always_inline]] inline u16x16 bf16_lanes(f32x16 v) {
#if defined(__AVX512BF16__) && defined(__AVX512DQ__)
  if (_mm512_fpclass_ps_mask(std::bit_cast<__m512>(v), 0x20)) [[unlikely]]  // 0x20: denormal
    return bf16_lanes_on_bits(v);
  return std::bit_cast<u16x16>(_mm512_cvtneps_pbh(std::bit_cast<__m512>(v)));
#else
  return bf16_lanes_on_bits(v);
#endif
}

// 16 f32 lanes rounded to f16 (to nearest even).
[[gnu::always_inline]] inline u16x16 f16_lanes(f32x16 v) {
  u16x16 h;
#if defined(__AVX512F__)
  __m256i c = _mm512_maskz_cvtps_ph(0xffff, std::bit_cast<__m512>(v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  std::memcpy(&h, &c, sizeof h);
#elif defined(__F16C__)
  __m256 w[2];
  std::memcpy(w, &v, sizeof w);
  __m128i c[2] = {_mm256_cvtps_ph(w[0], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                  _mm256_cvtps_ph(w[1], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)};
  std::memcpy(&h, c, sizeof h);
#else
  for (int j = 0; j < 16; ++j) h[j] = std::bit_cast<uint16_t>(f32_to_f16(v[j]));
#endif
  return h;
}

// The 16 lanes of v to p as T: streamed (non-temporal) where asked and p is aligned to the
// store's size, else an ordinary store. The caller ends its slice with end_stream.
template <class T> [[gnu::always_inline]] inline void store_f32x16(T* p, f32x16 v, bool stream) {
  if constexpr (std::is_same_v<T, float>) {
#if defined(__AVX512F__)
    if (stream && (reinterpret_cast<uintptr_t>(p) & 63) == 0) return _mm512_stream_ps(p, std::bit_cast<__m512>(v));
#endif
    std::memcpy(p, &v, sizeof v);
  } else {
    u16x16 h = std::is_same_v<T, bf16_t> ? bf16_lanes(v) : f16_lanes(v);
#if defined(__AVX__)
    if (stream && (reinterpret_cast<uintptr_t>(p) & 31) == 0)
      return _mm256_stream_si256(reinterpret_cast<__m256i*>(p), std::bit_cast<__m256i>(h));
#endif
    std::memcpy(p, &h, sizeof h);
  }
}

// Whole rows: x (n of From) to y (n of To), one of them f32; y streamed where asked.
template <class From, class To> inline void convert_row(const From* x, To* y, int64_t n, bool stream = false) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) store_f32x16(y + i, load_f32x16(x + i), stream);
  for (; i < n; ++i) y[i] = from_f32<To>(to_f32(x[i]));
}

inline void f16_row_to_f32(const f16_t* x, float* xf, int64_t n) { convert_row(x, xf, n); }
inline void bf16_row_to_f32(const bf16_t* x, float* xf, int64_t n) { convert_row(x, xf, n); }
inline void f32_row_to_f16(const float* yf, f16_t* y, int64_t n, bool stream) { convert_row(yf, y, n, stream); }
inline void f32_row_to_bf16(const float* yf, bf16_t* y, int64_t n, bool stream) { convert_row(yf, y, n, stream); }

// Any floating row to and from f32.
template <class T> inline void row_to_f32(const T* x, float* y, int64_t n) { convert_row(x, y, n); }
template <class T> inline void row_from_f32(const float* x, T* y, int64_t n, bool stream = false) {
  convert_row(x, y, n, stream);
}

}  // namespace opscope::cpu_kernels
