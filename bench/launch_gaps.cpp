// Launches queued back to back on the CPU device while the host thread waits for them
// (synchronize, as at the end of a forward) against the same launches while the host
// sleeps through them: the idle time between one launch's end and the next one's start,
// and how far apart a two-core launch's cores start. A waiting host must cost the device
// nothing; woken at every retirement, it put a syscall and a context switch on the cores'
// CPUs at each launch (docs/BENCHMARKS.md, "Stream waiters").
//   build/bench/launch_gaps
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "device_timing.h"
#include "opscope/runtime/device.h"
#include "opscope/runtime/runtime.h"
#include "opscope/runtime/tensor.h"

using namespace opscope;

namespace {

struct Gaps {
  double between = 0, core_lag = 0;  // microseconds, mean over the launches
};

// n launches of `chunks` chunks, each chunk busy for `us`; the host synchronizes at once
// or sleeps until they are surely done first.
Gaps run(Device& dev, int chunks, double us, bool host_waits) {
  const int n = 200;
  std::vector<double> start(size_t(n * 2), 0), end(size_t(n * 2), 0);
  Tensor t = empty({16}, DType::f32, &dev);
  for (int i = 0; i < n; ++i) {
    LaunchSpec s;
    s.name = "busy";
    s.work = chunks;
    s.bytes = int64_t(64) << 20;  // as a large kernel: every core joins it
    s.body = [&start, &end, i, us](int64_t b, int64_t e) {
      double t0 = bench::now_s();
      start[size_t(i * 2 + b)] = t0;
      while (bench::now_s() - t0 < us * 1e-6 * double(e - b)) {
      }
      end[size_t(i * 2 + b)] = bench::now_s();
    };
    runtime::launch(dev, std::move(s), {&t}, {&t});
  }
  if (!host_waits) std::this_thread::sleep_for(std::chrono::duration<double>(n * us * 1e-6 * 2 + 0.01));
  dev.synchronize();
  Gaps g;
  for (int i = 1; i < n; ++i) {
    auto first = [&](int k) { return chunks > 1 ? std::min(start[size_t(k * 2)], start[size_t(k * 2 + 1)]) : start[size_t(k * 2)]; };
    auto last = [&](int k) { return chunks > 1 ? std::max(end[size_t(k * 2)], end[size_t(k * 2 + 1)]) : end[size_t(k * 2)]; };
    g.between += (first(i) - last(i - 1)) * 1e6 / (n - 1);
    if (chunks > 1) g.core_lag += std::abs(start[size_t(i * 2)] - start[size_t(i * 2 + 1)]) * 1e6 / (n - 1);
  }
  return g;
}

}  // namespace

int main() {
  Device& dev = cpu();
  std::printf("%s\n", dev.description().c_str());
  for (auto [chunks, us] : {std::pair{1, 20.0}, std::pair{2, 20.0}, std::pair{2, 200.0}}) {
    if (chunks > dev.num_cores()) continue;
    Gaps waits = run(dev, chunks, us, true), sleeps = run(dev, chunks, us, false);
    std::printf("%d chunk(s) of %3.0f us: between launches %.2f us (host waiting) / %.2f us (host asleep); "
                "cores start apart %.2f / %.2f us\n",
                chunks, us, waits.between, sleeps.between, waits.core_lag, sleeps.core_lag);
  }
}
