// Floating rows (f32, bf16, f16) to and from f32, one register of f32 lanes at a time
// (f32v: 16 lanes under AVX-512, 8 elsewhere): load_f32v and store_f32v for kernels that
// compute in f32 registers and read or write half rows directly, and whole-row converts
// built on them. The width is the register's: GCC 12 lowers a 16-lane vector type on an
// AVX2 CPU into pieces that pass through the stack (softmax ran at 0.09 of the copy rate).
// f16: the hardware's converts (AVX-512F 16-wide; F16C's 8-wide where that is all there
// is). GCC 12 emits one scalar vcvtph2ps per _Float16 element, and the bit-pattern
// conversions of dtype.h cost about a dozen vector instructions per 16 elements.
// bf16: f32's upper half, converted on the bits. Not AVX512-BF16's vcvtneps2bf16: it
// flushes denormal inputs to zero, where torch (and f32_to_bf16) round them.
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

#if defined(__AVX512F__)
inline constexpr int kVecLanes = 16;
#else
inline constexpr int kVecLanes = 8;
#endif
using f32v = float __attribute__((vector_size(4 * kVecLanes)));
using u16v = uint16_t __attribute__((vector_size(2 * kVecLanes)));
using u32v = uint32_t __attribute__((vector_size(4 * kVecLanes)));
using i32v = int32_t __attribute__((vector_size(4 * kVecLanes)));
template <class T> constexpr bool kFloatRow =
    std::is_same_v<T, float> || std::is_same_v<T, bf16_t> || std::is_same_v<T, f16_t>;

// kVecLanes elements from p, as f32.
template <class T> [[gnu::always_inline]] inline f32v load_f32v(const T* p) {
  f32v v;
  if constexpr (std::is_same_v<T, float>) {
    std::memcpy(&v, p, sizeof v);
  } else if constexpr (std::is_same_v<T, bf16_t>) {  // bf16 is the high half of an f32: exact
#if defined(__AVX512F__)  // GCC 12 splits __builtin_convertvector's widening in two here; maskz: as below
    __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    __m512i w = _mm512_maskz_slli_epi32(0xffff, _mm512_maskz_cvtepu16_epi32(0xffff, h), 16);
#elif defined(__AVX2__)  // GCC 12 widens the vector form below in two halves and a merge
    __m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16);
#else
    u16v h;
    std::memcpy(&h, p, sizeof h);
    u32v w = __builtin_convertvector(h, u32v) << 16;
#endif
    std::memcpy(&v, &w, sizeof v);
  } else {  // f16: GCC 12 turns __builtin_convertvector into 16 scalar converts
#if defined(__AVX512F__)  // maskz: GCC 12 warns of _mm512_cvtph_ps's undefined operand
    __m512 w = _mm512_maskz_cvtph_ps(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    std::memcpy(&v, &w, sizeof v);
#elif defined(__F16C__)
    __m256 w = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    std::memcpy(&v, &w, sizeof v);
#else
    for (int j = 0; j < kVecLanes; ++j) v[j] = f16_to_f32(p[j]);
#endif
  }
  return v;
}

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
// The 16 elements at p as f32 where m is set, 0 elsewhere; nothing is read outside m.
template <class T> [[gnu::always_inline]] inline __m512 load_f32_masked(const T* p, __mmask16 m) {
  if constexpr (std::is_same_v<T, float>) {
    return _mm512_maskz_loadu_ps(m, p);
  } else {
    __m256i h = _mm256_maskz_loadu_epi16(m, p);
    if constexpr (std::is_same_v<T, bf16_t>)
      return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xffff, _mm512_maskz_cvtepu16_epi32(0xffff, h), 16));
    else
      return _mm512_maskz_cvtph_ps(0xffff, h);
  }
}
#endif

// v in every lane: one vbroadcastss (GCC makes f32v{} + v a scalar add, then the broadcast).
[[gnu::always_inline]] inline f32v broadcast(float v) {
#if defined(__AVX512F__)
  return std::bit_cast<f32v>(_mm512_set1_ps(v));
#elif defined(__AVX__)
  return std::bit_cast<f32v>(_mm256_set1_ps(v));
#else
  return f32v{} + v;
#endif
}

// The first k <= kVecLanes elements from p as f32, the other lanes `pad`: a row's tail,
// without reading past its end. Under AVX-512 a masked load: the element loop compiled to a
// dozen scalar moves and spills, and a softmax over rows of 197 (ViT's attention) spent half
// its time in its tails.
template <class T> inline f32v load_f32v_tail(const T* p, int64_t k, float pad) {
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
  const __mmask16 m = __mmask16((1u << k) - 1);
  return std::bit_cast<f32v>(_mm512_mask_blend_ps(m, _mm512_set1_ps(pad), load_f32_masked(p, m)));
#else
  f32v v = f32v{} + pad;
  for (int64_t j = 0; j < k; ++j) v[j] = to_f32(p[j]);
  return v;
#endif
}

#if defined(__AVX2__)
// Each 32-bit lane rounded to bf16 in its high 16 bits (to nearest even; the low bits are
// junk). NaN is the caller's: rounding can carry a NaN's payload into infinity.
[[gnu::always_inline]] inline __m256i bf16_in_high_half(__m256i u) {
  __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  return _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb);
}
#endif

// f32 lanes rounded to bf16 on the bits: to nearest even, NaN kept and quieted.
[[gnu::always_inline]] inline u16v bf16_lanes_on_bits(f32v v) {
#if defined(__AVX2__) && !defined(__AVX512F__)
  // The vector form below in AVX2's own instructions: GCC 12 makes its unsigned compare of
  // two and narrows with a mask, a pack and a permute. Every lane ends at most 0xffff, so
  // the signed compare and the saturating pack are exact.
  __m256i u = std::bit_cast<__m256i>(v), hi = _mm256_srli_epi32(u, 16);
  __m256i rounded = _mm256_srli_epi32(bf16_in_high_half(u), 16);
  __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
  __m256i r = _mm256_blendv_epi8(rounded, _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), nan);
  return std::bit_cast<u16v>(_mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)));
#else
  u32v u;
  std::memcpy(&u, &v, sizeof u);
  u32v rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  u32v nan = (u >> 16) | 0x40u;
  return __builtin_convertvector((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded, u16v);
#endif
}

// The same; under AVX512-BF16 one vcvtneps2bf16 (the same rounding and NaN), with the bit
// rounding only for the 16 lanes that hold a denormal, which that instruction reads as 0.
[[gnu::always_inline]] inline u16v bf16_lanes(f32v v) {
#if defined(__AVX512BF16__) && defined(__AVX512DQ__)
  if (_mm512_fpclass_ps_mask(std::bit_cast<__m512>(v), 0x20)) [[unlikely]]  // 0x20: denormal
    return bf16_lanes_on_bits(v);
  return std::bit_cast<u16v>(_mm512_cvtneps_pbh(std::bit_cast<__m512>(v)));
#else
  return bf16_lanes_on_bits(v);
#endif
}

// f32 lanes rounded to f16 (to nearest even).
[[gnu::always_inline]] inline u16v f16_lanes(f32v v) {
  u16v h;
#if defined(__AVX512F__)
  __m256i c = _mm512_maskz_cvtps_ph(0xffff, std::bit_cast<__m512>(v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  std::memcpy(&h, &c, sizeof h);
#elif defined(__F16C__)
  __m128i c = _mm256_cvtps_ph(std::bit_cast<__m256>(v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  std::memcpy(&h, &c, sizeof h);
#else
  for (int j = 0; j < kVecLanes; ++j) h[j] = std::bit_cast<uint16_t>(f32_to_f16(v[j]));
#endif
  return h;
}

// The lanes of v to p as T: streamed (non-temporal) where asked and p is aligned to the
// store's size, else an ordinary store. The caller ends its slice with end_stream.
template <class T> [[gnu::always_inline]] inline void store_f32v(T* p, f32v v, bool stream) {
  bool aligned = (reinterpret_cast<uintptr_t>(p) % (sizeof(T) * kVecLanes)) == 0;
  if constexpr (std::is_same_v<T, float>) {
#if defined(__AVX512F__)
    if (stream && aligned) return _mm512_stream_ps(p, std::bit_cast<__m512>(v));
#elif defined(__AVX__)
    if (stream && aligned) return _mm256_stream_ps(p, std::bit_cast<__m256>(v));
#endif
    std::memcpy(p, &v, sizeof v);
  } else {
    u16v h = std::is_same_v<T, bf16_t> ? bf16_lanes(v) : f16_lanes(v);
#if defined(__AVX512F__)
    if (stream && aligned) return _mm256_stream_si256(reinterpret_cast<__m256i*>(p), std::bit_cast<__m256i>(h));
#elif defined(__SSE2__)
    if (stream && aligned) return _mm_stream_si128(reinterpret_cast<__m128i*>(p), std::bit_cast<__m128i>(h));
#endif
    std::memcpy(p, &h, sizeof h);
  }
}

// The first k <= kVecLanes lanes of v to p as T, nothing past them: a row's tail (masked under
// AVX-512, where the element loop compiled to scalar stores and a memcpy to a call).
template <class T> inline void store_f32v_tail(T* p, f32v v, int64_t k) {
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
  const __mmask16 m = __mmask16((1u << k) - 1);
  if constexpr (std::is_same_v<T, float>) {
    _mm512_mask_storeu_ps(p, m, std::bit_cast<__m512>(v));
  } else {
    u16v h = std::is_same_v<T, bf16_t> ? bf16_lanes(v) : f16_lanes(v);
    _mm256_mask_storeu_epi16(p, m, std::bit_cast<__m256i>(h));
  }
#else
  for (int64_t j = 0; j < k; ++j) p[j] = from_f32<T>(v[j]);
#endif
}

// Whole rows: x (n of From) to y (n of To), one of them f32; y streamed where asked.
template <class From, class To> inline void convert_row(const From* x, To* y, int64_t n, bool stream = false) {
  int64_t i = 0;
  for (; i + kVecLanes <= n; i += kVecLanes) store_f32v(y + i, load_f32v(x + i), stream);
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
