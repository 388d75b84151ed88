// The CUDA device. Without a GPU (or without the CUDA device in this build) only the
// "unavailable" behaviour runs here; every other test skips with the driver's reason
// and runs on a machine with a GPU: each op on cuda:0 against the same op on cpu:0.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "opscope/core/error.h"
#include "opscope/ops/custom.h"
#include "opscope/ops/ops.h"
#include "opscope/runtime/cuda.h"
#include "opscope/runtime/device.h"
#include "opscope/runtime/stream.h"
#include "opscope/runtime/tensor.h"
#include "child_process.h"
#include "test_util.h"

using namespace opscope;
using opscope::test_util::error_of;

namespace {

#define SKIP_WITHOUT_GPU() \
  if (!cuda_available()) GTEST_SKIP() << "no CUDA GPU: " << cuda_unavailable_reason()

// On a machine with a GPU the same checks run in a child that cannot see it.
TEST(CudaDevice, UnavailableIsAClearError) {
  if (cuda_available()) {
    testutil::ChildResult r = testutil::rerun_this_test({"CUDA_VISIBLE_DEVICES=-1"});
    ASSERT_EQ(r.status, 0) << "with the GPU hidden (CUDA_VISIBLE_DEVICES=-1):\n" << r.log;
    return;
  }
  std::string reason = cuda_unavailable_reason();
  EXPECT_FALSE(reason.empty());
  EXPECT_EQ(cuda_device_count(), 0);
  std::string msg = error_of([] { cuda(0); });
  EXPECT_EQ(msg.rfind("[cuda] cuda:0: ", 0), 0u) << msg;
  EXPECT_NE(msg.find(reason), std::string::npos) << msg;
  // Asking again gives the same answer (no half-made device is left behind).
  EXPECT_EQ(error_of([] { cuda(0); }), msg);
  // The CPU device keeps working.
  Tensor a = from_host({1, 2, 3}, {3}), b = from_host({10, 20, 30}, {3});
  EXPECT_EQ(add(a, b).to_vector<float>(), (std::vector<float>{11, 22, 33}));
}

TEST(CudaDevice, BadOrdinalIsAClearError) {
  std::string msg = error_of([] { cuda(99); });
  EXPECT_EQ(msg.rfind("[cuda] cuda:99", 0), 0u) << msg;
}

// ---- with a GPU ----

void expect_close(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  EXPECT_EQ(got.device().type(), DeviceType::cuda) << what;
  std::vector<float> g = got.to_float_vector(), w = want.to_float_vector();
  int bad = 0;
  for (size_t i = 0; i < g.size() && bad < 5; ++i) {
    bool both_nan = std::isnan(g[i]) && std::isnan(w[i]);
    if (!both_nan && !(std::abs(g[i] - w[i]) <= tol * std::max(1.0f, std::abs(w[i])))) {
      ADD_FAILURE() << what << ": element " << i << " is " << g[i] << " on cuda, " << w[i] << " on cpu";
      ++bad;
    }
  }
}

double tol_of(DType dt) { return dt == DType::f32 ? 1e-5 : dt == DType::bf16 ? 1.0 / 64 : 1.0 / 256; }

TEST(CudaDevice, CopiesAndCreationMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  Device& g = cuda(0);
  EXPECT_EQ(g.name(), "cuda:0");
  EXPECT_EQ(g.type(), DeviceType::cuda);
  for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
    for (int64_t n : {1, 3, 4097}) {
      Tensor c = randn({n}, 42, dt);
      Tensor d = randn({n}, 42, dt, &g);
      EXPECT_EQ(d.device().name(), "cuda:0");
      expect_close(d, c, 0, "randn");  // same seed, same values
      expect_close(rand({n}, 7, dt, &g), rand({n}, 7, dt), 0, "rand");
      expect_close(c.to(g), c, 0, "to(cuda)");
      expect_close(c.to(g).clone(), c, 0, "clone (one cudaMemcpyAsync)");
      expect_close(c.to(g).slice(0, 1, n).clone(), c.slice(0, 1, n), 0, "clone of an offset view");
      expect_close(full({n}, 2.5, dt, &g), full({n}, 2.5, dt), 0, "full");
      expect_close(zeros({n}, dt, &g), zeros({n}, dt), 0, "zeros");
      expect_close(arange(0, double(n), 1, dt, &g), arange(0, double(n), 1, dt), 0, "arange");
    }
  }
  Tensor i = from_host_i64({5, -1, 7}, {3}, &g);
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{5, -1, 7}));
  Tensor x = from_host({1, 2, 3, 4, 5, 6}, {2, 3}, DType::f32, &g);
  EXPECT_EQ(x.transpose(0, 1).contiguous().to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(x.slice(1, 0, 3, 2).to_float_vector(), (std::vector<float>{1, 3, 4, 6}));
  EXPECT_FLOAT_EQ(x.slice(1, 2, 3).slice(0, 1, 2).item(), 6.0f);
  Tensor back = x.to(cpu());
  EXPECT_EQ(back.device().type(), DeviceType::cpu);
  EXPECT_EQ(back.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  expect_close(x.to(DType::bf16), x.to(cpu()).to(DType::bf16).to(g), 0, "cast");
}

TEST(CudaDevice, ElementwiseMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  Device& g = cuda(0);
  using U = Tensor (*)(const Tensor&);
  std::vector<std::pair<const char*, U>> unary = {
      {"neg", neg}, {"abs", opscope::abs}, {"exp", opscope::exp}, {"log", opscope::log}, {"sqrt", opscope::sqrt},
      {"rsqrt", rsqrt}, {"sin", opscope::sin}, {"cos", opscope::cos}, {"tanh", opscope::tanh}, {"sigmoid", sigmoid},
      {"silu", silu}, {"gelu", gelu}, {"relu", relu}, {"gelu_tanh", gelu_tanh}, {"hardswish", hardswish},
      {"hardsigmoid", hardsigmoid}};
  for (DType dt : {DType::f32, DType::bf16, DType::f16})
    for (int64_t n : {1, 3, 4097}) {
      Tensor c = rand({3, n}, 1, dt, nullptr, 0.1f, 3.0f), d = c.to(g);
      for (auto& [name, f] : unary) {
        expect_close(f(d), f(c), 2 * tol_of(dt), std::string(name) + " " + std::string(dtype_name(dt)));
        expect_close(f(d.transpose(0, 1)), f(c.transpose(0, 1)), 2 * tol_of(dt), std::string(name) + " transposed");
      }
      Tensor w = rand({n}, 2, dt, nullptr, 0.5f, 2.0f), r = rand({3, 1}, 3, dt, nullptr, 0.5f, 2.0f);
      Tensor wd = w.to(g), rd = r.to(g);
      using B = Tensor (*)(const Tensor&, const Tensor&);
      for (B f : {(B)add, (B)sub, (B)mul, (B)div, (B)pow, (B)maximum, (B)minimum}) {
        expect_close(f(d, wd), f(c, w), 2 * tol_of(dt), "binary (N,H) x (H)");
        expect_close(f(d, rd), f(c, r), 2 * tol_of(dt), "binary (N,H) x (N,1)");
        expect_close(f(d, d), f(c, c), 2 * tol_of(dt), "binary flat");
        expect_close(f(d.slice(1, 0, n, 2), d.slice(1, 0, n, 2)), f(c.slice(1, 0, n, 2), c.slice(1, 0, n, 2)),
                     2 * tol_of(dt), "binary strided");
      }
      expect_close(mul(d, 0.5), mul(c, 0.5), tol_of(dt), "scalar");
      expect_close(sub(1.0, d), sub(1.0, c), tol_of(dt), "scalar first");
    }
}

TEST(CudaDevice, ReductionsMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  Device& g = cuda(0);
  for (DType dt : {DType::f32, DType::bf16})
    for (int64_t n : {1, 33, 1025, 4097}) {
      Tensor c = randn({5, n}, 4, dt), d = c.to(g);
      double t = dt == DType::f32 ? 1e-4 : 1.0 / 32;
      for (std::vector<int64_t> axes : {std::vector<int64_t>{-1}, {0}, {0, 1}, {}}) {
        expect_close(sum(d, axes), sum(c, axes), t, "sum");
        expect_close(mean(d, axes, true), mean(c, axes, true), t, "mean");
        expect_close(max(d, axes), max(c, axes), t, "max");
        expect_close(min(d, axes), min(c, axes), t, "min");
        if (n > 1) expect_close(var(d, axes), var(c, axes), t, "var");
      }
      EXPECT_EQ(argmax(d, -1).to_vector<int64_t>(), argmax(c, -1).to_vector<int64_t>());
      EXPECT_EQ(argmax(d, 0).to_vector<int64_t>(), argmax(c, 0).to_vector<int64_t>());
      expect_close(sum(d.transpose(0, 1), {-1}), sum(c.transpose(0, 1), {-1}), t, "sum of a transpose");
    }
}

TEST(CudaDevice, FusedKernelsMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  Device& g = cuda(0);
  for (DType dt : {DType::f32, DType::bf16, DType::f16})
    // 2048 .. 16384: rows in a block's registers, 1 to 16 chunks a thread.
    for (int64_t n : {1, 3, 33, 1024, 1025, 2048, 4096, 4097, 4104, 16384}) {
      Tensor c = randn({7, n}, 5, dt), d = c.to(g);
      Tensor w = rand({n}, 6, dt, nullptr, 0.5f, 1.5f), b = randn({n}, 7, dt);
      Tensor wd = w.to(g), bd = b.to(g);
      std::string what = std::string(dtype_name(dt)) + " cols " + std::to_string(n);
      expect_close(rms_norm(d, wd, 1e-6), rms_norm(c, w, 1e-6), 2 * tol_of(dt), "rms_norm " + what);
      expect_close(rms_norm(d, Tensor(), 1e-6), rms_norm(c, Tensor(), 1e-6), 2 * tol_of(dt), "rms_norm no w " + what);
      expect_close(layer_norm(d, wd, bd, 1e-5), layer_norm(c, w, b, 1e-5), 2 * tol_of(dt), "layer_norm " + what);
      expect_close(softmax(d, -1), softmax(c, -1), 2 * tol_of(dt), "softmax " + what);
      expect_close(softmax(d, 0), softmax(c, 0), 2 * tol_of(dt), "softmax axis 0 " + what);
      expect_close(rms_norm(d.slice(1, 0, n, 2), Tensor(), 1e-6), rms_norm(c.slice(1, 0, n, 2), Tensor(), 1e-6),
                   2 * tol_of(dt), "rms_norm of a strided view " + what);
    }
}

TEST(CudaDevice, ConcatEmbeddingMatmulMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  Device& g = cuda(0);
  Tensor a = randn({3, 5}, 8), b = randn({3, 2}, 9), c = randn({2, 5}, 10);
  expect_close(concat({a.to(g), b.to(g)}, 1), concat({a, b}, 1), 0, "concat axis 1");
  expect_close(concat({a.to(g), c.to(g)}, 0), concat({a, c}, 0), 0, "concat axis 0");
  expect_close(concat({a.to(g).transpose(0, 1), c.to(g).transpose(0, 1)}, 1),
               concat({a.transpose(0, 1), c.transpose(0, 1)}, 1), 0, "concat of views");
  for (DType dt : {DType::f32, DType::bf16}) {
    Tensor table = randn({11, 64}, 11, dt);
    Tensor idx = from_host_i64({0, 10, 3, 3}, {2, 2});
    expect_close(embedding(table.to(g), idx.to(g)), embedding(table, idx), 0, "embedding");
    expect_close(embedding(table.to(g), idx.to(DType::i32).to(g)), embedding(table, idx.to(DType::i32)), 0,
                 "embedding i32");
  }
  for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
    double t = dt == DType::f32 ? 1e-4 : 1.0 / 32;
    for (auto [M, K, N] : {std::array<int64_t, 3>{1, 1, 1}, {3, 5, 7}, {64, 33, 129}, {256, 512, 128}}) {
      Tensor x = randn({M, K}, 12, dt), y = randn({K, N}, 13, dt);
      expect_close(matmul(x.to(g), y.to(g)), matmul(x, y), t, "matmul");
      expect_close(matmul(y.to(g).transpose(0, 1), x.to(g).transpose(0, 1)), matmul(y.transpose(0, 1), x.transpose(0, 1)),
                   t, "matmul of transposes");
      Tensor xb = randn({4, M, K}, 14, dt), yb = randn({4, K, N}, 15, dt);
      expect_close(matmul(xb.to(g), yb.to(g)), matmul(xb, yb), t, "bmm");
      expect_close(matmul(xb.to(g), y.to(g)), matmul(xb, y), t, "bmm broadcast b");
    }
    Tensor v = randn({5}, 16, dt), m = randn({5, 3}, 17, dt);
    expect_close(matmul(v.to(g), m.to(g)), matmul(v, m), t, "vector @ matrix");
  }
}

// conv2d (im2col + cuBLAS) and max_pool2d: dense, strided, dilated, grouped and depthwise
// windows, bias on and off, against the CPU device's kernels.
TEST(CudaDevice, Conv2dAndMaxPool2dMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  Device& g = cuda(0);
  struct Case {
    Shape x, w;
    Size2 stride, padding, dilation;
    int64_t groups;
  };
  std::vector<Case> cases = {{{2, 3, 9, 11}, {5, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
                             {{1, 3, 17, 15}, {8, 3, 7, 7}, {2, 2}, {3, 3}, {1, 1}, 1},
                             {{2, 16, 5, 7}, {12, 16, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1},
                             {{1, 4, 12, 10}, {6, 4, 3, 2}, {1, 2}, {2, 1}, {2, 3}, 1},
                             {{2, 8, 7, 7}, {6, 4, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 2},
                             {{2, 12, 10, 9}, {12, 1, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 12}};
  for (DType dt : {DType::f32, DType::bf16})
    for (const Case& k : cases) {
      Tensor x = randn(k.x, 20, dt), w = randn(k.w, 21, dt), b = randn({k.w[0]}, 22, dt);
      std::string what = "conv2d x " + k.x.str() + " w " + k.w.str() + " " + std::string(dtype_name(dt));
      double t = dt == DType::f32 ? 1e-4 : 1.0 / 16;
      expect_close(conv2d(x.to(g), w.to(g), b.to(g), k.stride, k.padding, k.dilation, k.groups),
                   conv2d(x, w, b, k.stride, k.padding, k.dilation, k.groups), t, what);
      expect_close(conv2d(x.to(g), w.to(g), Tensor(), k.stride, k.padding, k.dilation, k.groups),
                   conv2d(x, w, Tensor(), k.stride, k.padding, k.dilation, k.groups), t, what + " no bias");
      auto [y, idx] = max_pool2d_with_indices(x.to(g), {3, 3}, {2, 2}, {1, 1}, {1, 1}, true);
      auto [yc, idxc] = max_pool2d_with_indices(x, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true);
      expect_close(y, yc, 0, "max_pool2d " + what);
      if (dt == DType::f32) {
        EXPECT_EQ(idx.to_vector<int64_t>(), idxc.to_vector<int64_t>()) << what;
      }
    }
}

TEST(CudaDevice, AsyncSemanticsAndErrors) {
  SKIP_WITHOUT_GPU();
  Device& g = cuda(0);
  Stream& s = current_stream(g);
  Tensor x = randn({4096, 4096}, 18, DType::f32, &g);
  s.synchronize();
  Tensor y = x;
  for (int i = 0; i < 20; ++i) y = matmul(y, x);  // ~2.7 TFLOP: far longer than queuing it
  EXPECT_FALSE(s.query()) << "the launches returned after their kernels ended";
  s.synchronize();
  EXPECT_TRUE(s.query());
  // A bad index surfaces at the next synchronize, naming the op; the device works on.
  Tensor table = randn({4, 8}, 19, DType::f32, &g);
  Tensor e = embedding(table, from_host_i64({1, 9}, {2}, &g));
  std::string msg = error_of([&] { s.synchronize(); });
  EXPECT_EQ(msg.rfind("[embedding] cuda:0", 0), 0u) << msg;
  EXPECT_NE(msg.find("index 9"), std::string::npos) << msg;
  EXPECT_EQ(add(from_host({1}, {1}, DType::f32, &g), 1.0).item(), 2.0f);
  // Mixed devices.
  msg = error_of([&] { add(randn({2}, 1), randn({2}, 1, DType::f32, &g)); });
  EXPECT_EQ(msg.rfind("[add] ", 0), 0u) << msg;
  EXPECT_NE(msg.find(cpu().name()), std::string::npos) << msg;
  EXPECT_EQ(cpu().name(), "cpu:0") << "the process's CPU device, whichever device came first";
  EXPECT_NE(msg.find("cuda:0"), std::string::npos) << msg;
  // No CUDA kernel for integer math yet: a clear error at the call.
  msg = error_of([&] { add(from_host_i64({1}, {1}, &g), 1.0); });
  EXPECT_EQ(msg.rfind("[add] no CUDA kernel yet", 0), 0u) << msg;
}

TEST(CudaDevice, AllocatorReuseAndOutOfMemory) {
  SKIP_WITHOUT_GPU();
  Device& g = cuda(0);
  { Tensor t = empty({1 << 20}, DType::f32, &g); }
  g.synchronize();
  AllocatorStats before = g.allocator().stats();
  { Tensor t = empty({1 << 20}, DType::f32, &g); }
  AllocatorStats after = g.allocator().stats();
  EXPECT_EQ(after.num_cache_hits, before.num_cache_hits + 1);
  EXPECT_EQ(after.num_os_allocs, before.num_os_allocs);
  std::string msg = error_of([&] { empty({int64_t(1) << 42}, DType::f32, &g); });  // 16 TiB
  EXPECT_EQ(msg.rfind("[empty] cuda:0: out of memory allocating", 0), 0u) << msg;
  EXPECT_NE(msg.find("reserved"), std::string::npos) << msg;
  EXPECT_EQ(add(from_host({1}, {1}, DType::f32, &g), 1.0).item(), 2.0f);  // still usable
}

TEST(CudaDevice, CrossStreamWaits) {
  SKIP_WITHOUT_GPU();
  Device& g = cuda(0);
  Stream& s2 = g.create_stream();
  Tensor x = randn({2048, 2048}, 20, DType::f32, &g);
  Tensor y = matmul(x, x);  // default stream
  Tensor z;
  {
    StreamGuard guard(s2);
    z = mul(y, 2.0);  // waits for the matmul on the GPU (cudaStreamWaitEvent)
  }
  Tensor yc = matmul(x.to(cpu()), x.to(cpu()));
  expect_close(z, mul(yc, 2.0), 1e-3, "cross-stream");
  Event e = s2.record();
  g.default_stream().wait(e);
  g.synchronize();
  EXPECT_TRUE(e.query());
}

TEST(CudaDevice, KernelsLaunchedWhileTheGpuIsBusySucceed) {
  SKIP_WITHOUT_GPU();
  Device& g = cuda(0);
  // While the matmuls run, the scheduler polls their events ("not ready") and launches
  // the elementwise kernels behind them, each checked with cudaGetLastError: a "not
  // ready" left as the thread's last error failed them with "device not ready".
  Tensor x = randn({4096, 4096}, 23, DType::f32, &g);
  Tensor y = matmul(x, x);
  for (int i = 0; i < 4; ++i) y = matmul(mul(y, 1e-3), x);
  Tensor z = full({1000}, 1.0, DType::f32, &g);
  for (int i = 0; i < 200; ++i) z = add(z, 1.0);
  EXPECT_NO_THROW(g.synchronize());
  EXPECT_EQ(z.slice(0, 999, 1000).item(), 201.0f);
}

TEST(CudaDevice, OutOfMemoryWaitsForFinishedLaunchesToGiveBackTheirTensors) {
  SKIP_WITHOUT_GPU();
  Device& g = cuda(0);
  // 8 GiB + 20 bytes per tensor: more than 2^31 elements (64-bit index math), and 24 of
  // them exceed an H200's memory. Each output is dropped at once, but its block comes
  // back only when the launch that wrote it has completed and been recycled: without
  // waiting for those on an out-of-memory, this loop ran out of memory.
  int64_t n = (int64_t(1) << 31) + 5;
  Tensor x = full({n}, 1.5, DType::f32, &g);
  for (int i = 0; i < 24; ++i) {
    Tensor y = mul(x, 2.0);
    if (i == 23) {
      EXPECT_EQ(y.slice(0, n - 1, n).item(), 3.0f) << "the last element, past 2^31";
      EXPECT_EQ(y.slice(0, 0, 1).item(), 3.0f);
    }
  }
  g.synchronize();
  // The cache now holds most of the GPU: give it back, so that what the tests after
  // this one allocate outside the allocator (cuBLAS workspaces, modules) finds room.
  x = Tensor();
  g.allocator().empty_cache();
}

TEST(CudaDevice, CopiesWaitForTheCpuDeviceAndOtherStreams) {
  SKIP_WITHOUT_GPU();
  Device& g = cuda(0);
  // The CPU device runs the add asynchronously: the copy to the GPU must wait for it.
  Tensor c = add(randn({2048, 1024}, 21), 1.0);
  Tensor d = c.to(g);
  expect_close(d, c, 0, "host to device after an asynchronous cpu op");
  // Written on a second CUDA stream, read back from the default one.
  Stream& s2 = g.create_stream();
  Tensor e;
  {
    StreamGuard guard(s2);
    e = mul(matmul(d.slice(1, 0, 512), d.slice(1, 0, 512).transpose(0, 1)), 0.5);
  }
  Tensor ec = mul(matmul(c.slice(1, 0, 512), c.slice(1, 0, 512).transpose(0, 1)), 0.5);
  expect_close(e, ec, 1e-3, "device to host after a write on another stream");
}

// exit() while the GPU still runs queued work: the device's exit handler drains it and
// stops the scheduler before the CUDA runtime goes; the process must exit cleanly.
TEST(CudaDeviceDeathTest, ExitWithQueuedWorkIsClean) {
  SKIP_WITHOUT_GPU();
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process: CUDA does not survive fork()
  EXPECT_EXIT(
      {
        Device& g = cuda(0);
        Tensor x = randn({4096, 4096}, 22, DType::f32, &g);
        Tensor y = x;
        for (int i = 0; i < 30; ++i) y = mul(matmul(y, x), 1e-3);
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
