// concat and embedding: values against host references, non-contiguous inputs, many
// inputs, bad input, and an out-of-range index that surfaces at synchronization.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "opscope/core/error.h"
#include "opscope/ops/indexing.h"
#include "opscope/ops/ops.h"
#include "opscope/runtime/cpu_device.h"

using namespace opscope;

namespace {

// Host concat of row-major values along `axis` (all shapes equal except there).
std::vector<float> concat_ref(const std::vector<Tensor>& xs, int axis) {
  const Shape& s0 = xs[0].shape();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= s0[d];
  for (int d = axis + 1; d < s0.size(); ++d) inner *= s0[d];
  std::vector<std::vector<float>> vals;
  for (const Tensor& x : xs) vals.push_back(x.to_float_vector());
  std::vector<float> out;
  for (int64_t o = 0; o < outer; ++o)
    for (size_t i = 0; i < xs.size(); ++i) {
      int64_t run = xs[i].shape()[axis] * inner;
      out.insert(out.end(), vals[i].begin() + o * run, vals[i].begin() + (o + 1) * run);
    }
  return out;
}

template <class F> void expect_error(F&& f, const std::string& prefix, const std::string& contains = "") {
  try {
    f();
    ADD_FAILURE() << "no error; expected " << prefix << " ... " << contains;
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind(prefix, 0), 0u) << msg;
    EXPECT_NE(msg.find(contains), std::string::npos) << msg;
  }
}

}  // namespace

TEST(Concat, AlongEachAxis) {
  Tensor a = randn({2, 3, 4}, 90), b = randn({2, 5, 4}, 91), c = randn({2, 1, 4}, 92);
  Tensor y = concat({a, b, c}, 1);
  EXPECT_EQ(y.shape(), (Shape{2, 9, 4}));
  EXPECT_EQ(y.to_float_vector(), concat_ref({a, b, c}, 1));
  Tensor d = randn({3, 3, 4}, 93);
  EXPECT_EQ(concat({a, d}, 0).to_float_vector(), concat_ref({a, d}, 0));
  Tensor e = randn({2, 3, 4097}, 94);
  Tensor z = concat({a, e}, -1);
  EXPECT_EQ(z.shape(), (Shape{2, 3, 4101}));
  EXPECT_EQ(z.to_float_vector(), concat_ref({a, e}, 2));
  EXPECT_EQ(concat({a}, 0).to_float_vector(), a.to_float_vector());
}

TEST(Concat, NonContiguousEmptyAndOtherDtypes) {
  Tensor a = randn({5, 3}, 95).transpose(0, 1);  // (3, 5), strided
  Tensor b = randn({3, 20}, 96).slice(1, 0, 20, 4);  // (3, 5), step 4
  Tensor c = randn({1, 5}, 97).expand({3, 5});  // stride-0 rows
  Tensor none = empty({3, 0});
  Tensor y = concat({a, none, b, c}, 1);
  EXPECT_EQ(y.shape(), (Shape{3, 15}));
  EXPECT_EQ(y.to_float_vector(), concat_ref({a.contiguous(), none, b.contiguous(), c.contiguous()}, 1));
  EXPECT_EQ(concat({a, b}, 0).to_float_vector(), concat_ref({a.contiguous(), b.contiguous()}, 0));
  for (DType dt : {DType::bf16, DType::f16, DType::i32}) {
    Tensor p = randn({2, 3}, 98).to(dt), q = randn({4, 3}, 99).to(dt);
    Tensor r = concat({p, q}, 0);
    EXPECT_EQ(r.dtype(), dt);
    EXPECT_EQ(r.to_float_vector(), concat_ref({p, q}, 0));
  }
  Tensor i = from_host_i64({1, 2, int64_t(1) << 40}, {3}), j = from_host_i64({-5}, {1});
  EXPECT_EQ(concat({i, j}, 0).to_vector<int64_t>(), (std::vector<int64_t>{1, 2, int64_t(1) << 40, -5}));
  EXPECT_EQ(concat({empty({0, 2}), empty({0, 2})}, 0).shape(), (Shape{0, 2}));
  // Bool: one byte an element (it was copied 8 bytes at a time: wrong values, and writes past
  // the output's end that the sanitizer build reports).
  Tensor t = from_host({1}, {1}).to(DType::b8), f = from_host({0, 1, 1, 0, 1}, {5}).to(DType::b8);
  Tensor ones3 = full({16}, 1.0, DType::b8).slice(0, 0, 3);
  Tensor into = concat({t, f, ones3}, 0);
  EXPECT_EQ(into.to_float_vector(), (std::vector<float>{1, 0, 1, 1, 0, 1, 1, 1, 1}));
  Tensor rows = concat({f.reshape({1, 5}), t.expand({1, 5})}, 0);  // strided bool input
  EXPECT_EQ(rows.to_float_vector(), (std::vector<float>{0, 1, 1, 0, 1, 1, 1, 1, 1, 1}));
}

TEST(Concat, ManyInputs) {
  // More inputs than one launch names: they go out in groups.
  std::vector<Tensor> xs;
  for (int i = 0; i < 19; ++i) xs.push_back(randn({2, i % 4 + 1}, 100 + uint64_t(i)));
  EXPECT_EQ(concat(xs, 1).to_float_vector(), concat_ref(xs, 1));
}

TEST(Concat, BadInput) {
  Tensor a = randn({2, 3}, 1);
  expect_error([] { concat({}, 0); }, "[concat]", "no tensors");
  expect_error([&] { concat({a, randn({2, 4}, 1)}, 0); }, "[concat]", "input 1 has shape (2, 4) but input 0 has (2, 3)");
  expect_error([&] { concat({a, randn({2, 3, 1}, 1)}, 0); }, "[concat]", "(2, 3, 1)");
  expect_error([&] { concat({a, a.to(DType::bf16)}, 0); }, "[concat]", "dtype bf16");
  expect_error([&] { concat({a, a}, 2); }, "[concat]", "out of range");
  expect_error([&] { concat({a, Tensor()}, 0); }, "[concat]", "undefined");
}

TEST(Embedding, GathersRows) {
  Tensor w = randn({10, 7}, 110);
  std::vector<float> wv = w.to_float_vector();
  std::vector<int64_t> ids = {3, 0, 9, 3, 5, 1};
  auto rows = [&](const std::vector<int64_t>& which) {
    std::vector<float> out;
    for (int64_t i : which) out.insert(out.end(), wv.begin() + i * 7, wv.begin() + (i + 1) * 7);
    return out;
  };
  Tensor y = embedding(w, from_host_i64(ids, {2, 3}));
  EXPECT_EQ(y.shape(), (Shape{2, 3, 7}));
  EXPECT_EQ(y.to_float_vector(), rows(ids));
  Tensor i32 = from_host({4, 4, 8}, {3}, DType::i32);
  EXPECT_EQ(embedding(w, i32).to_float_vector(), rows({4, 4, 8}));
  Tensor scalar = from_host_i64({6}, {});
  EXPECT_EQ(embedding(w, scalar).shape(), Shape{7});
  EXPECT_EQ(embedding(w, scalar).to_float_vector(), rows({6}));
  // Non-contiguous weight and indices.
  Tensor wt = randn({7, 10}, 111).transpose(0, 1);
  std::vector<float> wtv = wt.to_float_vector();
  Tensor idx = from_host_i64({2, 0, 1, 0, 9, 0}, {6}).slice(0, 0, 6, 2);  // 2, 1, 9
  std::vector<float> want;
  for (int64_t i : {2, 1, 9}) want.insert(want.end(), wtv.begin() + i * 7, wtv.begin() + (i + 1) * 7);
  EXPECT_EQ(embedding(wt, idx).to_float_vector(), want);
  // 16-bit tables copy rows exactly.
  Tensor wb = w.to(DType::bf16);
  EXPECT_EQ(embedding(wb, i32).to_float_vector(), embedding(w.to(DType::bf16).to(DType::f32), i32).to_float_vector());
  EXPECT_EQ(embedding(w, empty({0}, DType::i64)).shape(), (Shape{0, 7}));
}

TEST(Embedding, OutOfRangeIndexFailsAtSynchronize) {
  CpuDevice dev(2);  // its own device: the failed stream does not touch other tests
  {
    Tensor w = randn({8, 4}, 112, DType::f32, &dev);
    Tensor bad = from_host_i64({1, 8, 2}, {3}, &dev);
    Tensor y = embedding(w, bad);  // returns: the kernel has not run (or its error waits)
    expect_error([&] { y.to_float_vector(); }, "[embedding]", "index 8");
    expect_error([&] { embedding(w, bad).to_float_vector(); }, "[embedding]", "V = 8");
    Tensor neg = from_host_i64({-1}, {1}, &dev);
    expect_error([&] { embedding(w, neg).to_float_vector(); }, "[embedding]", "index -1");
    // The error was reported once; the stream works again.
    Tensor ok = embedding(w, from_host_i64({7}, {1}, &dev));
    EXPECT_EQ(ok.to_float_vector().size(), 4u);
  }
  dev.synchronize();
}

TEST(Embedding, BadInput) {
  Tensor w = randn({8, 4}, 113);
  expect_error([&] { embedding(w, from_host({1}, {1})); }, "[embedding]", "dtype f32");
  expect_error([&] { embedding(randn({8}, 1), from_host_i64({1}, {1})); }, "[embedding]", "shape (8)");
  expect_error([&] { embedding(w, from_host_i64(std::vector<int64_t>(1, 0), {1, 1, 1, 1, 1, 1, 1, 1})); },
               "[embedding]", "more than 8 dims");
}

// Bags of rows, each column's maximum and the first row that reached it; an empty bag 0 and
// row 0. The bags and rows are checked on the host: the kernel trusts them.
TEST(EmbeddingBagMax, EachColumnsMaximumAndItsFirstRow) {
  Tensor w = from_host({1, 5, 3, 2, 3, 7, 0, 9}, {4, 2});
  auto [out, argmax] = embedding_bag_max(w, from_host_i64({0, 1, 2, 3}, {4}), from_host_i64({0, 3, 3, 4}, {4}));
  EXPECT_EQ(out.to_float_vector(), (std::vector<float>{3, 7, 0, 0, 0, 9}));
  EXPECT_EQ(argmax.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 0, 0, 3, 3}));  // row 1 ties row 2: first wins
  expect_error([&] { embedding_bag_max(w, from_host_i64({0, 4}, {2}), from_host_i64({0, 2}, {2})); },
               "[embedding_bag_max]", "row 4 (position 1) is out of range for 4 rows");
  expect_error([&] { embedding_bag_max(w, from_host_i64({0, 1}, {2}), from_host_i64({0, 2, 1}, {3})); },
               "[embedding_bag_max]", "must run from 0 to the 2 rows, not 0 to 1");
  expect_error([&] { embedding_bag_max(w, from_host_i64({0, 1}, {2}), from_host_i64({0, 2, 1, 2}, {4})); },
               "[embedding_bag_max]", "starts decrease at bag 1: 2 then 1");
  expect_error([&] { embedding_bag_max(w.to(DType::bf16), from_host_i64({0}, {1}), from_host_i64({0, 1}, {2})); },
               "[embedding_bag_max]", "must be (V, D) f32");
}

// unique (torch.unique's sorted form): values ascending, each element's index into them,
// each value's count; NaNs last, each its own; empty input gives empty outputs.
TEST(Unique, ValuesInverseAndCounts) {
  Unique u = unique(from_host_i64({3, 1, 2, 3, 1, 7}, {2, 3}));
  EXPECT_EQ(u.values.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 7}));
  EXPECT_EQ(u.inverse.shape(), (Shape{2, 3}));
  EXPECT_EQ(u.inverse.to_vector<int64_t>(), (std::vector<int64_t>{2, 0, 1, 2, 0, 3}));
  EXPECT_EQ(u.counts.to_vector<int64_t>(), (std::vector<int64_t>{2, 1, 2, 1}));
  Unique f = unique(from_host({2.5f, NAN, -0.0f, 0.0f, NAN, -1e30f}, {6}));
  std::vector<float> v = f.values.to_float_vector();
  ASSERT_EQ(v.size(), 5u);
  EXPECT_EQ((std::vector<float>(v.begin(), v.begin() + 3)), (std::vector<float>{-1e30f, 0.0f, 2.5f}));
  EXPECT_TRUE(std::isnan(v[3]) && std::isnan(v[4]));
  EXPECT_EQ(f.counts.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 1, 1, 1}));
  EXPECT_EQ(f.inverse.to_vector<int64_t>(), (std::vector<int64_t>{2, 3, 1, 1, 4, 0}));
  Unique e = unique(empty({0, 3}));
  EXPECT_EQ(e.values.shape(), (Shape{0}));
  EXPECT_EQ(e.inverse.shape(), (Shape{0, 3}));
  EXPECT_EQ(e.counts.shape(), (Shape{0}));
  expect_error([] { unique(Tensor()); }, "[unique] ", "undefined");
}

// scatter_reduce: repeated indices reduce in order, NaN wins amax, an empty reduction
// without x's value starts from the dtype's limit, and bad input names the op.
TEST(ScatterReduce, ReducesRepeatsAndStartsFromTheIdentity) {
  Tensor x = from_host({1, 2, 3}, {3});
  Tensor idx = from_host_i64({0, 0, 2}, {3});
  Tensor src = from_host({4, NAN, -5}, {3});
  std::vector<float> amax = scatter_reduce(x, 0, idx, src, "amax").to_float_vector();
  EXPECT_TRUE(std::isnan(amax[0]));
  EXPECT_EQ(amax[1], 2);
  EXPECT_EQ(amax[2], 3);
  std::vector<float> mean = scatter_reduce(x, 0, idx, from_host({4, 7, -5}, {3}), "mean", false).to_float_vector();
  EXPECT_EQ(mean, (std::vector<float>{5.5f, 2, -5}));
  Tensor xi = from_host_i64({0, 0}, {2});
  std::vector<int64_t> amin =
      scatter_reduce(xi, 0, from_host_i64({1, 1}, {2}), from_host_i64({9, 7}, {2}), "amin", false).to_vector<int64_t>();
  EXPECT_EQ(amin, (std::vector<int64_t>{0, 7}));
  expect_error([&] { scatter_reduce(x, 0, idx, src, "max"); }, "[scatter_reduce]", "not one of sum, prod, mean");
  expect_error([&] { scatter_reduce(xi, 0, xi, xi, "mean"); }, "[scatter_reduce]", "integer means");
  expect_error([&] { scatter_reduce(x, 0, idx, xi, "sum"); }, "[scatter_reduce]", "src has dtype i64 but x has f32");
}

// bucketize: the first boundary >= x (> x with right), NaN past the end, errors named.
TEST(Bucketize, SearchesAsTorchAndNamesBadInput) {
  Tensor b = from_host({0, 1, 1, 3}, {4});
  Tensor x = from_host({-1, 0, 1, 2, 3, 4, NAN}, {7});
  EXPECT_EQ(bucketize(x, b).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1, 3, 3, 4, 4}));
  EXPECT_EQ(bucketize(x, b, true, true).to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 3, 3, 4, 4, 4}));
  expect_error([&] { bucketize(x, b.reshape({2, 2})); }, "[bucketize]", "boundaries must be 1-d");
  expect_error([&] { bucketize(x, b.to(DType::bf16)); }, "[bucketize]", "x has dtype f32 but boundaries bf16");
}
