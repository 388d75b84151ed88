// A stable 64-bit hash (FNV-1a): the same bytes give the same key on every machine and
// in every process, unlike std::hash.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace opscope::compiler {

inline uint64_t fnv1a64(std::string_view s, uint64_t h = 0xcbf29ce484222325ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

// 16 lowercase hex digits.
inline std::string hex64(uint64_t v) {
  static const char* d = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[size_t(i)] = d[v & 15];
  return s;
}

}  // namespace opscope::compiler
