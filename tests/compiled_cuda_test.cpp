// Compiled functions on the CUDA device (src/opscope/cuda/compiled.h). Here (no GPU):
// the architecture name, and that CUDA inputs give a clear "[compile] ... cuda:0 ..."
// error. With a GPU: compiled naive RMSNorm == built-in rms_norm == the CPU result.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "opscope/cases/rmsnorm.h"
#include "opscope/compiler/compile.h"
#include "opscope/compiler/nvrtc.h"
#include "opscope/core/error.h"
#include "opscope/cuda/compiled.h"
#include "opscope/ops/ops.h"
#include "opscope/runtime/cuda.h"
#include "opscope/runtime/device.h"
#include "opscope/runtime/runtime.h"
#include "child_process.h"
#include "test_util.h"

using namespace opscope;
using opscope::test_util::error_of;

namespace {

namespace fs = std::filesystem;

// A cache folder of this test only.
struct TempCache {
  std::string dir;
  TempCache() {
    dir = (fs::temp_directory_path() / ("opscope-compiled-cuda-" + std::to_string(::getpid()))).string();
    fs::remove_all(dir);
  }
  ~TempCache() { fs::remove_all(dir); }
};

TEST(CompiledCuda, ArchNameFromComputeCapability) {
  EXPECT_EQ(cuda_impl::cuda_arch_name(9, 0), "sm_90");   // H100, H200
  EXPECT_EQ(cuda_impl::cuda_arch_name(8, 0), "sm_80");   // A100
  EXPECT_EQ(cuda_impl::cuda_arch_name(8, 9), "sm_89");   // L40
  EXPECT_EQ(cuda_impl::cuda_arch_name(10, 0), "sm_100"); // B200
  EXPECT_EQ(cuda_impl::cuda_arch_name(12, 0), "sm_120");
  // What NVRTC is given must be an architecture it accepts.
  EXPECT_NO_THROW(compiler::check_cuda_arch(cuda_impl::cuda_arch_name(9, 0)));
  EXPECT_TRUE(compiler::is_real_arch(cuda_impl::cuda_arch_name(9, 0)));
}

// A device that calls itself cuda:0 with host memory: what a compiled function sees when
// given CUDA tensors in a build or on a machine where they cannot run. No op runs on it.
class FakeCudaDevice final : public Device {
 public:
  FakeCudaDevice() : Device(DeviceType::cuda, 0, &backend_) {}
  int num_cores() const override { return 1; }
  std::string description() const override { return "fake CUDA device (test)"; }
  void notify_work() override {}

 private:
  static void* alloc(size_t n, void*) { return std::malloc(n); }
  static void release(void* p, size_t, void*) { std::free(p); }
  inline static const AllocatorBackend backend_{&alloc, &release, nullptr, "cuda:0"};
};

// On a machine with a GPU the same checks run in a child that cannot see it.
TEST(CompiledCuda, CudaInputsWithoutGpuAreAClearError) {
  if (cuda_available()) {
    testutil::ChildResult r = testutil::rerun_this_test({"CUDA_VISIBLE_DEVICES=-1"});
    ASSERT_EQ(r.status, 0) << "with the GPU hidden (CUDA_VISIBLE_DEVICES=-1):\n" << r.log;
    return;
  }
  static FakeCudaDevice* fake = new FakeCudaDevice;  // devices live until exit
  ASSERT_EQ(fake->name(), "cuda:0");
  Tensor x = runtime::allocate({4, 64}, DType::f32, *fake);
  Tensor w = runtime::allocate({64}, DType::f32, *fake);
  auto f = compile([](const Tensor& a, const Tensor& b) { return cases::naive_rms_norm(a, b); }, "rms_on_cuda");
  std::string msg = error_of([&] { f(x, w); });
  EXPECT_EQ(msg.rfind("[compile] rms_on_cuda: ", 0), 0u) << msg;
  EXPECT_NE(msg.find("cuda:0"), std::string::npos) << msg;
  EXPECT_NE(msg.find(cuda_unavailable_reason()), std::string::npos) << msg;
  EXPECT_EQ(f.num_signatures(), 0u);  // nothing half-compiled is kept
  msg = error_of([&] { f.report({x, w}); });
  EXPECT_EQ(msg.rfind("[compile] rms_on_cuda: ", 0), 0u) << msg;
  // The same function still compiles and runs on the CPU.
  Tensor xc = randn({4, 64}, 1), wc = rand({64}, 2, DType::f32, nullptr, 0.5f, 1.5f);
  Tensor want = rms_norm(xc, wc, 1e-6);
  f(xc, wc);
  std::vector<float> got = f(xc, wc).to_float_vector(), ref = want.to_float_vector();
  ASSERT_EQ(got.size(), ref.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], ref[i], 1e-5) << i;
}

// ---- with a GPU ----

#define SKIP_WITHOUT_GPU() \
  if (!cuda_available()) GTEST_SKIP() << "no CUDA GPU: " << cuda_unavailable_reason()

std::vector<float> host_values(const Tensor& t) { return t.to(cpu()).to(DType::f32).to_float_vector(); }

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, double(std::fabs(a[i] - b[i])));
  return d;
}

void check_rms(int64_t rows, int64_t cols, DType dt, double tol) {
  SCOPED_TRACE(::testing::Message() << rows << "x" << cols << " " << dtype_name(dt));
  TempCache cache;
  Device& gpu = cuda(0);
  Tensor xc = randn({rows, cols}, 7, dt), wc = rand({cols}, 8, dt, nullptr, 0.5f, 1.5f);
  std::vector<float> cpu_ref = host_values(rms_norm(xc, wc, 1e-6));
  Tensor x = xc.to(gpu), w = wc.to(gpu);
  CompileOptions o;
  o.cache_dir = cache.dir;
  auto f = compile([](const Tensor& a, const Tensor& b) { return cases::naive_rms_norm(a, b, 1e-6); }, "rms_cuda", o);
  f(x, w);             // traces (runs the six ops eagerly on the GPU) and compiles
  Tensor y = f(x, w);  // the fused CUDA kernel
  ASSERT_EQ(&y.device(), &gpu);
  ASSERT_EQ(y.dtype(), dt);
  CompileReport rep = f.report({x, w});
  ASSERT_EQ(rep.kernels.size(), 1u) << rep.str();
  EXPECT_EQ(rep.eager_nodes, 0) << rep.str();
  EXPECT_NE(rep.source.find("__global__"), std::string::npos);
  EXPECT_TRUE(fs::exists(rep.artifact_dir + "/kernels.cubin")) << rep.artifact_dir;
  std::vector<float> compiled = host_values(y);
  std::vector<float> fused = host_values(rms_norm(x, w, 1e-6));
  EXPECT_LE(max_abs_diff(compiled, cpu_ref), tol);
  EXPECT_LE(max_abs_diff(fused, cpu_ref), tol);
  EXPECT_LE(max_abs_diff(compiled, fused), tol);
  // A new function with the same graph loads the cached artifact.
  auto g = compile([](const Tensor& a, const Tensor& b) { return cases::naive_rms_norm(a, b, 1e-6); }, "rms_cuda2", o);
  g(x, w);
  EXPECT_TRUE(g.report({x, w}).cache_hit);
  EXPECT_LE(max_abs_diff(host_values(g(x, w)), cpu_ref), tol);
}

TEST(CompiledCudaGpu, RmsNormMatchesFusedAndCpu) {
  SKIP_WITHOUT_GPU();
  check_rms(4, 4096, DType::f32, 1e-5);   // block per row, vectorized
  check_rms(3, 1000, DType::f32, 1e-5);   // warp per row
  check_rms(5, 4097, DType::f32, 1e-5);   // odd row: scalar path
  check_rms(33, 4096, DType::bf16, 0.05); // bf16 in and out, f32 accumulation
  check_rms(7, 96, DType::bf16, 0.05);
}

TEST(CompiledCudaGpu, ElementwiseWithBroadcastMatchesCpu) {
  SKIP_WITHOUT_GPU();
  TempCache cache;
  CompileOptions o;
  o.cache_dir = cache.dir;
  auto f = compile([](const Tensor& a, const Tensor& b) { return relu(a * b + 1.0) - a; }, "ew_cuda", o);
  Tensor ac = randn({64, 257}, 3), bc = randn({257}, 4);
  std::vector<float> want = host_values(relu(ac * bc + 1.0) - ac);
  Tensor a = ac.to(cuda(0)), b = bc.to(cuda(0));
  f(a, b);
  EXPECT_LE(max_abs_diff(host_values(f(a, b)), want), 1e-5);
  EXPECT_EQ(f.report({a, b}).kernels.size(), 1u);
  // A transposed (strided) operand: a new signature, the elementwise form.
  Tensor at = randn({257, 64}, 5).to(cuda(0)).transpose(0, 1);
  std::vector<float> want_t = host_values(relu(at.to(cpu()) * bc + 1.0) - at.to(cpu()));
  f(at, b);
  EXPECT_LE(max_abs_diff(host_values(f(at, b)), want_t), 1e-5);
}

}  // namespace
