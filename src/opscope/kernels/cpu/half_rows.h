// f16 rows to and from f32 with the hardware's 16-wide converts (AVX-512F; F16C's 8-wide
// where that is all there is). GCC 12 emits one scalar vcvtph2ps per _Float16 element,
// and the bit-pattern conversions of dtype.h cost about a dozen vector instructions per
// 16 elements: kernels that move whole f16 rows convert them here, into f32 buffers, and
// run their f32 loop on those. The values are those of converting element by element.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "opscope/core/dtype.h"
#include "opscope/kernels/cpu/stream_store.h"

namespace opscope::cpu_kernels {

// Elements per f32 buffer of the elementwise kernels' f16 loops: a few KiB of stack, in L1.
constexpr int64_t kHalfBlock = 512;

inline void f16_row_to_f32(const f16_t* x, float* xf, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16)  // maskz: GCC 12 warns of _mm512_cvtph_ps's undefined operand
    _mm512_storeu_ps(xf + i, _mm512_maskz_cvtph_ps(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i))));
#elif defined(__F16C__)
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(xf + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
#endif
  for (; i < n; ++i) xf[i] = to_f32(x[i]);
}

// Streamed (non-temporal) where asked and the destination is aligned; the caller ends its
// slice with end_stream.
inline void f32_row_to_f16(const float* yf, f16_t* y, int64_t n, bool stream) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16) {
    __m256i h = _mm512_maskz_cvtps_ph(0xffff, _mm512_loadu_ps(yf + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    auto* dst = reinterpret_cast<__m256i*>(y + i);
    if (stream && (reinterpret_cast<uintptr_t>(dst) & 31) == 0) _mm256_stream_si256(dst, h);
    else _mm256_storeu_si256(dst, h);
  }
#elif defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(yf + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
  for (; i < n; ++i) y[i] = from_f32<f16_t>(yf[i]);
}

// Any floating row to and from f32: f16 through the converts above, the rest as plain
// loops (which vectorize).
template <class T> inline void row_to_f32(const T* x, float* y, int64_t n) {
  if constexpr (std::is_same_v<T, f16_t>) f16_row_to_f32(x, y, n);
  else
    for (int64_t i = 0; i < n; ++i) y[i] = to_f32(x[i]);
}
template <class T> inline void row_from_f32(const float* x, T* y, int64_t n) {
  if constexpr (std::is_same_v<T, f16_t>) f32_row_to_f16(x, y, n, false);
  else
    for (int64_t i = 0; i < n; ++i) y[i] = from_f32<T>(x[i]);
}

}  // namespace opscope::cpu_kernels
