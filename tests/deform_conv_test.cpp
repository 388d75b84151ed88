// deform_conv2d's own properties, beside the pytest comparison with torchvision: with zero
// offsets it is conv2d, a mask scales each tap, an offset of a whole row shifts the input,
// and bad operands get errors that name the op.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "opscope/ops/detection.h"
#include "opscope/ops/ops.h"
#include "opscope/runtime/tensor.h"
#include "test_util.h"

using namespace opscope;
using opscope::test_util::error_of;
using opscope::test_util::starts_with;

namespace {

void expect_near(const Tensor& got, const Tensor& want, const char* what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  std::vector<float> g = got.to_float_vector(), w = want.to_float_vector();
  for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], w[i], 1e-4 * (1 + std::fabs(w[i]))) << what << " at " << i;
}

}  // namespace

TEST(DeformConv2d, ZeroOffsetsAreConv2d) {
  // (stride, padding, dilation, groups): the window shapes conv2d takes.
  struct Case { Size2 stride, padding, dilation; int64_t groups; };
  for (Case k : {Case{{1, 1}, {1, 1}, {1, 1}, 1}, Case{{2, 1}, {0, 2}, {1, 2}, 2}, Case{{1, 3}, {2, 1}, {2, 1}, 4}}) {
    Tensor x = randn({2, 4, 9, 10}, 1), w = randn({8, 4 / k.groups, 3, 3}, 2), b = randn({8}, 3);
    Tensor want = conv2d(x, w, b, k.stride, k.padding, k.dilation, k.groups);
    const int64_t oh = want.shape()[2], ow = want.shape()[3];
    Tensor offset = zeros({2, 2 * 2 * 9, oh, ow});  // two offset groups
    expect_near(deform_conv2d(x, w, offset, {}, b, k.stride, k.padding, k.dilation, k.groups, 2), want, "offsets 0");
    // A mask of 0.5 on every tap halves the sum of products (the bias stays whole).
    Tensor half = full({2, 2 * 9, oh, ow}, 0.5);
    Tensor nobias = conv2d(x, w, {}, k.stride, k.padding, k.dilation, k.groups);
    expect_near(deform_conv2d(x, w, offset, half, {}, k.stride, k.padding, k.dilation, k.groups, 2),
                mul(nobias, 0.5), "mask 0.5");
  }
}

TEST(DeformConv2d, AnOffsetOfOneRowReadsTheRowBelow) {
  // dy = +1 on every tap, padding 1: output row r reads x's rows r .. r + 2, so its first
  // four rows (whose taps all land in the image) are conv2d with no padding above.
  Tensor x = randn({1, 3, 6, 7}, 4), w = randn({2, 3, 3, 3}, 5);
  std::vector<float> dy_dx(18 * 6 * 7, 0.0f);
  for (int64_t t = 0; t < 9; ++t)  // channel 2t: the dy of tap t
    std::fill(dy_dx.begin() + 2 * t * 42, dy_dx.begin() + (2 * t + 1) * 42, 1.0f);
  Tensor offset = from_host(dy_dx, {1, 18, 6, 7});
  Tensor got = deform_conv2d(x, w, offset, {}, {}, {1, 1}, {1, 1}, {1, 1}, 1, 1);
  expect_near(got.slice(2, 0, 4).contiguous(), conv2d(x, w, {}, {1, 1}, {0, 1}), "dy = 1");
}

TEST(DeformConv2d, BadOperandsNameTheOp) {
  Tensor x = randn({1, 4, 9, 8}, 1), w = randn({6, 4, 3, 3}, 2), offset = zeros({1, 18, 9, 8});
  auto call = [&](const Tensor& xx, const Tensor& ww, const Tensor& oo, const Tensor& mm, const Tensor& bb,
                  Size2 stride = {1, 1}, int64_t groups = 1, int64_t offset_groups = 1) {
    return error_of([&] { deform_conv2d(xx, ww, oo, mm, bb, stride, {1, 1}, {1, 1}, groups, offset_groups); });
  };
  EXPECT_EQ(call(x, w, zeros({1, 16, 9, 8}), {}, {}),
            "[deform_conv2d] offset has shape (1, 16, 9, 8); it must be (1, 18, 9, 8)");
  EXPECT_EQ(call(x, w, offset, zeros({1, 8, 9, 8}), {}),
            "[deform_conv2d] mask has shape (1, 8, 9, 8); it must be (1, 9, 9, 8)");
  EXPECT_EQ(call(x, w, offset, {}, zeros({5})), "[deform_conv2d] bias has shape (5); it must be (6)");
  EXPECT_EQ(call(x, w, offset, {}, {}, {0, 1}), "[deform_conv2d] stride (0, 1) must be at least 1");
  EXPECT_TRUE(starts_with(call(x, w, offset, {}, {}, {1, 1}, 3), "[deform_conv2d] weight (6, 4, 3, 3) with 3 groups"));
  EXPECT_EQ(call(x, w, offset, {}, {}, {1, 1}, 1, 3), "[deform_conv2d] 3 offset groups do not divide x's 4 channels");
  EXPECT_TRUE(starts_with(call(x.to(DType::bf16), w, offset, {}, {}), "[deform_conv2d] every operand must have x's"));
  EXPECT_EQ(call(randn({4, 9, 8}, 1), w, offset, {}, {}), "[deform_conv2d] x has shape (4, 9, 8); it must be (N, C, H, W)");
  // A 2-row image and a 3-row kernel, no padding, stride 2: no output row (not one, as
  // (2 - 3) / 2 + 1 would truncate to).
  EXPECT_EQ(error_of([&] {
              deform_conv2d(randn({1, 4, 2, 8}, 1), w, zeros({1, 18, 1, 3}), {}, {}, {2, 2}, {0, 0}, {1, 1}, 1, 1);
            }),
            "[deform_conv2d] x (1, 4, 2, 8) padded by (0, 0) is smaller than the 3x3 kernel dilated by (1, 1)");
}
