// A framework above opscope (the PyTorch bridge) names its own ops: inside a
// FrameworkOpScope the opscope ops it calls open no op of their own, so launches, kernel
// errors and the profile carry the framework's name ("aten::mul"). And copies write into
// strided destinations (torch's in-place writes through views).
#include <gtest/gtest.h>

#include "opscope/kernels/cpu/copy.h"
#include "opscope/ops/ops.h"
#include "opscope/profiler/session.h"
#include "opscope/runtime/cpu_device.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/runtime.h"
#include "test_util.h"

using namespace opscope;

TEST(FrameworkOpScope, NestedOpsOpenNoOpOfTheirOwn) {
  CpuDevice dev(2);
  Tensor a = from_host({1, 2, 3, 4}, {2, 2}, DType::f32, &dev);
  prof::Profiler p;
  p.start();
  {
    FrameworkOpScope scope("aten::mul", {&a});
    EXPECT_STREQ(OpScope::current(), "aten::mul");
    Tensor c = mul(a.transpose(0, 1).contiguous(), a);  // contiguous and mul inside it
    EXPECT_STREQ(OpScope::current(), "aten::mul");
  }
  Tensor outside = add(a, a);  // and outside it ops open their own again
  dev.synchronize();
  p.stop();
  std::vector<std::string> ops;
  uint64_t mul_id = 0;
  for (const auto& e : p.trace().events)
    if (e.kind == prof::EventKind::op) {
      ops.push_back(e.name);
      if (e.name == "aten::mul") mul_id = e.id;
    }
  EXPECT_EQ(ops, (std::vector<std::string>{"aten::mul", "add"}));
  int launches_of_mul = 0;
  for (const auto& e : p.trace().events)
    if (e.kind == prof::EventKind::launch && e.parent == mul_id) ++launches_of_mul;
  EXPECT_EQ(launches_of_mul, 2);  // the transpose copy and the multiply
}

TEST(FrameworkOpScope, KernelErrorsNameTheFrameworkOp) {
  CpuDevice dev(1);
  {
    FrameworkOpScope scope("aten::weird", {});
    LaunchSpec spec;
    spec.name = "throws";
    spec.body = [](int64_t, int64_t) { throw std::runtime_error("boom"); };
    runtime::launch(dev, std::move(spec), {}, {});
  }
  std::string msg = test_util::error_of([&] { dev.synchronize(); });
  EXPECT_TRUE(test_util::starts_with(msg, "[aten::weird] kernel throws failed: boom")) << msg;
}

TEST(CopyKernel, WritesIntoAStridedView) {
  CpuDevice dev(2);
  Tensor base = zeros({4, 6}, DType::f32, &dev);
  Tensor view = base.slice(0, 1, 3).slice(1, 0, 6, 2);  // (2, 3), strides (6, 2)
  Tensor src = from_host({1, 2, 3, 4, 5, 6}, {2, 3}, DType::bf16, &dev);
  cpu_kernels::launch_copy(view, src);
  std::vector<float> got = base.to_float_vector();
  std::vector<float> want(24, 0);
  want[6] = 1, want[8] = 2, want[10] = 3, want[12] = 4, want[14] = 5, want[16] = 6;
  EXPECT_EQ(got, want);
  Tensor col = base.slice(1, 5, 6);  // (4, 1), stride 6: a strided column
  cpu_kernels::launch_copy(col.transpose(0, 1), from_host({9, 9, 9, 9}, {1, 4}, DType::f32, &dev));
  got = base.to_float_vector();
  for (int r = 0; r < 4; ++r) EXPECT_EQ(got[r * 6 + 5], 9);
}
