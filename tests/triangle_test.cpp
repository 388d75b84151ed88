// triu and tril (ops/indexing.h) against their definition: diagonals inside and past the
// matrix, batches, a strided input, integer dtypes, bad input.
#include <gtest/gtest.h>

#include <string>

#include "opscope/core/error.h"
#include "opscope/ops/indexing.h"
#include "opscope/ops/ops.h"

using namespace opscope;

namespace {

// x's values with those outside the triangle zeroed, x contiguous (B, R, C) as a vector.
std::vector<float> triangle_ref(const std::vector<float>& v, int64_t R, int64_t C, int64_t k, bool upper) {
  std::vector<float> out(v);
  for (size_t e = 0; e < v.size(); ++e) {
    int64_t i = int64_t(e) / C % R, j = int64_t(e) % C;
    if (upper ? j - i < k : j - i > k) out[e] = 0;
  }
  return out;
}

}  // namespace

TEST(Triangle, MatchesItsDefinition) {
  Tensor x = randn({3, 4, 6}, 7);
  for (int64_t k : {0, 1, -1, 5, 6, -3, -4, 100, -100}) {
    EXPECT_EQ(triu(x, k).to_float_vector(), triangle_ref(x.to_float_vector(), 4, 6, k, true)) << "triu " << k;
    EXPECT_EQ(tril(x, k).to_float_vector(), triangle_ref(x.to_float_vector(), 4, 6, k, false)) << "tril " << k;
  }
  Tensor t = randn({6, 4}, 8).transpose(0, 1);  // read through strides
  EXPECT_EQ(triu(t, 1).to_float_vector(), triangle_ref(t.to_float_vector(), 4, 6, 1, true));
  Tensor ints = from_host({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3}, DType::i64);
  EXPECT_EQ(tril(ints).to_float_vector(), (std::vector<float>{1, 0, 0, 4, 5, 0, 7, 8, 9}));
  EXPECT_EQ(triu(empty({2, 0, 3})).shape(), (Shape{2, 0, 3}));
}

TEST(Triangle, BadInputNamesTheOp) {
  try {
    triu(randn({5}, 1));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "[triu] x has shape (5): it needs at least 2 dims, a matrix or a batch of them");
  }
  EXPECT_THROW(tril(Tensor()), Error);
}
