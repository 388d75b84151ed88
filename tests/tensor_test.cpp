// Tensor basics: views (view, reshape, transpose, permute, slice, expand, squeeze,
// unsqueeze) and what they share, copies (contiguous, clone, to), host transfers,
// creation, seeded random numbers, and the errors of each.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <string>

#include "opscope/core/error.h"
#include "opscope/ops/ops.h"
#include "opscope/runtime/cpu_device.h"
#include "opscope/runtime/tensor.h"

using namespace opscope;

namespace {

// 0, 1, 2, ... as f32 of `shape`.
Tensor iota(const Shape& shape, DType dt = DType::f32) {
  std::vector<float> v(size_t(shape.numel()));
  std::iota(v.begin(), v.end(), 0.f);
  return from_host(v, shape, dt);
}

std::vector<float> iota_values(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0.f);
  return v;
}

void expect_error(const std::function<void()>& f, const std::string& prefix, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "expected an error starting with " << prefix;
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_EQ(m.rfind(prefix, 0), 0u) << m;
    for (const auto& p : parts) EXPECT_NE(m.find(p), std::string::npos) << "missing '" << p << "' in: " << m;
  }
}

bool shares(const Tensor& a, const Tensor& b) { return a.storage().get() == b.storage().get(); }

uint16_t bits(bf16_t v) { return v.bits; }
uint16_t bits(f16_t v) { return std::bit_cast<uint16_t>(v); }

// ---- views ----

TEST(Tensor, Basics) {
  Tensor t = iota({2, 3, 4});
  EXPECT_TRUE(t.defined());
  EXPECT_FALSE(Tensor().defined());
  EXPECT_EQ(t.ndim(), 3);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.dim(-1), 4);
  EXPECT_EQ(t.dim(0), 2);
  EXPECT_EQ(t.strides(), (Strides{12, 4, 1}));
  EXPECT_EQ(t.nbytes(), 96);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.str(), "Tensor(shape=(2, 3, 4), dtype=f32, device=" + t.device().name() + ")");
  EXPECT_EQ(Tensor().str(), "Tensor(undefined)");
  expect_error([&] { t.dim(3); }, "[dim]", {"3"});
  expect_error([&] { t.dim(-4); }, "[dim]", {"-4"});
}

TEST(Tensor, View) {
  Tensor t = iota({2, 3, 4});
  Tensor v = t.view({6, 4});
  EXPECT_TRUE(shares(v, t));
  EXPECT_EQ(v.shape(), (Shape{6, 4}));
  EXPECT_EQ(v.to_float_vector(), iota_values(24));
  EXPECT_EQ(t.view({-1}).shape(), (Shape{24}));
  EXPECT_EQ(t.view({4, -1, 3}).shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(t.view({1, 24, 1}).strides()[1], 1);
  // a view of a view that is still expressible: split a transposed dim
  Tensor tt = t.transpose(0, 2);  // (4, 3, 2)
  Tensor split = tt.view({2, 2, 3, 2});
  EXPECT_TRUE(shares(split, t));
  EXPECT_EQ(split.to_float_vector(), tt.to_float_vector());
  expect_error([&] { tt.view({24}); }, "[view]", {"(4, 3, 2)", "(24)", "reshape"});
  expect_error([&] { t.view({5, 5}); }, "[view]", {"(2, 3, 4)", "(5, 5)"});
  expect_error([&] { t.view({-1, -1}); }, "[view]", {"-1"});
  expect_error([&] { t.view({7, -1}); }, "[view]", {"(7, -1)"});
  expect_error([&] { t.view({-2, 12}); }, "[view]", {"-2"});
}

// Scalars view as any all-ones shape and back.
TEST(Tensor, ViewOfZeroDim) {
  Tensor s = full({}, 3.0);
  EXPECT_EQ(s.ndim(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.view({1}).shape(), (Shape{1}));
  EXPECT_EQ(s.view({1, 1}).item(), 3.f);
  EXPECT_EQ(full({1}, 2.0).view({}).ndim(), 0);
  EXPECT_EQ(s.reshape({1, 1}).item(), 3.f);
  EXPECT_TRUE(shares(s.reshape({1}), s));  // a view, not a copy
}

// An empty tensor whose last two dims are transposed (the transposed copy's form) copies to
// an empty contiguous one: the copy kernel divided by the empty plane count (SIGFPE).
TEST(Tensor, ContiguousOfAnEmptyTransposedView) {
  for (const Shape& s : {Shape{0, 8, 9}, Shape{2, 0, 9}, Shape{3, 4, 0}}) {
    Tensor t = zeros(s).transpose(1, 2);
    Tensor c = t.contiguous();
    EXPECT_EQ(c.shape(), t.shape());
    EXPECT_EQ(c.numel(), 0);
  }
  Tensor p = zeros({0, 2, 4, 9}).permute({2, 3, 0, 1});  // col2im's rows of an empty batch
  EXPECT_EQ(p.contiguous().shape(), (Shape{4, 9, 0, 2}));
}

TEST(Tensor, Reshape) {
  Tensor t = iota({2, 3, 4});
  Tensor r = t.reshape({3, -1});
  EXPECT_EQ(r.shape(), (Shape{3, 8}));
  EXPECT_TRUE(shares(r, t));  // viewable: no copy
  // not viewable: a contiguous copy with the transposed order
  Tensor tt = t.transpose(1, 2);  // (2, 4, 3)
  Tensor c = tt.reshape({-1});
  EXPECT_FALSE(shares(c, t));
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.to_float_vector(), tt.to_float_vector());
  std::vector<float> want;
  for (int a = 0; a < 2; ++a)
    for (int k = 0; k < 4; ++k)
      for (int j = 0; j < 3; ++j) want.push_back(float(a * 12 + j * 4 + k));
  EXPECT_EQ(c.to_float_vector(), want);
  EXPECT_EQ(t.flatten().shape(), (Shape{24}));
  // empty tensors reshape freely, but -1 is ambiguous there
  EXPECT_EQ(zeros({0, 4}).reshape({4, 0, 2}).shape(), (Shape{4, 0, 2}));
  expect_error([&] { zeros({0, 4}).reshape({-1, 0}); }, "[reshape]", {"(0, 4)"});
  expect_error([&] { t.reshape({5, -1}); }, "[reshape]", {"(2, 3, 4)", "(5, -1)"});
  expect_error([&] { t.reshape({25}); }, "[reshape]", {"24", "25"});
  expect_error([&] { Tensor().reshape({1}); }, "[reshape]", {"undefined"});
}

TEST(Tensor, TransposeAndPermute) {
  Tensor t = iota({2, 3});
  Tensor tt = t.transpose(0, 1);
  EXPECT_TRUE(shares(tt, t));
  EXPECT_EQ(tt.shape(), (Shape{3, 2}));
  EXPECT_EQ(tt.strides(), (Strides{1, 3}));
  EXPECT_FALSE(tt.is_contiguous());
  EXPECT_EQ(tt.to_float_vector(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(t.transpose(-1, -2).to_float_vector(), tt.to_float_vector());
  Tensor u = iota({2, 3, 4});
  Tensor p = u.permute({2, 0, 1});  // p[k][a][j] = u[a][j][k]
  EXPECT_EQ(p.shape(), (Shape{4, 2, 3}));
  std::vector<float> pv = p.to_float_vector();
  for (int k = 0; k < 4; ++k)
    for (int a = 0; a < 2; ++a)
      for (int j = 0; j < 3; ++j) EXPECT_EQ(pv[size_t(k * 6 + a * 3 + j)], float(a * 12 + j * 4 + k));
  EXPECT_EQ(u.permute({-1, 0, 1}).strides(), p.strides());
  expect_error([&] { u.permute({0, 1}); }, "[permute]", {"2 entries", "(2, 3, 4)"});
  expect_error([&] { u.permute({0, 1, 1}); }, "[permute]", {"twice"});
  expect_error([&] { u.permute({0, 1, 3}); }, "[permute]", {"3"});
  expect_error([&] { t.transpose(0, 2); }, "[transpose]", {"2"});
}

TEST(Tensor, Slice) {
  Tensor t = iota({10});
  EXPECT_EQ(t.slice(0, 2, 5).to_float_vector(), (std::vector<float>{2, 3, 4}));
  EXPECT_EQ(t.slice(0, -3, 10).to_float_vector(), (std::vector<float>{7, 8, 9}));
  EXPECT_EQ(t.slice(0, 1, -1, 3).to_float_vector(), (std::vector<float>{1, 4, 7}));
  EXPECT_EQ(t.slice(0, 0, 10, 4).to_float_vector(), (std::vector<float>{0, 4, 8}));
  EXPECT_EQ(t.slice(0, -100, 100).numel(), 10);  // clamped
  EXPECT_EQ(t.slice(0, 6, 3).numel(), 0);        // empty
  EXPECT_EQ(t.slice(0, 10, 20).numel(), 0);
  Tensor s = t.slice(0, 1, 9, 2);
  EXPECT_TRUE(shares(s, t));
  EXPECT_EQ(s.offset(), 1);
  EXPECT_EQ(s.strides()[0], 2);
  // slices of slices, on an inner axis
  Tensor m = iota({4, 6});
  Tensor ms = m.slice(1, 1, 6, 2).slice(0, -2, 4);  // rows 2, 3; cols 1, 3, 5
  EXPECT_EQ(ms.shape(), (Shape{2, 3}));
  EXPECT_EQ(ms.to_float_vector(), (std::vector<float>{13, 15, 17, 19, 21, 23}));
  expect_error([&] { t.slice(0, 0, 5, 0); }, "[slice]", {"step", "0"});
  expect_error([&] { t.slice(0, 0, 5, -1); }, "[slice]", {"-1"});
  expect_error([&] { t.slice(1, 0, 5); }, "[slice]", {"axis 1"});
}

TEST(Tensor, Expand) {
  Tensor r = iota({1, 3});
  Tensor e = r.expand({4, 3});
  EXPECT_TRUE(shares(e, r));
  EXPECT_EQ(e.strides(), (Strides{0, 1}));
  EXPECT_EQ(e.to_float_vector(), (std::vector<float>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(r.expand({2, -1, 3}).shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(r.expand({2, 5, 3}).strides(), (Strides{0, 0, 1}));
  EXPECT_EQ(iota({3, 1}).expand({3, 2}).to_float_vector(), (std::vector<float>{0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(r.expand({0, 3}).numel(), 0);
  expect_error([&] { r.expand({3}); }, "[expand]", {"(1, 3)", "(3)"});
  expect_error([&] { r.expand({4, 4}); }, "[expand]", {"(1, 3)", "(4, 4)"});
  expect_error([&] { r.expand({-1, 2, 3}); }, "[expand]", {"-1"});
}

// A negative size other than -1 is not a shape.
TEST(Tensor, ExpandRejectsNegativeSizes) {
  Tensor r = iota({1, 3});
  expect_error([&] { r.expand({-2, 3}); }, "[expand]", {"-2"});
}

TEST(Tensor, SqueezeUnsqueeze) {
  Tensor t = iota({2, 3});
  EXPECT_EQ(t.unsqueeze(0).shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(t.unsqueeze(1).shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(t.unsqueeze(-1).shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(t.unsqueeze(2).shape(), (Shape{2, 3, 1}));
  EXPECT_TRUE(t.unsqueeze(1).is_contiguous());
  EXPECT_TRUE(shares(t.unsqueeze(0), t));
  EXPECT_EQ(t.unsqueeze(1).squeeze(1).shape(), t.shape());
  EXPECT_EQ(t.unsqueeze(-1).squeeze(-1).to_float_vector(), t.to_float_vector());
  // unsqueeze of a transposed view keeps the element order
  Tensor u = t.transpose(0, 1).unsqueeze(1);
  EXPECT_EQ(u.shape(), (Shape{3, 1, 2}));
  EXPECT_EQ(u.to_float_vector(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(full({}, 1.0).unsqueeze(0).shape(), (Shape{1}));
  EXPECT_EQ(full({1}, 1.0).squeeze(0).ndim(), 0);
  expect_error([&] { t.squeeze(0); }, "[squeeze]", {"(2, 3)", "2"});
  expect_error([&] { t.unsqueeze(3); }, "[unsqueeze]", {"3"});
}

// ---- copies ----

TEST(Tensor, ContiguousAndClone) {
  Tensor t = iota({3, 4});
  EXPECT_TRUE(shares(t.contiguous(), t));  // already contiguous: itself
  Tensor tt = t.transpose(0, 1);
  Tensor c = tt.contiguous();
  EXPECT_FALSE(shares(c, t));
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.strides(), (Strides{3, 1}));
  EXPECT_EQ(c.to_float_vector(), tt.to_float_vector());
  Tensor k = t.clone();
  EXPECT_FALSE(shares(k, t));
  EXPECT_EQ(k.to_float_vector(), t.to_float_vector());
  Tensor ks = t.slice(1, 1, 4, 2).clone();  // strided clone
  EXPECT_EQ(ks.to_float_vector(), (std::vector<float>{1, 3, 5, 7, 9, 11}));
  Tensor e = iota({1, 4}).expand({3, 4}).contiguous();
  EXPECT_EQ(e.strides(), (Strides{4, 1}));
  EXPECT_EQ(e.to_float_vector(), (std::vector<float>{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}));
  expect_error([&] { Tensor().contiguous(); }, "[contiguous]", {"undefined"});
  expect_error([&] { Tensor().clone(); }, "[clone]", {"undefined"});
}

TEST(Tensor, ToBf16RoundsToNearestEven) {
  std::vector<float> v = {1.f, 3.14159265f, 1.f / 3, 1.00390625f /* 1 + 2^-8: tie, stays */,
                          1.01171875f /* 1 + 3*2^-8: tie, up to even */, -2.5f, 3.4e38f, 1e-40f};
  Tensor b = from_host(v, {int64_t(v.size())}).to(DType::bf16);
  EXPECT_EQ(b.dtype(), DType::bf16);
  std::vector<bf16_t> got = b.to_vector<bf16_t>();
  std::vector<uint16_t> want = {0x3f80, 0x4049, 0x3eab, 0x3f80, 0x3f82, 0xc020, 0x7f80, 0x0001};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(bits(got[i]), want[i]) << v[i];
  std::vector<float> back = b.to(DType::f32).to_float_vector();
  EXPECT_EQ(back[1], 3.140625f);
  EXPECT_EQ(back[2], 0.333984375f);
  EXPECT_EQ(back[4], 1.015625f);
  EXPECT_EQ(back[6], std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(from_host({NAN}, {1}).to(DType::bf16).item()));
}

TEST(Tensor, ToF16) {
  std::vector<float> v = {0.1f, 65504.f, 65520.f, 1e-8f, 3e-8f, -1.5f};
  Tensor h = from_host(v, {6}).to(DType::f16);
  std::vector<f16_t> got = h.to_vector<f16_t>();
  std::vector<uint16_t> want = {0x2e66, 0x7bff, 0x7c00, 0x0000, 0x0001, 0xbe00};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(bits(got[i]), want[i]) << v[i];
  EXPECT_FLOAT_EQ(h.to_float_vector()[0], 0.0999755859375f);
}

// to_f32 / from_f32 convert f16 on bit patterns (so that loops vectorize); they must give
// _Float16's own casts: every half up, and on the way down every rounding boundary (the
// midpoint between neighbouring halves and the floats either side of it) and a sweep.
TEST(Tensor, F16ConversionsMatchFloat16Casts) {
  auto same = [](f16_t a, f16_t b) {
    uint16_t x = std::bit_cast<uint16_t>(a), y = std::bit_cast<uint16_t>(b);
    bool nan_x = (x & 0x7fff) > 0x7c00, nan_y = (y & 0x7fff) > 0x7c00;
    return nan_x || nan_y ? nan_x && nan_y : x == y;
  };
  int bad = 0;
  auto check_down = [&](float f) {
    if (!same(from_f32<f16_t>(f), f16_t(f)) && ++bad < 5) ADD_FAILURE() << "from_f32 " << std::hexfloat << f;
  };
  for (uint32_t h = 0; h < 0x10000; ++h) {
    f16_t v = std::bit_cast<f16_t>(uint16_t(h));
    float up = to_f32(v), want = float(v);
    bool ok = std::isnan(want) ? std::isnan(up) : std::bit_cast<uint32_t>(up) == std::bit_cast<uint32_t>(want);
    if (!ok && ++bad < 5) ADD_FAILURE() << "to_f32 of f16 bits " << h;
    if ((h & 0x7fff) >= 0x7c00) continue;
    float next = float(std::bit_cast<f16_t>(uint16_t(h + 1)));
    float mid = want + (next - want) / 2;  // exact: one more bit than f16 has
    for (float f : {want, mid, std::nextafter(mid, -INFINITY), std::nextafter(mid, INFINITY)}) check_down(f);
  }
  for (uint64_t u = 0; u < (uint64_t(1) << 32); u += 4093) check_down(std::bit_cast<float>(uint32_t(u)));
  for (float f : {65504.f, 65519.996f, 65520.f, 1e30f, INFINITY, -INFINITY, NAN, -0.f, 1e-45f}) check_down(f);
  EXPECT_EQ(bad, 0);
}

// Copies out of transposed views take a blocked path (whole cache lines at a time); each
// element must land where the permutation says, for odd sizes (partial blocks), batched
// and permuted planes, bf16, casts, and elementwise ops reading a 3-d transposed operand.
TEST(Tensor, TransposedCopiesPutEveryElementInPlace) {
  struct Case {
    Shape shape;
    std::vector<int64_t> order;
  };
  for (const Case& c : std::vector<Case>{{{37, 53}, {1, 0}},
                                         {{130, 70}, {1, 0}},
                                         {{3, 70, 33}, {0, 2, 1}},
                                         {{4, 5, 6, 7}, {2, 0, 3, 1}},
                                         {{2, 3, 65, 17}, {1, 0, 3, 2}}}) {
    int64_t n = c.shape.numel();
    std::vector<float> host(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) host[size_t(i)] = float(i % 251) - 125.f;  // exact in bf16
    Shape out_shape;
    for (int64_t d : c.order) out_shape.push_back(c.shape[int(d)]);
    // want[j]: the element of host at the source index that out's j-th element comes from
    std::vector<float> want(static_cast<size_t>(n));
    Strides src = contiguous_strides(c.shape);
    for (int64_t j = 0; j < n; ++j) {
      int64_t rem = j, off = 0;
      for (int d = out_shape.size() - 1; d >= 0; --d) {
        off += (rem % out_shape[d]) * src[int(c.order[size_t(d)])];
        rem /= out_shape[d];
      }
      want[size_t(j)] = host[size_t(off)];
    }
    for (DType dt : {DType::f32, DType::bf16}) {
      Tensor x = from_host(host, c.shape, dt).permute(c.order);
      EXPECT_EQ(x.contiguous().to_float_vector(), want) << c.shape.str() << " " << dtype_name(dt);
      EXPECT_EQ(x.to(dt == DType::f32 ? DType::bf16 : DType::f32).to_float_vector(), want) << "cast " << c.shape.str();
      std::vector<float> twice = (x + x).to_float_vector();
      for (float& w : want) w *= 2;
      EXPECT_EQ(twice, want) << "add " << c.shape.str() << " " << dtype_name(dt);
      for (float& w : want) w /= 2;
    }
  }
}

TEST(Tensor, ToRoundTrips) {
  Tensor t = from_host({2.7f, -2.7f, 0.f, 100.f, -1e6f}, {5});
  EXPECT_TRUE(shares(t.to(DType::f32), t));  // same dtype: itself
  EXPECT_EQ(t.to(DType::i32).to_vector<int32_t>(), (std::vector<int32_t>{2, -2, 0, 100, -1000000}));  // truncates
  EXPECT_EQ(t.to(DType::i64).to_vector<int64_t>(), (std::vector<int64_t>{2, -2, 0, 100, -1000000}));
  EXPECT_EQ(t.to(DType::i32).to(DType::f32).to_float_vector(), (std::vector<float>{2, -2, 0, 100, -1e6f}));
  // exactly representable values survive every floating dtype
  std::vector<float> exact = {0.5f, -3.f, 96.f, 0.09375f};
  Tensor e = from_host(exact, {4});
  for (DType a : {DType::bf16, DType::f16})
    for (DType b : {DType::f32, DType::bf16, DType::f16})
      EXPECT_EQ(e.to(a).to(b).to(DType::f32).to_float_vector(), exact) << dtype_name(a) << " " << dtype_name(b);
  // int64 beyond 2^24 goes through unchanged
  Tensor big = from_host_i64({(int64_t(1) << 40) + 3, -7}, {2});
  EXPECT_EQ(big.to(DType::i64).to_vector<int64_t>()[0], (int64_t(1) << 40) + 3);
  EXPECT_EQ(big.to(DType::i32).to(DType::i64).to_vector<int64_t>()[1], -7);
  // a strided source converts through the strided path
  Tensor s = iota({4, 4}).transpose(0, 1).to(DType::bf16);
  EXPECT_EQ(s.to_float_vector(), iota({4, 4}).transpose(0, 1).to_float_vector());
  expect_error([&] { Tensor().to(DType::f16); }, "[to]", {"undefined"});
}

// ---- host access ----

TEST(Tensor, HostTransfers) {
  Tensor t = from_host({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(t.to_float_vector(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(t.transpose(0, 1).to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(t.slice(1, 1, 2).to_vector<float>(), (std::vector<float>{2, 5}));
  EXPECT_EQ(from_host({7, 8}, {2}, DType::i32).to_vector<int32_t>(), (std::vector<int32_t>{7, 8}));
  EXPECT_EQ(from_host_i64({-5, 9}, {2}).to_float_vector(), (std::vector<float>{-5, 9}));
  EXPECT_EQ(from_host({1.5f}, {}).item(), 1.5f);
  EXPECT_EQ(t.slice(0, 1, 2).slice(1, 2, 3).item(), 6.f);
  EXPECT_TRUE(from_host({}, {0}).to_float_vector().empty());
  EXPECT_TRUE(zeros({0}, DType::bf16).to_vector<bf16_t>().empty());
  expect_error([&] { from_host({1, 2, 3}, {2, 2}); }, "[from_host]", {"3 values", "(2, 2)"});
  expect_error([&] { from_host_i64({1}, {2}); }, "[from_host]", {"1 values", "(2)"});
  expect_error([&] { t.to_vector<int32_t>(); }, "[to_host]", {"i32", "f32"});
  expect_error([&] { t.item(); }, "[item]", {"6 elements", "(2, 3)"});
  expect_error([&] { Tensor().to_float_vector(); }, "[to_host]", {"undefined"});
  expect_error([&] { Tensor().item(); }, "[item]", {"undefined"});
}

// ---- creation ----

TEST(Tensor, Creation) {
  EXPECT_EQ(zeros({2, 2}).to_float_vector(), (std::vector<float>{0, 0, 0, 0}));
  EXPECT_EQ(ones({3}, DType::bf16).to_float_vector(), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(full({2}, -2.5, DType::f16).to_float_vector(), (std::vector<float>{-2.5f, -2.5f}));
  EXPECT_EQ(full({2}, 7.0, DType::i32).to_vector<int32_t>(), (std::vector<int32_t>{7, 7}));
  EXPECT_EQ(full({1}, 3e9, DType::i64).to_vector<int64_t>()[0], int64_t(3000000000));
  EXPECT_EQ(full({}, 4.0).item(), 4.f);
  EXPECT_EQ(empty({3, 5}, DType::f16).shape(), (Shape{3, 5}));
  EXPECT_EQ(empty({3, 5}, DType::f16).dtype(), DType::f16);
  EXPECT_EQ(zeros({0, 7}).numel(), 0);
  // a large fill crosses several work blocks
  std::vector<float> f = full({100001}, 0.25).to_float_vector();
  EXPECT_EQ(std::count(f.begin(), f.end(), 0.25f), 100001);
  expect_error([&] { empty({2, -1}); }, "[empty]", {"(2, -1)"});
  expect_error([&] { zeros({-3}); }, "[", {"(-3)"});
  expect_error([&] { zeros({1, 1, 1, 1, 1, 1, 1, 1, 1}); }, "[shape]", {"9"});
}

TEST(Tensor, Arange) {
  EXPECT_EQ(arange(0, 5).to_float_vector(), (std::vector<float>{0, 1, 2, 3, 4}));
  EXPECT_EQ(arange(0, 10, 3).to_float_vector(), (std::vector<float>{0, 3, 6, 9}));
  EXPECT_EQ(arange(5, 0, -2).to_float_vector(), (std::vector<float>{5, 3, 1}));
  EXPECT_EQ(arange(1, 1).numel(), 0);
  EXPECT_EQ(arange(3, 1).numel(), 0);
  EXPECT_EQ(arange(0, 1, 0.25).to_float_vector(), (std::vector<float>{0, 0.25f, 0.5f, 0.75f}));
  EXPECT_EQ(arange(0, 1, 0.1).numel(), 10);
  EXPECT_EQ(arange(-2, 2, 1, DType::i64).to_vector<int64_t>(), (std::vector<int64_t>{-2, -1, 0, 1}));
  EXPECT_EQ(arange(0, 4, 1, DType::bf16).to_float_vector(), (std::vector<float>{0, 1, 2, 3}));
  std::vector<float> big = arange(0, 20000).to_float_vector();
  ASSERT_EQ(big.size(), 20000u);
  for (size_t i = 0; i < big.size(); ++i) ASSERT_EQ(big[i], float(i));
  expect_error([&] { arange(0, 1, 0); }, "[arange]", {"step"});
}

// ---- random ----

TEST(Tensor, RandomIsReproducibleAndIndependentOfCores) {
  CpuDevice one(1), two(2);
  {
    Shape s{3, 33333};  // many work blocks, so two cores split them
    for (bool normal : {true, false}) {
      auto make = [&](uint64_t seed, Device* d) { return normal ? randn(s, seed, DType::f32, d) : rand(s, seed, DType::f32, d); };
      std::vector<float> a = make(42, &one).to_float_vector();
      std::vector<float> b = make(42, &two).to_float_vector();
      std::vector<float> c = make(42, &two).to_float_vector();
      std::vector<float> d = make(43, &two).to_float_vector();
      EXPECT_EQ(a, b) << (normal ? "randn" : "rand");
      EXPECT_EQ(b, c);
      EXPECT_NE(b, d);
      size_t equal = 0;
      for (size_t i = 0; i < b.size(); ++i) equal += b[i] == d[i];
      EXPECT_LT(equal, b.size() / 100) << "seeds 42 and 43 look alike";
    }
    // the same seed in bf16 is the f32 stream rounded
    std::vector<float> f = randn({1000}, 9, DType::f32, &two).to(DType::bf16).to_float_vector();
    std::vector<float> h = randn({1000}, 9, DType::bf16, &two).to_float_vector();
    EXPECT_EQ(f, h);
  }
  one.synchronize();
  two.synchronize();
}

TEST(Tensor, RandnMoments) {
  std::vector<float> v = randn({100000}, 7).to_float_vector();
  double m = 0, m2 = 0;
  for (float x : v) m += x;
  m /= double(v.size());
  for (float x : v) m2 += (x - m) * (x - m);
  double sd = std::sqrt(m2 / double(v.size() - 1));
  EXPECT_NEAR(m, 0.0, 0.015);  // 5 standard errors
  EXPECT_NEAR(sd, 1.0, 0.015);
  int tail = 0;
  for (float x : v) tail += std::fabs(x) > 3;
  EXPECT_NEAR(tail, 270, 100);  // P(|z| > 3) = 0.27%
  std::vector<float> w = randn({100000}, 8, DType::f32, nullptr, 5.f, 0.5f).to_float_vector();
  double mw = std::accumulate(w.begin(), w.end(), 0.0) / double(w.size());
  EXPECT_NEAR(mw, 5.0, 0.01);
}

TEST(Tensor, RandRange) {
  std::vector<float> v = rand({100000}, 3, DType::f32, nullptr, -2.f, 6.f).to_float_vector();
  double m = 0;
  for (float x : v) {
    ASSERT_GE(x, -2.f);
    ASSERT_LT(x, 6.f);
    m += x;
  }
  EXPECT_NEAR(m / double(v.size()), 2.0, 0.05);  // uniform on [-2, 6): mean 2, sd 2.3
  expect_error([&] { randn({2}, 1, DType::i32); }, "[randn]", {"i32"});
  expect_error([&] { rand({2}, 1, DType::i64); }, "[rand]", {"i64"});
}

}  // namespace
