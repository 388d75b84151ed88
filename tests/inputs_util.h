// Test inputs the kernel tests share: uniform random floats, and every value of a 16-bit
// floating dtype as a tensor.
#pragma once
#include <bit>
#include <cstdint>
#include <random>
#include <vector>

#include "opscope/core/dtype.h"
#include "opscope/runtime/tensor.h"

namespace opscope::test_util {

// n floats uniform in [lo, hi), the same for the same seed.
inline std::vector<float> uniform(int64_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(gen);
  return v;
}

// Each of the 65536 values of bf16 or f16 (NaNs quieted), in the order of their bits.
inline Tensor every_bit_pattern(DType dt) {
  std::vector<float> all;
  for (uint32_t bits = 0; bits < 65536; ++bits)
    all.push_back(dt == DType::bf16 ? to_f32(std::bit_cast<bf16_t>(uint16_t(bits))) : to_f32(std::bit_cast<f16_t>(uint16_t(bits))));
  return from_host(all, {65536}, dt);
}

}  // namespace opscope::test_util
