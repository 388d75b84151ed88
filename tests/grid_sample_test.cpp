// grid_sample (ops/spatial.h) without torch: an identity grid reads every pixel back, a point
// between pixels is their bilinear mix, points outside read 0, the border or the reflection
// by the padding mode, and bad shapes are errors that name grid_sample.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "opscope/core/error.h"
#include "opscope/ops/spatial.h"
#include "opscope/runtime/tensor.h"

using namespace opscope;

namespace {

// One point per (x, y) given, as a grid (1, 1, points, 2).
Tensor points(const std::vector<std::pair<float, float>>& xy) {
  std::vector<float> v;
  for (auto [x, y] : xy) v.push_back(x), v.push_back(y);
  return from_host(v, {1, 1, int64_t(xy.size()), 2});
}

}  // namespace

TEST(GridSample, IdentityGridReadsEveryPixel) {
  const int64_t H = 3, W = 4;
  std::vector<float> img(size_t(2 * H * W)), g;
  for (size_t i = 0; i < img.size(); ++i) img[i] = float(i) * 0.5f - 3;
  for (int64_t y = 0; y < H; ++y)
    for (int64_t x = 0; x < W; ++x) g.push_back(-1 + 2 * float(x) / float(W - 1)), g.push_back(-1 + 2 * float(y) / float(H - 1));
  Tensor out = grid_sample(from_host(img, {1, 2, H, W}), from_host(g, {1, H, W, 2}), GridSampleMode::bilinear,
                           GridSamplePadding::zeros, /*align_corners=*/true);
  EXPECT_EQ(out.shape(), (Shape{1, 2, H, W}));
  EXPECT_EQ(out.to_float_vector(), img);
}

TEST(GridSample, BilinearMixesAndPaddingModesReadOutside) {
  Tensor x = from_host({1, 2, 3, 4}, {1, 1, 2, 2});  // [[1, 2], [3, 4]]
  // align_corners: -1 and 1 are the pixel centres; (0, 0) is the middle of the four.
  EXPECT_FLOAT_EQ(grid_sample(x, points({{0, 0}}), GridSampleMode::bilinear, GridSamplePadding::zeros, true).item(), 2.5f);
  // (3, -1) is right of the image, on the top row: 0, the border's 2, or the reflection's 1
  // (x = 3 maps to pixel 2 = 1 + 1 reflected back to 0).
  auto at = [&](GridSamplePadding p) {
    return grid_sample(x, points({{3, -1}}), GridSampleMode::bilinear, p, true).item();
  };
  EXPECT_EQ(at(GridSamplePadding::zeros), 0.0f);
  EXPECT_EQ(at(GridSamplePadding::border), 2.0f);
  EXPECT_EQ(at(GridSamplePadding::reflection), 1.0f);
  EXPECT_EQ(grid_sample(x, points({{0.6f, 0.6f}}), GridSampleMode::nearest, GridSamplePadding::zeros, true).item(), 4.0f);
}

TEST(GridSample, BadShapesNameTheOp) {
  auto expect_error = [](auto&& f, const std::string& what) {
    try {
      f();
      ADD_FAILURE() << "no error: " << what;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("[grid_sample]", 0), 0u) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  Tensor x = from_host({1, 2, 3, 4}, {1, 1, 2, 2});
  expect_error([&] { grid_sample(x, from_host({0, 0, 0}, {1, 1, 1, 3})); }, "grid (N, Ho, Wo, 2)");
  expect_error([&] { grid_sample(x, points({{0, 0}}).to(DType::bf16)); }, "share a floating dtype");
}
