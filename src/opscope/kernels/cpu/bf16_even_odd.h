// bf16 rows as even and odd elements. Where every row of a lane-wise computation is bf16,
// each 2 x kVecLanes elements are taken as two registers of f32 lanes: the even elements and
// the odd ones. A bf16 is the high half of an f32, so one load becomes the two by a shift and
// an and, and the two go back by a shift and a blend (AVX-512: a convert of each, or one
// vcvtne2ps2bf16 for both, and one word permute). The in-order form (half_rows.h) spends a widening and a shift on each
// register in, and a narrowing on each out, on the ports that shift and shuffle: a bf16
// layer_norm ran at half f16's speed under AVX2. The lanes are out of order, so this is for
// lane-wise work, and for sums whose lanes are folded back in order (reduce.h's row_lanes).
#pragma once
#include <immintrin.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "opscope/kernels/cpu/half_rows.h"

namespace opscope::cpu_kernels {

// The row kernels (norm.cpp, reduce.h) take bf16 rows so under AVX2 and AVX-512BW (Zen 5,
// 1024x4096 bf16 rms_norm: 283-300 us in order, 236-255 us as even and odd).
inline constexpr bool kBf16EvenOddRows =
#if (defined(__AVX512F__) && defined(__AVX512BW__)) || (defined(__AVX2__) && !defined(__AVX512F__))
    true;
#else
    false;
#endif
// The elementwise kernels' f32 blocks (elementwise_unary.cpp, elementwise_binary.cpp) take
// them so only where AVX2 is the widest, 16 at a time.
inline constexpr bool kBf16EvenOdd =
#if defined(__AVX2__) && !defined(__AVX512F__)
    true;
#else
    false;
#endif

#if defined(__AVX512F__) && defined(__AVX512BW__)
struct EvenOdd {
  f32v even, odd;
};

// 32 bf16 from p: elements 0, 2, .. 30 and 1, 3, .. 31. (maskz shifts: GCC 12 warns of the
// plain intrinsics' undefined operand.)
[[gnu::always_inline]] inline EvenOdd load_bf16_even_odd(const bf16_t* p) {
  __m512i u = _mm512_loadu_si512(p);
  return {std::bit_cast<f32v>(_mm512_maskz_slli_epi32(0xffff, u, 16)),
          std::bit_cast<f32v>(_mm512_and_si512(u, _mm512_set1_epi32(int(0xffff0000u))))};
}

// The inverse of load_bf16_even_odd, rounded as bf16_lanes_on_bits rounds (to nearest even,
// NaN kept and quieted); streamed where asked and p is 64-byte aligned. The even lanes' 16
// bf16 and the odd lanes' 16 are made side by side, then interleaved by one vpermw. (kNoNaN
// matters only to the AVX2 form, whose NaN test it skips.)
template <bool kNoNaN = false>
[[gnu::always_inline]] inline void store_bf16_even_odd(bf16_t* p, EvenOdd v, bool stream) {
  using u16x32 = uint16_t __attribute__((vector_size(64)));
  u16x32 side_by_side;
#if defined(__AVX512BF16__) && defined(__AVX512DQ__)
  // one vcvtne2ps2bf16, which rounds and quiets as the bits do but reads a denormal as 0:
  // a register holding one takes the bit form
  __m512 e = std::bit_cast<__m512>(v.even), o = std::bit_cast<__m512>(v.odd);
  if (!(_mm512_fpclass_ps_mask(e, 0x20) | _mm512_fpclass_ps_mask(o, 0x20))) [[likely]]
    side_by_side = std::bit_cast<u16x32>(_mm512_cvtne2ps_pbh(o, e));
  else
#endif
  {
    u16v even = bf16_lanes_on_bits(v.even), odd = bf16_lanes_on_bits(v.odd);
    side_by_side = __builtin_shufflevector(even, odd, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18,
                                           19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
  }
  alignas(64) static constexpr uint16_t kInterleave[32] = {0,  16, 1,  17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                                           8,  24, 9,  25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  __m512i h = _mm512_permutexvar_epi16(_mm512_load_si512(kInterleave), std::bit_cast<__m512i>(side_by_side));
  if (stream && reinterpret_cast<uintptr_t>(p) % 64 == 0) return _mm512_stream_si512(reinterpret_cast<__m512i*>(p), h);
  _mm512_storeu_si512(p, h);
}
// Only the elementwise kernels' AVX2 blocks take these (kBf16EvenOdd).
void bf16_to_even_odd_f32(const bf16_t* p, float* buf, int64_t m);
void even_odd_f32_to_bf16(const float* buf, bf16_t* p, int64_t m, bool stream);
#elif defined(__AVX2__)
using f32x8 = float __attribute__((vector_size(32)));  // f32v where AVX2 is the widest
static_assert(!kBf16EvenOdd || std::is_same_v<f32x8, f32v>);

struct EvenOdd {
  f32x8 even, odd;
};

// 16 bf16 from p: elements 0, 2, .. 14 and 1, 3, .. 15.
[[gnu::always_inline]] inline EvenOdd load_bf16_even_odd(const bf16_t* p) {
  __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return {std::bit_cast<f32x8>(_mm256_slli_epi32(u, 16)),
          std::bit_cast<f32x8>(_mm256_and_si256(u, _mm256_set1_epi32(int(0xffff0000u))))};
}

// The inverse of load_bf16_even_odd, rounded as bf16_lanes_on_bits rounds (NaN kept and
// quieted, off the main path); streamed where asked and p is 32-byte aligned. kNoNaN: the
// caller knows no lane is NaN, and the test for one is left out.
template <bool kNoNaN = false>
[[gnu::always_inline]] inline void store_bf16_even_odd(bf16_t* p, EvenOdd v, bool stream) {
  __m256 e = std::bit_cast<__m256>(v.even), o = std::bit_cast<__m256>(v.odd);
  __m256i re = bf16_in_high_half(_mm256_castps_si256(e)), ro = bf16_in_high_half(_mm256_castps_si256(o));
  __m256 nan = _mm256_cmp_ps(e, o, _CMP_UNORD_Q);  // a NaN in either
  if (!kNoNaN && !_mm256_testz_ps(nan, nan)) [[unlikely]] {
    __m256i quiet = _mm256_set1_epi32(0x400000);
    re = _mm256_blendv_epi8(re, _mm256_or_si256(_mm256_castps_si256(e), quiet),
                            _mm256_castps_si256(_mm256_cmp_ps(e, e, _CMP_UNORD_Q)));
    ro = _mm256_blendv_epi8(ro, _mm256_or_si256(_mm256_castps_si256(o), quiet),
                            _mm256_castps_si256(_mm256_cmp_ps(o, o, _CMP_UNORD_Q)));
  }
  __m256i h = _mm256_blend_epi16(_mm256_srli_epi32(re, 16), ro, 0xaa);
  if (stream && reinterpret_cast<uintptr_t>(p) % 32 == 0) return _mm256_stream_si256(reinterpret_cast<__m256i*>(p), h);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), h);
}

// m bf16 as f32 in buf, each whole 16 as their even elements, then their odd ones, the
// tail in order: for a lane-wise loop over buf that GCC vectorizes on its own.
inline void bf16_to_even_odd_f32(const bf16_t* p, float* buf, int64_t m) {
  int64_t j = 0;
  for (; j + 16 <= m; j += 16) {
    EvenOdd v = load_bf16_even_odd(p + j);
    std::memcpy(buf + j, &v.even, sizeof v.even);
    std::memcpy(buf + j + 8, &v.odd, sizeof v.odd);
  }
  for (; j < m; ++j) buf[j] = bf16_to_f32(p[j]);
}
// The inverse, rounded (store_bf16_even_odd; the tail as f32_to_bf16).
inline void even_odd_f32_to_bf16(const float* buf, bf16_t* p, int64_t m, bool stream) {
  int64_t j = 0;
  for (; j + 16 <= m; j += 16) {
    EvenOdd v;
    std::memcpy(&v.even, buf + j, sizeof v.even);
    std::memcpy(&v.odd, buf + j + 8, sizeof v.odd);
    store_bf16_even_odd(p + j, v, stream);
  }
  for (; j < m; ++j) p[j] = f32_to_bf16(buf[j]);
}
#else  // declared only, for the callers' discarded branches: kBf16EvenOdd is false
struct EvenOdd {
  f32v even, odd;
};
EvenOdd load_bf16_even_odd(const bf16_t* p);
template <bool kNoNaN = false> void store_bf16_even_odd(bf16_t* p, EvenOdd v, bool stream);
void bf16_to_even_odd_f32(const bf16_t* p, float* buf, int64_t m);
void even_odd_f32_to_bf16(const float* buf, bf16_t* p, int64_t m, bool stream);
#endif

}  // namespace opscope::cpu_kernels
