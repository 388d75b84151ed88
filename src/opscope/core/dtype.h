// Element types of tensors. Low-precision floats are stored as 16-bit patterns and
// converted to f32 for arithmetic (accumulation is always f32 or wider). b8 is torch's
// bool: one byte, 0 or 1, the result of comparisons and the mask of where/masked ops;
// arithmetic kernels refuse it (OPSCOPE_DISPATCH_ALL), copies and index ops take it.
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace opscope {

enum class DType : uint8_t { f32, bf16, f16, i32, i64, b8 };

constexpr size_t itemsize(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::bf16: return 2;
    case DType::f16: return 2;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::b8: return 1;
  }
  return 0;
}
constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::b8: return "bool";
  }
  return "?";
}
constexpr bool is_floating(DType t) { return t == DType::f32 || t == DType::bf16 || t == DType::f16; }
// Parses "f32", "float32", "bf16", ...; throws opscope::Error naming `what` on failure.
DType parse_dtype(std::string_view s, std::string_view what = "dtype");

// bfloat16: the upper half of an IEEE f32. Conversion rounds to nearest even and keeps NaN.
struct bf16_t {
  uint16_t bits;
};
inline float bf16_to_f32(bf16_t v) {
  uint32_t u = uint32_t(v.bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline bf16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16_t{uint16_t((u >> 16) | 0x40)};  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return bf16_t{uint16_t(u >> 16)};
}
// IEEE half: GCC's _Float16 as the storage type.
using f16_t = _Float16;

// f16 <-> f32 on the bit patterns: the same values as _Float16's casts (round to nearest
// even, denormals, inf, NaN; checked for every half and a sweep of floats in tests), but
// GCC 12 vectorizes loops over these and emits one scalar vcvtph2ps per element for the
// casts. Always inlined: one call left in a loop stops its vectorization.
[[gnu::always_inline]] inline uint32_t select_bits(bool c, uint32_t a, uint32_t b) {
  uint32_t m = 0u - uint32_t(c);  // a mask, not ?: -- a branch would stop vectorization
  return (a & m) | (b & ~m);
}
[[gnu::always_inline]] inline float f16_to_f32(f16_t h) {
  uint32_t x = std::bit_cast<uint16_t>(h);
  uint32_t em = x & 0x7fffu;
  float mag = std::bit_cast<float>(em << 13) * 0x1p112f;  // rebias; exact for denormals too
  uint32_t m = select_bits(em >= 0x7c00u, (em << 13) | 0x7f800000u, std::bit_cast<uint32_t>(mag));  // inf, NaN
  return std::bit_cast<float>(m | ((x & 0x8000u) << 16));
}
[[gnu::always_inline]] inline f16_t f32_to_f16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  uint32_t sign = u & 0x80000000u;
  u ^= sign;
  // normal results: rebias the exponent, round the mantissa to nearest even
  uint32_t norm = (u + ((15u - 127u) << 23) + 0xfffu + ((u >> 13) & 1u)) >> 13;
  // denormal results: adding 0.5 lets the FPU round at f16's denormal spacing
  constexpr float kHalf = 0.5f;
  uint32_t den = std::bit_cast<uint32_t>(std::bit_cast<float>(u) + kHalf) - std::bit_cast<uint32_t>(kHalf);
  uint32_t h = select_bits(u < (113u << 23), den, norm);
  h = u >= (143u << 23) ? (u > 0x7f800000u ? 0x7e00u : 0x7c00u) : h;  // overflow, inf, NaN
  return std::bit_cast<f16_t>(uint16_t(h | (sign >> 16)));
}

// Scalar <-> f32 conversions used by every kernel.
template <class T> [[gnu::always_inline]] inline float to_f32(T v) { return float(v); }
template <> [[gnu::always_inline]] inline float to_f32<bf16_t>(bf16_t v) { return bf16_to_f32(v); }
template <> [[gnu::always_inline]] inline float to_f32<f16_t>(f16_t v) { return f16_to_f32(v); }
template <class T> [[gnu::always_inline]] inline T from_f32(float v) { return T(v); }
template <> [[gnu::always_inline]] inline bf16_t from_f32<bf16_t>(float v) { return f32_to_bf16(v); }
template <> [[gnu::always_inline]] inline f16_t from_f32<f16_t>(float v) { return f32_to_f16(v); }

template <class T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<bf16_t> { static constexpr DType value = DType::bf16; };
template <> struct dtype_of<f16_t> { static constexpr DType value = DType::f16; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::i64; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::b8; };

}  // namespace opscope

// Runs BODY with `T` bound to the C++ type of a floating dtype. The caller handles the
// non-floating case before (this throws a generic error for it).
#define OPSCOPE_DISPATCH_FLOAT(DT, T, ...)                                   \
  [&] {                                                                      \
    switch (DT) {                                                            \
      case ::opscope::DType::f32: { using T = float; return __VA_ARGS__(); } \
      case ::opscope::DType::bf16: { using T = ::opscope::bf16_t; return __VA_ARGS__(); } \
      case ::opscope::DType::f16: { using T = ::opscope::f16_t; return __VA_ARGS__(); } \
      default: ::opscope::detail::unsupported_dtype(DT);                     \
    }                                                                        \
  }()

#define OPSCOPE_DISPATCH_ALL(DT, T, ...)                                     \
  [&] {                                                                      \
    switch (DT) {                                                            \
      case ::opscope::DType::f32: { using T = float; return __VA_ARGS__(); } \
      case ::opscope::DType::bf16: { using T = ::opscope::bf16_t; return __VA_ARGS__(); } \
      case ::opscope::DType::f16: { using T = ::opscope::f16_t; return __VA_ARGS__(); } \
      case ::opscope::DType::i32: { using T = int32_t; return __VA_ARGS__(); } \
      case ::opscope::DType::i64: { using T = int64_t; return __VA_ARGS__(); } \
      default: break;                                                        \
    }                                                                        \
    ::opscope::detail::unsupported_dtype(DT);                                \
  }()

// OPSCOPE_DISPATCH_ALL and b8 (as C++ bool): for kernels that move or select elements
// (copies, casts, fills, gathers), never for arithmetic.
#define OPSCOPE_DISPATCH_ALL_AND_BOOL(DT, T, ...)                            \
  [&] {                                                                      \
    if ((DT) == ::opscope::DType::b8) { using T = bool; return __VA_ARGS__(); } \
    return OPSCOPE_DISPATCH_ALL(DT, T, __VA_ARGS__);                         \
  }()

namespace opscope::detail {
[[noreturn]] void unsupported_dtype(DType t);
}
