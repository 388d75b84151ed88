// Element types of tensors. Low-precision floats are stored as 16-bit patterns and
// converted to f32 for arithmetic (accumulation is always f32 or wider).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace opscope {

enum class DType : uint8_t { f32, bf16, f16, i32, i64 };

constexpr size_t itemsize(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::bf16: return 2;
    case DType::f16: return 2;
    case DType::i32: return 4;
    case DType::i64: return 8;
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
// IEEE half: GCC's _Float16 (F16C instructions where the host has them).
using f16_t = _Float16;

// Scalar <-> f32 conversions used by every kernel.
template <class T> inline float to_f32(T v) { return float(v); }
template <> inline float to_f32<bf16_t>(bf16_t v) { return bf16_to_f32(v); }
template <class T> inline T from_f32(float v) { return T(v); }
template <> inline bf16_t from_f32<bf16_t>(float v) { return f32_to_bf16(v); }

template <class T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<bf16_t> { static constexpr DType value = DType::bf16; };
template <> struct dtype_of<f16_t> { static constexpr DType value = DType::f16; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::i64; };

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
    }                                                                        \
    ::opscope::detail::unsupported_dtype(DT);                                \
  }()

namespace opscope::detail {
[[noreturn]] void unsupported_dtype(DType t);
}
