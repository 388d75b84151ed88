// The row conversions of kernels/cpu/half_rows.h (bf16 and f16 to and from f32, a register
// of lanes at a time, 16 under AVX-512 and 8 under AVX2, then a scalar tail): bit for bit
// the element conversions of dtype.h, which round to nearest even as torch does, for
// rounding ties, denormals, infinities, NaN, a sweep of f32 bit patterns, every row length
// around the 8- and 16-lane blocks, and streamed stores to aligned and unaligned rows.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "opscope/kernels/cpu/bf16_even_odd.h"
#include "opscope/kernels/cpu/half_rows.h"

using namespace opscope;
using namespace opscope::cpu_kernels;

namespace {

uint16_t bits(bf16_t h) { return h.bits; }
uint16_t bits(f16_t h) { return std::bit_cast<uint16_t>(h); }

// f32 bit patterns that stress the narrowing: ties either way, denormals (which
// AVX512-BF16's convert would flush), the largest finite value, infinities, NaN payloads.
std::vector<float> special_floats() {
  std::vector<uint32_t> u = {0x00000000, 0x80000000, 0x3f800000, 0x3f808000 /* bf16 tie, even: stays */,
                             0x3f818000 /* bf16 tie, odd: up */, 0x3f808001, 0x3f807fff, 0x00000001, 0x00008000,
                             0x00018000, 0x007fffff, 0x807fffff, 0x00800000, 0x7f7fffff /* to bf16 inf */, 0x7f800000,
                             0xff800000, 0x7f800001, 0x7fbfffff, 0x7fc00000, 0x7fffffff, 0xffc00001,
                             0x477ff000 /* f16: 65520, to inf */, 0x33000000 /* f16: half the least denormal */};
  std::vector<float> v;
  for (uint32_t b : u) v.push_back(std::bit_cast<float>(b));
  return v;
}

// Checks the row conversions of x (any length) against the element ones, both ways.
template <class H> void expect_rows_match_elements(const std::vector<float>& x, const char* what) {
  int64_t n = int64_t(x.size());
  std::vector<H> down(x.size()), down_streamed(x.size() + 16);
  row_from_f32(x.data(), down.data(), n);
  H* unaligned = down_streamed.data() + 1;  // streamed rows fall back to ordinary stores when unaligned
  row_from_f32(x.data(), unaligned, n, true);
  end_stream(true);
  // f16's NaN: the hardware's convert keeps the payload, the bit conversion makes 0x7e00
  // (both as _Float16's casts may); bf16 keeps it either way.
  auto same = [](H got, H want) {
    bool any_nan = std::is_same_v<H, f16_t> && std::isnan(to_f32(want));
    return any_nan ? std::isnan(to_f32(got)) : bits(got) == bits(want);
  };
  int bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    H want = from_f32<H>(x[size_t(i)]);
    if ((!same(down[size_t(i)], want) || !same(unaligned[i], want)) && ++bad < 5)
      ADD_FAILURE() << what << " down: element " << i << " of " << n << ", f32 bits " << std::hex
                    << std::bit_cast<uint32_t>(x[size_t(i)]) << ": " << bits(down[size_t(i)]) << " want " << bits(want);
  }
  std::vector<float> up(x.size());
  row_to_f32(down.data(), up.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    uint32_t got = std::bit_cast<uint32_t>(up[size_t(i)]), want = std::bit_cast<uint32_t>(to_f32(down[size_t(i)]));
    if (got != want && ++bad < 5) ADD_FAILURE() << what << " up: element " << i << " of " << n;
  }
  EXPECT_EQ(bad, 0) << what;
}

}  // namespace

TEST(HalfRows, SpecialValuesAtEveryPositionAndRowLength) {
  std::vector<float> s = special_floats();
  for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 4097}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[size_t(i)] = s[size_t(i) % s.size()];  // each value in body and tail
    expect_rows_match_elements<bf16_t>(x, "bf16");
    expect_rows_match_elements<f16_t>(x, "f16");
  }
}

TEST(HalfRows, SweepOfFloatBitPatterns) {
  std::vector<float> x;
  for (uint64_t u = 0; u < (uint64_t(1) << 32); u += 4093) x.push_back(std::bit_cast<float>(uint32_t(u)));
  expect_rows_match_elements<bf16_t>(x, "bf16 sweep");
  expect_rows_match_elements<f16_t>(x, "f16 sweep");
}

TEST(HalfRows, Bf16RoundsToNearestEvenAsTorch) {
  // torch.tensor([...]).to(torch.bfloat16).view(torch.int16), for the ties and denormals above
  std::vector<float> x = {1.00390625f /* 1 + 2^-8: tie, stays even */, 1.01171875f /* 1 + 3*2^-8: tie, up */,
                          1e-40f, -3.0e38f, 3.4e38f};
  std::vector<uint16_t> want = {0x3f80, 0x3f82, 0x0001, 0xff62, 0x7f80};
  x.resize(17, 1.0f);  // through the vector body and the tail alike
  want.resize(17, 0x3f80);
  std::vector<float> twice = x;
  twice.insert(twice.end(), x.begin(), x.end());
  std::vector<bf16_t> y(twice.size());
  row_from_f32(twice.data(), y.data(), int64_t(twice.size()));
  for (size_t i = 0; i < y.size(); ++i) EXPECT_EQ(bits(y[i]), want[i % 17]) << i;
  std::vector<float> nan = {NAN};
  nan.resize(16, NAN);
  std::vector<bf16_t> q(16);
  row_from_f32(nan.data(), q.data(), 16);
  for (bf16_t h : q) EXPECT_TRUE(std::isnan(to_f32(h)));
}

#if (defined(__AVX512F__) && defined(__AVX512BW__)) || (defined(__AVX2__) && !defined(__AVX512F__))
// bf16_even_odd.h, which the norms, softmax and row sums use for bf16 rows (AVX2, AVX-512BW):
// 2 x kVecLanes bf16 go to f32 lanes as even and odd elements and back unchanged, and f32
// lanes stored through it round as the element conversion does (ties, denormals, inf, NaN
// payloads, the sweep), to aligned (streamed) and unaligned rows.
TEST(HalfRows, Bf16EvenOddIsTheElementConversion) {
  constexpr size_t V = kVecLanes, W = 2 * V;
  std::vector<float> x = special_floats();
  for (uint64_t u = 0; u < (uint64_t(1) << 32); u += 65521) x.push_back(std::bit_cast<float>(uint32_t(u)));
  x.resize((x.size() + W - 1) / W * W, 1.0f);
  alignas(64) bf16_t out[W + 1];
  int bad = 0;
  for (size_t b = 0; b < x.size(); b += W) {
    EvenOdd v;
    for (size_t j = 0; j < V; ++j) {
      v.even[j] = x[b + 2 * j];
      v.odd[j] = x[b + 2 * j + 1];
    }
    for (int offset : {0, 1}) {  // aligned and streamed, then unaligned
      store_bf16_even_odd(out + offset, v, true);
      end_stream(true);
      for (size_t j = 0; j < W; ++j) {
        float f = x[b + j];
        if (bits(out[offset + j]) != bits(from_f32<bf16_t>(f)) && ++bad < 5)
          ADD_FAILURE() << "f32 bits " << std::hex << std::bit_cast<uint32_t>(f) << " stored as "
                        << bits(out[offset + j]) << ", want " << bits(from_f32<bf16_t>(f));
      }
      EvenOdd back = load_bf16_even_odd(out + offset);
      for (size_t j = 0; j < V; ++j) {
        bad += std::bit_cast<uint32_t>(back.even[j]) != std::bit_cast<uint32_t>(to_f32(out[offset + 2 * j]));
        bad += std::bit_cast<uint32_t>(back.odd[j]) != std::bit_cast<uint32_t>(to_f32(out[offset + 2 * j + 1]));
      }
    }
  }
  EXPECT_EQ(bad, 0);
}
#endif
