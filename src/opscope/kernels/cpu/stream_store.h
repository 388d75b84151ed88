// Streaming (non-temporal) stores for outputs too large to stay in cache. An ordinary
// store first reads the line it writes (read-for-ownership); a streaming store does not,
// so an elementwise op over data beyond the last-level cache moves a third less. Used by
// the eager elementwise kernels and the norms; the compiler's generated kernels have
// their own copy (codegen_cpu.cpp), since they compile without this header.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace opscope::cpu_kernels {

// Outputs at least this large are streamed: past the caches of the CPUs we run on, and
// large enough that the data would be evicted before anyone reads it again.
constexpr int64_t kStreamBytes = int64_t(8) << 20;

// Copies 64 bytes to a 64-byte aligned dst with non-temporal stores.
inline void stream64(void* dst, const void* src) {
#if defined(__AVX512F__)
  _mm512_stream_si512(static_cast<__m512i*>(dst), _mm512_load_si512(src));
#elif defined(__AVX__)
  for (int k = 0; k < 2; ++k)
    _mm256_stream_si256(static_cast<__m256i*>(dst) + k, _mm256_load_si256(static_cast<const __m256i*>(src) + k));
#else
  for (int k = 0; k < 4; ++k)
    _mm_stream_si128(static_cast<__m128i*>(dst) + k, _mm_load_si128(static_cast<const __m128i*>(src) + k));
#endif
}

// Writes y[i] = g(i) for i < n (g returns a T). Streaming: whole 64-byte lines go out with
// non-temporal stores (the caller ends its slice with end_stream), each line computed into
// a register-sized buffer first so that the loop still vectorizes; the unaligned head and
// the tail are ordinary stores.
template <class T, class G> inline void write_elements(T* __restrict y, int64_t n, bool stream, G&& g) {
  int64_t i = 0;
  if (stream) {
    constexpr int64_t kLine = 64 / sizeof(T);
    int64_t head = std::min(n, int64_t((-reinterpret_cast<uintptr_t>(y) & 63) / sizeof(T)));
    for (; i < head; ++i) y[i] = g(i);
    for (; i + kLine <= n; i += kLine) {
      alignas(64) T line[kLine];
      // Kept a loop: fully unrolled, GCC 12 assembles the loads of g element by element.
#pragma GCC unroll 1
      for (int64_t j = 0; j < kLine; ++j) line[j] = g(i + j);
      stream64(y + i, line);
    }
  }
  for (; i < n; ++i) y[i] = g(i);
}

// Streaming stores are weakly ordered: publish them before the slice ends (the launch
// completes, and another core may read the output, once every slice has returned).
inline void end_stream(bool stream) {
  if (stream) _mm_sfence();
}

}  // namespace opscope::cpu_kernels
