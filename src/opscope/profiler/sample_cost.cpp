#include "opscope/profiler/sample_cost.h"

#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <mutex>
#include <vector>

namespace opscope::prof::detail {
namespace {

constexpr int64_t kProbeRateHz = 20'000;
constexpr int64_t kProbeNs = 5'000'000;
constexpr int64_t kGapNs = 250;  // a clock read takes ~25 ns: a longer gap is the thread stopped

int64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// The gaps of a clock-reading loop while this thread is sampled; nullopt when the OS refuses.
std::optional<std::vector<int64_t>> sampled_gaps() {
  perf_event_attr a{};
  a.size = sizeof(a);
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_CPU_CLOCK;
  a.sample_period = uint64_t(1'000'000'000 / kProbeRateHz);
  a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TIME;  // what the layer records: the same work per sample
  a.exclude_hv = 1;
  a.use_clockid = 1;
  a.clockid = CLOCK_MONOTONIC;
  long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) {
    a.exclude_kernel = 1;  // where the OS's own code may not be sampled
    fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  }
  if (fd < 0) return std::nullopt;
  size_t bytes = size_t(9) * size_t(sysconf(_SC_PAGESIZE));
  void* ring = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, int(fd), 0);
  std::vector<int64_t> gaps;
  gaps.reserve(size_t(kProbeNs / 1000));
  int64_t prev = now_ns(), end = prev + kProbeNs;
  for (int64_t t = prev; t < end; prev = t) {
    t = now_ns();
    if (t - prev > kGapNs) gaps.push_back(t - prev);
  }
  if (ring != MAP_FAILED) munmap(ring, bytes);
  close(int(fd));
  return gaps;
}

std::optional<int64_t> measure() {
  std::optional<std::vector<int64_t>> gaps = sampled_gaps();
  if (!gaps) return std::nullopt;
  // Fewer gaps than a tenth of the samples expected: the interrupts hide under kGapNs.
  if (int64_t(gaps->size()) < kProbeNs * kProbeRateHz / 1'000'000'000 / 10) return kGapNs;
  auto mid = gaps->begin() + ptrdiff_t(gaps->size() / 2);
  std::nth_element(gaps->begin(), mid, gaps->end());
  return *mid;
}

}  // namespace

std::optional<int64_t> sample_cost_ns() {
  static std::once_flag once;
  static std::optional<int64_t> cost;
  std::call_once(once, [] { cost = measure(); });
  return cost;
}

int64_t rate_within_budget(int64_t cost_ns, double budget, int64_t cap) {
  int64_t rate = cost_ns > 0 ? int64_t(budget * 1e9 / double(cost_ns)) / 100 * 100 : cap;
  return std::clamp<int64_t>(rate, 100, cap);
}

}  // namespace opscope::prof::detail
