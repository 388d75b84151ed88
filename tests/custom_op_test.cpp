// User-written kernels registered as ops.
#include <gtest/gtest.h>

#include "opscope/core/error.h"
#include "opscope/ops/custom.h"
#include "opscope/runtime/cpu_device.h"

using namespace opscope;

namespace {

// out[r, j] = in[r, j] * 2 + r: row-dependent so a wrong row split shows.
CustomOp make_scale_rows() {
  static CustomOp op = register_op({
      .name = "test.scale_rows",
      .infer =
          [](std::span<const Tensor> in) {
            if (in.size() != 1) throw std::invalid_argument("expects one input");
            if (in[0].dtype() != DType::f32) throw std::invalid_argument("expects f32");
            return OutputSpec{in[0].shape(), DType::f32};
          },
      .cpu =
          [](std::span<const KernelTensor> in, const KernelTensor& out, int64_t b, int64_t e) {
            int64_t n = out.row_size();
            for (int64_t r = b; r < e; ++r)
              for (int64_t j = 0; j < n; ++j) out.ptr<float>()[r * n + j] = in[0].ptr<float>()[r * n + j] * 2 + float(r);
          },
  });
  return op;
}

std::vector<float> iota(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = float(i);
  return v;
}

}  // namespace

TEST(CustomOp, RunsLikeABuiltinAcrossCores) {
  CpuDevice dev(2);
  CustomOp op = make_scale_rows();
  Tensor x = from_host(iota(3000 * 5), {3000, 5}, DType::f32, &dev);
  Tensor y = op({x});
  EXPECT_EQ(y.shape(), Shape({3000, 5}));
  auto v = y.to_float_vector();
  for (int64_t r = 0; r < 3000; ++r)
    for (int64_t j = 0; j < 5; ++j) ASSERT_EQ(v[size_t(r * 5 + j)], float(r * 5 + j) * 2 + float(r));
  // Also callable by name.
  Tensor z = call_op("test.scale_rows", {x});
  EXPECT_EQ(z.to_float_vector(), v);
}

TEST(CustomOp, NonContiguousInputArrivesContiguous) {
  CpuDevice dev(1);
  CustomOp op = make_scale_rows();
  Tensor x = from_host(iota(6), {2, 3}, DType::f32, &dev).transpose(0, 1);  // (3, 2)
  auto v = op({x}).to_float_vector();
  // x^T = [[0,3],[1,4],[2,5]]
  std::vector<float> want = {0, 6, 2 + 1, 8 + 1, 4 + 2, 10 + 2};
  EXPECT_EQ(v, want);
}

TEST(CustomOp, RegistrationErrors) {
  make_scale_rows();
  auto noop = [](std::span<const KernelTensor>, const KernelTensor&, int64_t, int64_t) {};
  auto same = [](std::span<const Tensor> in) { return OutputSpec{in[0].shape(), in[0].dtype()}; };
  try {
    register_op({.name = "test.scale_rows", .infer = same, .cpu = noop});
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "[register_op] an op named 'test.scale_rows' is already registered");
  }
  EXPECT_THROW(register_op({.name = "1bad name", .infer = same, .cpu = noop}), Error);
  EXPECT_THROW(register_op({.name = "no_kernel", .infer = same}), Error);
  EXPECT_THROW(call_op("does_not_exist", {}), Error);
}

TEST(CustomOp, InferRejectionNamesTheOpAndShapes) {
  CpuDevice dev(1);
  CustomOp op = make_scale_rows();
  Tensor x = zeros({2, 3}, DType::bf16, &dev);
  try {
    op({x});
    FAIL();
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_EQ(m.rfind("[test.scale_rows]", 0), 0u) << m;
    EXPECT_NE(m.find("(2, 3) bf16"), std::string::npos) << m;
    EXPECT_NE(m.find("expects f32"), std::string::npos) << m;
  }
}

TEST(CustomOp, KernelErrorSurfacesAtSync) {
  CpuDevice dev(2);
  static CustomOp bad = register_op({
      .name = "test.throws",
      .infer = [](std::span<const Tensor> in) { return OutputSpec{in[0].shape(), in[0].dtype()}; },
      .cpu = [](std::span<const KernelTensor>, const KernelTensor&, int64_t, int64_t) {
        throw std::runtime_error("user kernel failed");
      },
  });
  Tensor x = zeros({4, 4}, DType::f32, &dev);
  Tensor y = bad({x});  // returns: the kernel has not run yet (or its error is pending)
  try {
    y.to_float_vector();
    FAIL();
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_EQ(m.rfind("[test.throws]", 0), 0u) << m;
    EXPECT_NE(m.find("user kernel failed"), std::string::npos) << m;
  }
}
