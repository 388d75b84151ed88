// conv2d and max_pool2d against naive loops in double: odd sizes, stride, padding,
// dilation, groups and depthwise, bias on and off, batches, non-contiguous input, 16-bit
// dtypes, shapes that cut the im2col kernel's pixel and channel blocks unevenly; the
// kernels each case picks (by name, with bytes and flops) and bad input.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "opscope/core/error.h"
#include "opscope/ops/ops.h"
#include "opscope/profiler/session.h"
#include "opscope/runtime/device.h"
#include "test_util.h"
#include "trace_util.h"

using namespace opscope;
using test_util::error_of;

namespace {

struct ConvCase {
  int64_t n, c, h, w, oc, kh, kw;
  Size2 stride{1, 1}, padding{0, 0}, dilation{1, 1};
  int64_t groups = 1;
  bool bias = true;
};

std::string name_of(const ConvCase& k) {
  return fmt::format("x ({}, {}, {}, {}) w ({}, {}, {}) stride {}x{} pad {}x{} dil {}x{} groups {}{}", k.n, k.c, k.h,
                     k.w, k.oc, k.kh, k.kw, k.stride[0], k.stride[1], k.padding[0], k.padding[1], k.dilation[0],
                     k.dilation[1], k.groups, k.bias ? " bias" : "");
}

int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) { return (in + 2 * p - d * (k - 1) - 1) / s + 1; }

// The definition: y[n, o, i, j] = b[o] + sum over the group's channels and taps of
// w[o, ci, a, b] * x[n, g * cg + ci, i * s - p + a * d, j * s - p + b * d] (0 outside).
std::vector<double> conv_ref(const ConvCase& k, const std::vector<float>& x, const std::vector<float>& w,
                             const std::vector<float>& b) {
  int64_t oh = out_size(k.h, k.kh, k.stride[0], k.padding[0], k.dilation[0]);
  int64_t ow = out_size(k.w, k.kw, k.stride[1], k.padding[1], k.dilation[1]);
  int64_t cg = k.c / k.groups, ocg = k.oc / k.groups;
  std::vector<double> y;
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t o = 0; o < k.oc; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double s = b.empty() ? 0.0 : b[size_t(o)];
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t a = 0; a < k.kh; ++a)
              for (int64_t e = 0; e < k.kw; ++e) {
                int64_t iy = i * k.stride[0] - k.padding[0] + a * k.dilation[0];
                int64_t ix = j * k.stride[1] - k.padding[1] + e * k.dilation[1];
                if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
                int64_t c = o / ocg * cg + ci;
                s += double(w[size_t(((o * cg + ci) * k.kh + a) * k.kw + e)]) *
                     x[size_t(((n * k.c + c) * k.h + iy) * k.w + ix)];
              }
          y.push_back(s);
        }
  return y;
}

// |got - want| <= tol * max(1, |want|) everywhere; reports the first few misses.
void expect_close(const std::vector<float>& got, const std::vector<double>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i) {
    bool ok = std::abs(got[i] - want[i]) <= tol * std::max(1.0, std::abs(want[i]));
    bad += !ok;
    EXPECT_TRUE(ok) << what << " at " << i << ": got " << got[i] << ", want " << want[i];
  }
}

void check_conv(const ConvCase& k, DType dt = DType::f32, uint64_t seed = 1) {
  Tensor x = randn({k.n, k.c, k.h, k.w}, seed, dt), w = randn({k.oc, k.c / k.groups, k.kh, k.kw}, seed + 1, dt);
  Tensor b = k.bias ? randn({k.oc}, seed + 2, dt) : Tensor();
  Tensor y = conv2d(x, w, b, k.stride, k.padding, k.dilation, k.groups);
  int64_t oh = out_size(k.h, k.kh, k.stride[0], k.padding[0], k.dilation[0]);
  int64_t ow = out_size(k.w, k.kw, k.stride[1], k.padding[1], k.dilation[1]);
  ASSERT_EQ(y.shape(), (Shape{k.n, k.oc, oh, ow})) << name_of(k);
  EXPECT_EQ(y.dtype(), dt);
  // The reference reads the same (rounded) inputs; 16-bit results are rounded once.
  double tol = dt == DType::f32 ? 1e-4 : dt == DType::bf16 ? 1e-2 : 2e-3;
  expect_close(y.to_float_vector(),
               conv_ref(k, x.to_float_vector(), w.to_float_vector(), k.bias ? b.to_float_vector() : std::vector<float>()),
               tol * std::sqrt(double(k.c / k.groups * k.kh * k.kw)), name_of(k) + " " + std::string(dtype_name(dt)));
}

// The kernels (name, bytes, flops) that `f` launched, by a profile of the call.
template <class F> std::vector<prof::TraceEvent> kernels_of(F&& f) {
  std::vector<prof::TraceEvent> ks;
  for (const auto& e : test::profiled(f).events)
    if (e.kind == prof::EventKind::launch) ks.push_back(e);
  return ks;
}

}  // namespace

TEST(Conv2d, MatchesTheDefinition) {
  std::vector<ConvCase> cases = {
      {2, 3, 7, 9, 5, 3, 3, {1, 1}, {1, 1}},                   // resnet's 3x3, odd sizes, a batch
      {1, 3, 11, 10, 4, 7, 7, {2, 2}, {3, 3}},                 // resnet's stem: 7x7 stride 2
      {1, 4, 9, 8, 3, 3, 3, {2, 1}, {0, 2}, {1, 1}, 1, false}, // unequal strides and padding, no bias
      {2, 2, 10, 9, 3, 3, 2, {1, 2}, {2, 1}, {2, 3}},          // dilation, a 3x2 window
      {1, 4, 6, 7, 6, 3, 3, {1, 1}, {1, 1}, {1, 1}, 2},        // two groups
      {3, 5, 4, 6, 7, 1, 1},                                   // 1x1: the input planes are the columns
      {2, 6, 9, 9, 4, 1, 1, {2, 2}, {0, 0}, {1, 1}, 1, false}, // 1x1 stride 2: im2col
      {1, 3, 5, 5, 2, 5, 5, {1, 1}, {2, 2}},                   // the window sees padding at every pixel
  };
  for (const ConvCase& k : cases) check_conv(k);
}

TEST(Conv2d, Depthwise) {
  check_conv({2, 6, 9, 7, 6, 3, 3, {1, 1}, {1, 1}, {1, 1}, 6});           // mobilenet's 3x3
  check_conv({1, 4, 11, 12, 4, 5, 5, {2, 2}, {2, 2}, {1, 1}, 4, false});  // 5x5 stride 2
  check_conv({1, 3, 8, 8, 6, 3, 3, {1, 2}, {0, 1}, {2, 1}, 3});           // channel multiplier 2, dilation
  check_conv({2, 5, 7, 6, 10, 3, 3, {1, 1}, {2, 1}, {2, 1}, 5});          // stride 1: the padded-plane path
  check_conv({1, 4, 3, 5, 4, 5, 5, {1, 1}, {2, 2}, {1, 1}, 4, false});    // a window larger than the plane
  // Strides split the padded plane into phases: stride 3, stride 2 with dilation 2 (taps in
  // one phase at two offsets), rows and columns strided differently, odd planes.
  check_conv({1, 3, 13, 11, 3, 3, 3, {3, 3}, {1, 1}, {1, 1}, 3});
  check_conv({2, 4, 15, 14, 4, 5, 5, {2, 2}, {4, 4}, {2, 2}, 4});
  check_conv({1, 5, 9, 12, 10, 3, 5, {2, 1}, {1, 2}, {1, 1}, 5, false});
  check_conv({1, 672, 14, 14, 672, 5, 5, {2, 2}, {2, 2}, {1, 1}, 672});  // EfficientNet's
  // Output rows as long as a block of the kernel's registers (32 floats under AVX2, 64 under
  // AVX-512) or longer: written a row at a time, the last block of a row overlapping the one
  // before it. Rows of 32, 33, 63, 64, 65 and 67, strided, dilated, multiplied, batched;
  // shorter rows run as one span through a buffer.
  check_conv({1, 3, 70, 67, 3, 3, 3, {2, 2}, {1, 1}, {1, 1}, 3});
  check_conv({1, 2, 9, 40, 4, 3, 3, {2, 1}, {1, 1}, {1, 2}, 2, false});
  for (int64_t w : {32, 33, 63, 64, 65, 67}) check_conv({2, 3, 5, w, 6, 3, 3, {1, 1}, {1, 1}, {1, 1}, 3});
  check_conv({1, 4, 9, 70, 4, 7, 7, {1, 1}, {3, 3}, {1, 1}, 4});            // ConvNeXt's 7x7
  check_conv({1, 2, 12, 140, 2, 5, 5, {2, 2}, {2, 2}, {1, 1}, 2, false});  // 5x5 stride 2, rows of 70
  check_conv({1, 2, 8, 66, 4, 3, 3, {1, 1}, {2, 2}, {2, 2}, 2});            // dilation 2, rows of 66
  // One tap and two (the odd tap beside the pairs), on long and short rows.
  check_conv({1, 3, 4, 70, 3, 1, 1, {1, 1}, {0, 0}, {1, 1}, 3});
  check_conv({1, 3, 4, 9, 3, 1, 2, {1, 1}, {0, 1}, {1, 1}, 3});
  // Planes one column wide and one row high, narrower than the stride.
  check_conv({1, 2, 5, 1, 2, 1, 1, {2, 2}, {0, 0}, {1, 1}, 2});
  check_conv({1, 2, 1, 5, 2, 3, 3, {3, 3}, {1, 1}, {1, 1}, 2});
}

// Groups of 2 to 16 input channels (RegNet's width 8, ResNeXt's 4 to 16) run
// conv2d_grouped_f32: bands of a group's output rows from its input planes' phases. Rows of
// a register block or more (in place) and shorter (through a span), strides, dilation, more
// output channels than input ones per group, batches, bands that do not divide the rows, the
// fused residual and activation; 17 channels a group go to im2col.
TEST(Conv2d, GroupedFewChannels) {
  check_conv({1, 16, 40, 40, 16, 3, 3, {1, 1}, {1, 1}, {1, 1}, 2});  // RegNet's, two groups of 8
  check_conv({1, 16, 80, 70, 16, 3, 3, {2, 2}, {1, 1}, {1, 1}, 2});  // its strided first block
  check_conv({2, 32, 9, 10, 32, 3, 3, {1, 1}, {1, 1}, {1, 1}, 8});   // ResNeXt's 4 a group, short rows
  check_conv({1, 12, 13, 37, 24, 3, 5, {1, 2}, {2, 1}, {2, 1}, 3});  // two outputs per input channel
  check_conv({1, 32, 7, 7, 32, 3, 3, {1, 1}, {1, 1}, {1, 1}, 2, false});  // 16 a group, 7x7 planes
  check_conv({1, 6, 37, 33, 6, 5, 5, {1, 1}, {2, 2}, {1, 1}, 3});
  check_conv({2, 8, 20, 21, 8, 3, 3, {2, 2}, {1, 1}, {2, 2}, 2});  // short rows, strided and dilated
  Tensor x = randn({1, 16, 12, 40}, 1), w = randn({16, 8, 3, 3}, 2), b = randn({16}, 3), r = randn({1, 16, 12, 40}, 4);
  Tensor fused;
  auto ks = kernels_of([&] { fused = conv2d(x, w, b, {1, 1}, {1, 1}, {1, 1}, 2, Activation::relu, r); });
  ASSERT_FALSE(ks.empty());
  EXPECT_EQ(ks.back().name, "conv2d_grouped_add_relu_f32");
  EXPECT_EQ(fused.to_float_vector(), relu(add(conv2d(x, w, b, {1, 1}, {1, 1}, {1, 1}, 2), r)).to_float_vector());
  Tensor x17 = randn({1, 34, 8, 8}, 5), w17 = randn({4, 17, 3, 3}, 6);
  EXPECT_EQ(kernels_of([&] { conv2d(x17, w17, {}, {1, 1}, {1, 1}, {1, 1}, 2); }).at(0).name, "conv2d_f32");
}

// More channels and pixels than one block of the im2col kernel: 130 output channels are
// three channel blocks (the last short), 64 x 3 x 3 rows leave room for 227 pixels per
// block, so the 20 x 21 plane is cut into blocks of 224 and 196 that end mid-row; two
// images. The 1x1 path too (129 output channels).
TEST(Conv2d, BlocksThatCutRowsAndChannels) {
  check_conv({2, 64, 20, 21, 130, 3, 3, {1, 1}, {1, 1}});
  check_conv({1, 70, 17, 19, 129, 1, 1});
}

TEST(Conv2d, NonContiguousInputAndSixteenBitTypes) {
  Tensor xt = randn({2, 3, 9, 8}, 5).transpose(2, 3);  // (2, 3, 8, 9), strided
  Tensor w = randn({4, 3, 3, 3}, 6), b = randn({4}, 7);
  ConvCase k{2, 3, 8, 9, 4, 3, 3, {2, 1}, {1, 1}};
  expect_close(conv2d(xt, w, b, k.stride, k.padding).to_float_vector(),
               conv_ref(k, xt.contiguous().to_float_vector(), w.to_float_vector(), b.to_float_vector()), 1e-4,
               "transposed input");
  for (DType dt : {DType::bf16, DType::f16}) {
    check_conv({2, 3, 7, 9, 5, 3, 3, {1, 1}, {1, 1}}, dt);
    check_conv({1, 4, 6, 6, 4, 3, 3, {1, 1}, {1, 1}, {1, 1}, 4}, dt);
  }
}

TEST(Conv2d, EmptyShapes) {
  EXPECT_EQ(conv2d(randn({0, 3, 5, 5}, 1), randn({2, 3, 3, 3}, 2)).shape(), (Shape{0, 2, 3, 3}));
  // No input channels: a sum of nothing, plus the bias.
  Tensor y = conv2d(empty({1, 0, 4, 4}), empty({2, 0, 3, 3}), from_host({1.5f, -2.0f}, {2}));
  EXPECT_EQ(y.shape(), (Shape{1, 2, 2, 2}));
  EXPECT_EQ(y.to_float_vector(), (std::vector<float>{1.5f, 1.5f, 1.5f, 1.5f, -2, -2, -2, -2}));
}

TEST(Conv2d, EachShapeRunsItsKernelWithItsFlops) {
  Tensor x = randn({1, 8, 10, 10}, 1);
  auto one = [](auto f) {
    auto ks = kernels_of(f);
    EXPECT_EQ(ks.size(), 1u);
    return ks.empty() ? prof::TraceEvent() : ks[0];
  };
  Tensor w3 = randn({16, 8, 3, 3}, 2), w1 = randn({16, 8, 1, 1}, 3), wd = randn({8, 1, 3, 3}, 4);
  prof::TraceEvent k = one([&] { conv2d(x, w3, {}, {1, 1}, {1, 1}); });
  EXPECT_EQ(k.name, "conv2d_f32");
  EXPECT_EQ(k.flops, 2 * 16 * 100 * 72);
  EXPECT_EQ(k.bytes, (x.numel() + w3.numel() + 16 * 100) * 4);
  EXPECT_EQ(one([&] { conv2d(x, w1); }).name, "conv2d_1x1_f32");
  EXPECT_EQ(one([&] { conv2d(x, w1, {}, {2, 2}); }).name, "conv2d_f32");
  k = one([&] { conv2d(x, wd, {}, {1, 1}, {1, 1}, {1, 1}, 8); });
  EXPECT_EQ(k.name, "conv2d_depthwise_f32");
  EXPECT_EQ(k.flops, 2 * 8 * 100 * 9);
  k = one([&] { max_pool2d_with_indices(x, {3, 3}, {2, 2}, {1, 1}); });
  EXPECT_EQ(k.name, "max_pool2d_f32");
  EXPECT_EQ(k.bytes, x.nbytes() + 8 * 25 * (4 + 8));  // values and i64 indices
}

// An activation in the kernel's epilogue: the same values as the convolution followed by
// the elementwise op, in one launch named for both; for every kernel (im2col, 1x1,
// depthwise), with and without a bias, and for bf16 (the activation then its own op).
TEST(Conv2d, FusedActivationEqualsTheOpAfterIt) {
  Tensor x = randn({2, 8, 9, 9}, 1);
  Tensor w3 = randn({16, 8, 3, 3}, 2), w1 = randn({16, 8, 1, 1}, 3), wd = randn({8, 1, 3, 3}, 4);
  Tensor b16 = randn({16}, 5), b8 = randn({8}, 6);
  struct K {
    const char* base;
    Tensor w, b;
    Size2 padding;
    int64_t groups;
  };
  const std::vector<K> kernels = {{"conv2d", w3, b16, {1, 1}, 1}, {"conv2d_1x1", w1, {}, {0, 0}, 1},
                                  {"conv2d_depthwise", wd, b8, {1, 1}, 8}};
  for (Activation act : {Activation::relu, Activation::relu6, Activation::hardswish, Activation::silu})
    for (const K& k : kernels) {
      std::string what = fmt::format("{} + {}", k.base, cpu_kernels::activation_name(act));
      Tensor fused;
      auto ks = kernels_of([&] { fused = conv2d(x * 4.0, k.w, k.b, {1, 1}, k.padding, {1, 1}, k.groups, act); });
      ASSERT_EQ(ks.size(), 2u) << what;  // the scaling mul, then one convolution
      EXPECT_EQ(ks[1].name, fmt::format("{}_{}_f32", k.base, cpu_kernels::activation_name(act))) << what;
      Tensor want = activation(conv2d(x * 4.0, k.w, k.b, {1, 1}, k.padding, {1, 1}, k.groups), act);
      std::vector<float> got_v = fused.to_float_vector(), want_v = want.to_float_vector();
      ASSERT_EQ(got_v.size(), want_v.size()) << what;
      for (size_t i = 0; i < got_v.size(); ++i) ASSERT_EQ(got_v[i], want_v[i]) << what << " at " << i;
    }
  // A residual added before the activation (ResNet's skip connection): the same as the add
  // then the activation, named for all three; a strided residual is read as its values.
  Tensor r = randn({2, 16, 9, 9}, 7), rt = randn({2, 16, 9, 9}, 8).transpose(2, 3);
  for (const Tensor* res : {&r, &rt}) {
    Tensor fused;
    auto ks = kernels_of([&] { fused = conv2d(x, w1, b16, {1, 1}, {0, 0}, {1, 1}, 1, Activation::relu, *res); });
    ASSERT_FALSE(ks.empty());
    EXPECT_EQ(ks.back().name, "conv2d_1x1_add_relu_f32");
    EXPECT_EQ(fused.to_float_vector(), relu(add(conv2d(x, w1, b16), *res)).to_float_vector());
  }
  EXPECT_EQ(conv2d(x, wd, {}, {1, 1}, {1, 1}, {1, 1}, 8, Activation::none, randn({2, 8, 9, 9}, 9)).shape(),
            (Shape{2, 8, 9, 9}));
  EXPECT_EQ(error_of([&] { conv2d(x, w1, {}, {1, 1}, {0, 0}, {1, 1}, 1, Activation::relu, randn({2, 16, 9, 8}, 9)); }),
            "[conv2d] residual has shape (2, 16, 9, 8); it must be the output's, (2, 16, 9, 9)");
  // 16-bit: computed in f32 as before, the activation its own op on the rounded result.
  Tensor xb = x.to(DType::bf16), wb = w3.to(DType::bf16);
  Tensor yb = conv2d(xb, wb, {}, {1, 1}, {1, 1}, {1, 1}, 1, Activation::hardswish);
  EXPECT_EQ(yb.dtype(), DType::bf16);
  EXPECT_EQ(yb.to_float_vector(), hardswish(conv2d(xb, wb, {}, {1, 1}, {1, 1})).to_float_vector());
  // The unfused path checks a residual as the kernel does (add() alone would broadcast it).
  EXPECT_EQ(error_of([&] {
              conv2d(xb, wb, {}, {1, 1}, {1, 1}, {1, 1}, 1, Activation::relu, randn({16, 9, 9}, 9).to(DType::bf16));
            }),
            "[conv2d] residual has shape (16, 9, 9); it must be the output's, (2, 16, 9, 9)");
}

TEST(Conv2d, BadInput) {
  Tensor x = randn({1, 4, 6, 6}, 1), w = randn({2, 4, 3, 3}, 2);
  EXPECT_EQ(error_of([&] { conv2d(randn({4, 6, 6}, 1), w); }), "[conv2d] x has shape (4, 6, 6); it must be (N, C, H, W)");
  EXPECT_EQ(error_of([&] { conv2d(x, randn({2, 3, 3, 3}, 2)); }),
            "[conv2d] weight has shape (2, 3, 3, 3): its dim 1 must be C / groups = 4 / 1 = 4");
  EXPECT_EQ(error_of([&] { conv2d(x, randn({3, 2, 3, 3}, 2), {}, {1, 1}, {0, 0}, {1, 1}, 2); }),
            "[conv2d] groups 2 must divide x's 4 channels and weight's 3 output channels");
  EXPECT_EQ(error_of([&] { conv2d(x, w, randn({3}, 3)); }), "[conv2d] bias has shape (3); it must be (2), one per output channel");
  EXPECT_EQ(error_of([&] { conv2d(x, w, {}, {0, 1}); }), "[conv2d] stride (0, 1) must be at least 1");
  EXPECT_EQ(error_of([&] { conv2d(x, w, {}, {1, 1}, {-1, 0}); }), "[conv2d] padding (-1, 0) must not be negative");
  EXPECT_EQ(error_of([&] { conv2d(x, randn({2, 4, 7, 3}, 2)); }),
            "[conv2d] the window 7x3 (dilation 1, 1) is larger than the padded input 6x6 (padding 0, 0)");
  EXPECT_EQ(error_of([&] { conv2d(x, w.to(DType::bf16)); }),
            "[conv2d] weight has dtype bf16 but x has dtype f32 (convert with .to())");
  EXPECT_EQ(error_of([&] { conv2d(x.to(DType::i32), w.to(DType::i32)); }),
            "[conv2d] x has dtype i32, not a floating type (f32, bf16, f16)");
  EXPECT_EQ(error_of([&] { conv2d(x, Tensor()); }), "[conv2d] weight is undefined (default-constructed)");
}

// ---- max_pool2d ----

namespace {

struct PoolCase {
  int64_t n, c, h, w;
  Size2 kernel, stride, padding{0, 0}, dilation{1, 1};
  bool ceil_mode = false;
};

// Each window's maximum and the first position holding it (the values are distinct).
void pool_ref(const PoolCase& k, const std::vector<float>& x, int64_t oh, int64_t ow, std::vector<float>& y,
              std::vector<int64_t>& idx) {
  for (int64_t p = 0; p < k.n * k.c; ++p)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        float best = -std::numeric_limits<float>::infinity();
        int64_t at = -1;
        for (int64_t a = 0; a < k.kernel[0]; ++a)
          for (int64_t e = 0; e < k.kernel[1]; ++e) {
            int64_t iy = i * k.stride[0] - k.padding[0] + a * k.dilation[0];
            int64_t ix = j * k.stride[1] - k.padding[1] + e * k.dilation[1];
            if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
            float v = x[size_t(p * k.h * k.w + iy * k.w + ix)];
            if (at < 0 || v > best) best = v, at = iy * k.w + ix;
          }
        y.push_back(best);
        idx.push_back(at);
      }
}

}  // namespace

TEST(MaxPool2d, MatchesTheDefinition) {
  std::vector<PoolCase> cases = {
      {1, 3, 12, 12, {3, 3}, {2, 2}, {1, 1}},                 // resnet's stem pool
      {2, 2, 7, 9, {2, 2}, {2, 2}},                           // odd sizes drop the last row/column
      {2, 2, 7, 9, {2, 2}, {2, 2}, {0, 0}, {1, 1}, true},     // ceil_mode keeps them
      {1, 2, 9, 8, {3, 2}, {2, 3}, {1, 1}, {2, 1}},           // dilation, unequal window
      {1, 1, 5, 5, {3, 3}, {3, 3}, {1, 1}, {1, 1}, true},     // ceil_mode's last window starts in the input
      // planes the kernel pools in several bands of output rows (pool.cpp's PoolBands)
      {1, 1, 700, 700, {3, 3}, {1, 1}, {1, 1}},
      {1, 2, 611, 650, {3, 2}, {2, 3}, {1, 1}, {2, 1}, true},
  };
  for (const PoolCase& k : cases) {
    for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
      Tensor x = randn({k.n, k.c, k.h, k.w}, 9, dt);
      auto [y, idx] = max_pool2d_with_indices(x, k.kernel, k.stride, k.padding, k.dilation, k.ceil_mode);
      int64_t oh = y.shape()[2], ow = y.shape()[3];
      std::vector<float> want;
      std::vector<int64_t> want_idx;
      pool_ref(k, x.to_float_vector(), oh, ow, want, want_idx);
      std::string what = fmt::format("{}x{} kernel {}x{} stride {}x{} ceil {} {}", k.h, k.w, k.kernel[0], k.kernel[1],
                                     k.stride[0], k.stride[1], k.ceil_mode, dtype_name(dt));
      // The sizes, independently: torch's formula for these cases.
      int64_t span_h = k.h + 2 * k.padding[0] - k.dilation[0] * (k.kernel[0] - 1) - 1;
      int64_t expect_oh = (span_h + (k.ceil_mode ? k.stride[0] - 1 : 0)) / k.stride[0] + 1;
      if (k.ceil_mode && (expect_oh - 1) * k.stride[0] >= k.h + k.padding[0]) --expect_oh;
      EXPECT_EQ(oh, expect_oh) << what;
      EXPECT_EQ(y.dtype(), dt);
      EXPECT_EQ(idx.dtype(), DType::i64);
      EXPECT_EQ(y.to_float_vector(), want) << what;  // maxima are copied, not recomputed
      // Ties in 16-bit values may pick another position of the same value.
      if (dt == DType::f32) {
        EXPECT_EQ(idx.to_vector<int64_t>(), want_idx) << what;
      }
      EXPECT_EQ(max_pool2d(x, k.kernel, k.stride, k.padding, k.dilation, k.ceil_mode).to_float_vector(), want) << what;
    }
  }
}

TEST(MaxPool2d, NanWinsAllMinusInfinityAndNonContiguousInput) {
  std::vector<float> v = {1, 5, 2, 0, NAN, 3, 4, -1, 7, 8, 9, 6};
  auto [y, idx] = max_pool2d_with_indices(from_host(v, {1, 1, 3, 4}), {3, 2}, {1, 2});
  std::vector<float> got = y.to_float_vector();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(std::isnan(got[0])) << got[0];  // torch propagates NaN
  EXPECT_EQ(got[1], 9.0f);
  EXPECT_EQ(idx.to_vector<int64_t>(), (std::vector<int64_t>{4, 10}));
  // Nothing beats -inf: each index is the window's first position inside the input, as torch's.
  auto [yi, ii] = max_pool2d_with_indices(full({1, 1, 4, 4}, -INFINITY), {3, 3}, {2, 2}, {1, 1});
  EXPECT_EQ(yi.to_float_vector(), std::vector<float>(4, -INFINITY));
  EXPECT_EQ(ii.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 4, 5}));
  Tensor xt = randn({1, 2, 6, 5}, 3).transpose(2, 3);
  EXPECT_EQ(max_pool2d(xt, {2, 2}, {2, 2}).to_float_vector(),
            max_pool2d(xt.contiguous(), {2, 2}, {2, 2}).to_float_vector());
}

TEST(MaxPool2d, BadInput) {
  Tensor x = randn({1, 2, 6, 6}, 1);
  EXPECT_EQ(error_of([&] { max_pool2d(x, {3, 3}, {1, 1}, {2, 1}); }),
            "[max_pool2d] padding (2, 1) must be at most half the kernel (3, 3)");
  EXPECT_EQ(error_of([&] { max_pool2d(x, {0, 3}, {1, 1}); }), "[max_pool2d] kernel (0, 3) must be at least 1");
  EXPECT_EQ(error_of([&] { max_pool2d(x, {3, 3}, {1, 0}); }), "[max_pool2d] stride (1, 0) must be at least 1");
  EXPECT_EQ(error_of([&] { max_pool2d(x, {7, 2}, {1, 1}); }),
            "[max_pool2d] the window 7x2 (dilation 1, 1) is larger than the padded input 6x6 (padding 0, 0)");
  EXPECT_EQ(error_of([&] { max_pool2d(randn({2, 6, 6}, 1), {2, 2}, {2, 2}); }),
            "[max_pool2d] x has shape (2, 6, 6); it must be (N, C, H, W)");
}
