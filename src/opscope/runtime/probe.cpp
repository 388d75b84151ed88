#include "opscope/runtime/probe.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>

#include "opscope/core/error.h"
#include "opscope/ops/ops.h"
#include "opscope/runtime/runtime.h"

namespace opscope::runtime {

namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

template <class F>
double best_of(Device& dev, int n, F&& fn) {
  double best = 1e30;
  for (int i = 0; i < n; ++i) {
    double t0 = now_s();
    fn();
    dev.synchronize();
    best = std::min(best, now_s() - t0);
  }
  return best;
}

// a = b (copy) or a = b + 3c (triad) in blocks the device's cores share.
void stream_kernel(Device& dev, Tensor& a, const Tensor& b, const Tensor& c, bool triad) {
  const int64_t n = a.numel();
  float* pa = a.data<float>();
  const float* pb = b.data<float>();
  const float* pc = c.data<float>();
  constexpr int64_t kBlock = 1 << 16;
  LaunchSpec spec;
  spec.name = triad ? "probe_stream_triad" : "probe_stream_copy";
  spec.work = (n + kBlock - 1) / kBlock;
  spec.grain = 1;
  spec.bytes = (triad ? 3 : 2) * n * 4;
  spec.flops = triad ? 2 * n : 0;
  spec.body = [=](int64_t lo, int64_t hi) {
    int64_t i0 = lo * kBlock, i1 = std::min(n, hi * kBlock);
    if (!triad) std::memcpy(pa + i0, pb + i0, size_t(i1 - i0) * 4);
    else
      for (int64_t i = i0; i < i1; ++i) pa[i] = pb[i] + 3.0f * pc[i];
  };
  launch(dev, std::move(spec), {&b, &c}, {&a});
}

}  // namespace

std::string DevicePeaks::to_json() const {
  return nlohmann::json{{"device", device},           {"copy_gbps", copy_gbps},   {"triad_gbps", triad_gbps},
                        {"matmul_gflops", matmul_gflops}, {"matmul_n", matmul_n}, {"launch_ns", launch_ns},
                        {"method", method}}
      .dump();
}

DevicePeaks measure_peaks(Device& dev, const ProbeOptions& o) {
  if (o.copy_bytes < (int64_t(1) << 20) || o.copy_bytes > (int64_t(1) << 32))
    fail("probe", "copy_bytes {} out of range (1 MiB to 4 GiB)", o.copy_bytes);
  if (o.matmul_n < 16 || o.matmul_n > 8192) fail("probe", "matmul_n {} out of range (16 to 8192)", o.matmul_n);
  if (o.repeats < 1 || o.repeats > 100) fail("probe", "repeats {} out of range (1 to 100)", o.repeats);
  DevicePeaks p;
  p.device = dev.description();
  dev.synchronize();

  const int64_t n = o.copy_bytes / 4;
  {
    Tensor a = zeros({n}, DType::f32, &dev), b = full({n}, 1.0, DType::f32, &dev), c = full({n}, 2.0, DType::f32, &dev);
    stream_kernel(dev, a, b, c, false);  // first touch
    double tc = best_of(dev, o.repeats, [&] { stream_kernel(dev, a, b, c, false); });
    double tt = best_of(dev, o.repeats, [&] { stream_kernel(dev, a, b, c, true); });
    p.copy_gbps = 2.0 * double(n) * 4 / tc / 1e9;
    p.triad_gbps = 3.0 * double(n) * 4 / tt / 1e9;
  }
  {
    const int64_t m = o.matmul_n;
    Tensor x = randn({m, m}, 1, DType::f32, &dev), y = randn({m, m}, 2, DType::f32, &dev);
    matmul(x, y);  // warm: the BLAS threads start
    double t = best_of(dev, o.repeats, [&] { matmul(x, y); });
    p.matmul_gflops = 2.0 * double(m) * double(m) * double(m) / t / 1e9;
    p.matmul_n = m;
  }
  {
    // Tiny adds queued back to back: the cost of a launch with no work in it, on the
    // slower of the host (op + submit) and the device (schedule, run, retire).
    constexpr int kLaunches = 2000;
    Tensor a = ones({8}, DType::f32, &dev), b = ones({8}, DType::f32, &dev);
    double t = best_of(dev, o.repeats, [&] {
      for (int i = 0; i < kLaunches; ++i) add(a, b);
    });
    p.launch_ns = t / kLaunches * 1e9;
  }
  p.method = fmt::format(
      "best of {}: STREAM copy/triad over {} MiB f32 arrays on all cores; f32 matmul {}x{}; {} back-to-back adds "
      "of 8 elements (wall time / launches)",
      o.repeats, o.copy_bytes >> 20, o.matmul_n, o.matmul_n, 2000);
  return p;
}

const DevicePeaks& device_peaks(Device& dev) {
  static std::mutex m;
  static std::map<int, DevicePeaks> cache;
  std::lock_guard<std::mutex> lock(m);
  auto it = cache.find(dev.index());
  if (it == cache.end()) it = cache.emplace(dev.index(), measure_peaks(dev)).first;
  return it->second;
}

}  // namespace opscope::runtime
