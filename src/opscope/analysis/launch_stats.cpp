#include "opscope/analysis/launch_stats.h"

#include <algorithm>

#include "opscope/analysis/intervals.h"

namespace opscope::analysis {

namespace {

constexpr int64_t kEdges[] = {0, 1'000, 2'000, 5'000, 10'000, 20'000, 50'000, 100'000, 200'000, 500'000, 1'000'000};
constexpr size_t kBins = sizeof(kEdges) / sizeof(kEdges[0]);

}  // namespace

LaunchStats launch_stats(const RankView& v) {
  LaunchStats s;
  for (size_t i = 0; i < kBins; ++i) s.histogram.push_back({kEdges[i], i + 1 < kBins ? kEdges[i + 1] : -1});
  std::vector<int64_t> delay, cpu, gpu;
  for (const DeviceWork& w : v.work) {
    if (w.launch < 0) continue;
    const LaunchCall& c = v.launches[size_t(w.launch)];
    const int64_t d = std::max<int64_t>(0, w.t0 - c.t1), on_cpu = c.t1 - c.t0, on_gpu = w.t1 - w.t0;
    delay.push_back(d);
    cpu.push_back(on_cpu);
    gpu.push_back(on_gpu);
    s.delay_total_ns += d;
    if (on_gpu < on_cpu) s.shorter_than_launch++, s.shorter_gpu_ns += on_gpu, s.shorter_cpu_ns += on_cpu;
    s.runtime_outliers += on_cpu > kRuntimeCutoffNs;
    s.delay_outliers += d > kLaunchDelayCutoffNs;
    size_t b = size_t(std::upper_bound(std::begin(kEdges), std::end(kEdges), d) - std::begin(kEdges)) - 1;
    DelayBin& bin = s.histogram[b];
    bin.count++;
    if (d > bin.example_delay_ns) bin.example_delay_ns = d, bin.example_t0 = c.t0, bin.example_t1 = w.t0;
  }
  s.launches = int64_t(delay.size());
  std::sort(delay.begin(), delay.end());
  std::sort(cpu.begin(), cpu.end());
  std::sort(gpu.begin(), gpu.end());
  s.delay_p50_ns = quantile_sorted(delay, 0.5);
  s.delay_p90_ns = quantile_sorted(delay, 0.9);
  s.delay_p99_ns = quantile_sorted(delay, 0.99);
  s.delay_max_ns = delay.empty() ? 0 : delay.back();
  s.cpu_p50_ns = quantile_sorted(cpu, 0.5);
  s.gpu_p50_ns = quantile_sorted(gpu, 0.5);
  return s;
}

}  // namespace opscope::analysis
