// In-place elementwise ops (ops/inplace.h): the kernel writes x's own memory, and what
// cannot be written that way is refused with the op's name.
#include <gtest/gtest.h>

#include <string>

#include "opscope/core/error.h"
#include "opscope/ops/inplace.h"
#include "opscope/ops/ops.h"

using namespace opscope;
using cpu_kernels::BinaryOp;
using cpu_kernels::UnaryOp;

TEST(InPlace, WritesXsOwnMemory) {
  Tensor x = randn({3, 70}, 1), y = randn({70}, 2);
  std::vector<float> xv = x.to_float_vector(), yv = y.to_float_vector();
  void* before = x.data_ptr();
  unary_inplace("relu_", UnaryOp::relu, x);
  binary_inplace("add_", BinaryOp::add, x, y);  // y broadcast over the rows
  binary_inplace("mul_", BinaryOp::mul, x, x);  // other is x, the same view
  ASSERT_EQ(x.data_ptr(), before);
  std::vector<float> got = x.to_float_vector();
  for (size_t i = 0; i < xv.size(); ++i) {
    float r = std::max(xv[i], 0.0f) + yv[i % 70];
    EXPECT_FLOAT_EQ(got[i], r * r) << i;
  }
}

TEST(InPlace, RefusesWhatItCannotWriteDirectly) {
  Tensor x = randn({4, 6}, 3);
  EXPECT_FALSE(can_write_in_place(x.transpose(0, 1)));
  EXPECT_FALSE(can_write_in_place(x.to(DType::i32)));
  EXPECT_FALSE(can_write_in_place(x.slice(0, 1, 4), x.slice(0, 0, 3)));  // other overlaps x partly
  EXPECT_FALSE(can_write_in_place(x, randn({5}, 4)));                    // not broadcastable to x
  EXPECT_FALSE(can_write_in_place(x.slice(1, 0, 3), randn({4, 3}, 5)));  // x not contiguous
  EXPECT_TRUE(can_write_in_place(x, randn({1, 6}, 6)));
  EXPECT_TRUE(can_write_in_place(x, x));
  try {
    binary_inplace("add_", BinaryOp::add, x, randn({5}, 7));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[add_] x (shape (4, 6)) cannot be written in place with other (shape (5))", 0),
              0u)
        << e.what();
  }
}
