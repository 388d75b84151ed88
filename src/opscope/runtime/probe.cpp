#include "opscope/runtime/probe.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "opscope/core/error.h"
#include "opscope/ops/ops.h"
#include "opscope/runtime/runtime.h"

namespace opscope::runtime {

namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Each run of `fn` timed to the device's completion: the fastest, and the spread.
struct Timing {
  double best = 0, spread = 0;
};
template <class F>
Timing time_runs(Device& dev, int n, F&& fn) {
  double best = 1e30, worst = 0;
  for (int i = 0; i < n; ++i) {
    double t0 = now_s();
    fn();
    dev.synchronize();
    double t = now_s() - t0;
    best = std::min(best, t);
    worst = std::max(worst, t);
  }
  return {best, best > 0 ? (worst - best) / best : 0};
}

enum class Kernel { read, copy, copy_nt, triad, triad_nt };
const char* kernel_name(Kernel k) {
  switch (k) {
    case Kernel::read: return "read";
    case Kernel::copy: return "copy";
    case Kernel::copy_nt: return "copy_nt";
    case Kernel::triad: return "triad";
    case Kernel::triad_nt: return "triad_nt";
  }
  return "?";
}
int arrays(Kernel k) { return k == Kernel::read ? 1 : k == Kernel::triad || k == Kernel::triad_nt ? 3 : 2; }
#if defined(__SSE2__)
constexpr bool kHaveStreamingStores = true;
#else
constexpr bool kHaveStreamingStores = false;
#endif

// Elements [i0, i1) of one pass. Non-temporal stores need 16-byte aligned addresses:
// blocks start on multiples of kBlock elements of 64-byte aligned storage.
float pass(Kernel k, float* a, const float* b, const float* c, int64_t i0, int64_t i1) {
  switch (k) {
    case Kernel::read: {
      float s[8] = {};
      int64_t i = i0;
      for (; i + 8 <= i1; i += 8)
        for (int j = 0; j < 8; ++j) s[j] += b[i + j];
      for (; i < i1; ++i) s[0] += b[i];
      return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
    }
    case Kernel::copy: std::memcpy(a + i0, b + i0, size_t(i1 - i0) * 4); return 0;
    case Kernel::triad:
      for (int64_t i = i0; i < i1; ++i) a[i] = b[i] + 3.0f * c[i];
      return 0;
    case Kernel::copy_nt:
    case Kernel::triad_nt: {
      int64_t i = i0;
#if defined(__SSE2__)
      const __m128 three = _mm_set1_ps(3.0f);
      for (; i + 4 <= i1; i += 4) {
        __m128 v = _mm_load_ps(b + i);
        if (k == Kernel::triad_nt) v = _mm_add_ps(v, _mm_mul_ps(three, _mm_load_ps(c + i)));
        _mm_stream_ps(a + i, v);
      }
      _mm_sfence();
#endif
      for (; i < i1; ++i) a[i] = k == Kernel::triad_nt ? b[i] + 3.0f * c[i] : b[i];
      return 0;
    }
  }
  return 0;
}

constexpr int64_t kBlock = 1 << 14;  // elements per work unit (64 KiB)

// The probe's arrays, allocated and touched once; each kernel uses a prefix of them.
struct Arrays {
  Tensor a, b, c, sink;
};

// One launch of `passes` passes of kernel `k` over n elements, in blocks the device's
// cores share. Each core repeats its own blocks, so a working set that fits a core's
// cache is read from it. `sink` keeps the read kernel's sums alive.
void stream_kernel(Device& dev, Kernel k, Arrays& arr, int64_t n, int passes) {
  float* pa = arr.a.data<float>();
  const float* pb = arr.b.data<float>();
  const float* pc = arr.c.data<float>();
  float* ps = arr.sink.data<float>();
  LaunchSpec spec;
  spec.name = std::string("probe_stream_") + kernel_name(k);
  spec.work = (n + kBlock - 1) / kBlock;
  spec.grain = 1;
  spec.bytes = int64_t(passes) * arrays(k) * n * 4;
  spec.flops = k == Kernel::triad || k == Kernel::triad_nt ? int64_t(passes) * 2 * n : 0;
  spec.body = [=](int64_t lo, int64_t hi) {
    for (int p = 0; p < passes; ++p)
      for (int64_t blk = lo; blk < hi; ++blk) {
        float s = pass(k, pa, pb, pc, blk * kBlock, std::min(n, (blk + 1) * kBlock));
        if (k == Kernel::read) ps[blk] += s;
      }
  };
  launch(dev, std::move(spec), {&arr.b, &arr.c}, {&arr.a, &arr.sink});
}

int64_t elements(Kernel k, int64_t working_set) { return std::max<int64_t>(1024, working_set / arrays(k) / 4); }

// The best streaming rate at one working set: every kernel, the fastest wins.
StreamLevel measure_level(Device& dev, Arrays& arr, int64_t working_set, int repeats, double* copy, double* triad) {
  StreamLevel lv;
  lv.working_set_bytes = working_set;
  // Enough passes that a measurement moves 32 MiB at least: small sets run in microseconds.
  const int passes = int(std::clamp<int64_t>((int64_t(32) << 20) / working_set, 1, 256));
  for (Kernel k : {Kernel::read, Kernel::copy, Kernel::copy_nt, Kernel::triad, Kernel::triad_nt}) {
    if ((k == Kernel::copy_nt || k == Kernel::triad_nt) && !kHaveStreamingStores) continue;
    const int64_t n = elements(k, working_set);
    stream_kernel(dev, k, arr, n, 1);  // warm: the set into its level of the hierarchy
    Timing t = time_runs(dev, repeats, [&] { stream_kernel(dev, k, arr, n, passes); });
    double gbps = double(passes) * arrays(k) * double(n) * 4 / t.best / 1e9;
    if (k == Kernel::copy && copy) *copy = gbps;
    if (k == Kernel::triad && triad) *triad = gbps;
    if (k == Kernel::copy || k == Kernel::triad) lv.store_gbps = std::max(lv.store_gbps, gbps);
    if (gbps > lv.gbps) {
      lv.gbps = gbps;
      lv.kernel = kernel_name(k);
      lv.spread = t.spread;
    }
  }
  return lv;
}

}  // namespace

std::string DevicePeaks::to_json() const {
  nlohmann::ordered_json lv = nlohmann::ordered_json::array();
  for (const StreamLevel& l : levels)
    lv.push_back({{"working_set_bytes", l.working_set_bytes}, {"gbps", l.gbps}, {"kernel", l.kernel},
                  {"spread", l.spread}, {"store_gbps", l.store_gbps}});
  return nlohmann::ordered_json{{"device", device},
                                {"stream_gbps", stream_gbps},
                                {"copy_gbps", copy_gbps},
                                {"triad_gbps", triad_gbps},
                                {"levels", lv},
                                {"spread", spread},
                                {"busy", busy()},
                                {"matmul_gflops", matmul_gflops},
                                {"matmul_n", matmul_n},
                                {"launch_ns", launch_ns},
                                {"method", method}}
      .dump();
}

std::string DevicePeaks::summary() const {
  std::string kernel = levels.empty() ? "" : levels.back().kernel;
  std::string out = fmt::format("device peaks: stream {:.1f} GB/s ({}; copy {:.1f}), f32 matmul {:.1f} GFLOP/s; "
                                "spread {:.0f}% over repetitions\n",
                                stream_gbps, kernel, copy_gbps, matmul_gflops, 100 * spread);
  return out + busy_warning(spread);
}

std::string busy_warning(double spread) {
  if (!(spread > DevicePeaks::kBusySpread)) return "";
  return fmt::format("warning: the probe's repetitions differ by {:.0f}%: the machine was busy, its peaks read low\n"
                     "  (save a quiet probe with `opscope probe --save FILE` and pass --peaks FILE)\n",
                     100 * spread);
}

DevicePeaks measure_peaks(Device& dev, const ProbeOptions& o) {
  if (o.copy_bytes < (int64_t(1) << 20) || o.copy_bytes > (int64_t(1) << 32))
    fail("probe", "copy_bytes {} out of range (1 MiB to 4 GiB)", o.copy_bytes);
  if (o.matmul_n < 16 || o.matmul_n > 8192) fail("probe", "matmul_n {} out of range (16 to 8192)", o.matmul_n);
  if (o.repeats < 1 || o.repeats > 100) fail("probe", "repeats {} out of range (1 to 100)", o.repeats);
  DevicePeaks p;
  p.device = dev.description();
  dev.synchronize();

  // Working sets from a core's cache to beyond the last level, ending at copy_bytes.
  std::vector<int64_t> sets;
  for (int64_t ws = o.copy_bytes; ws >= (int64_t(256) << 10) && sets.size() < 4; ws /= 8) sets.push_back(ws);
  std::reverse(sets.begin(), sets.end());
  {
    const int64_t big = sets.back();
    Arrays arr{full({elements(Kernel::copy, big)}, 0.0, DType::f32, &dev),
               full({elements(Kernel::read, big)}, 1.0, DType::f32, &dev),
               full({elements(Kernel::triad, big)}, 2.0, DType::f32, &dev),
               zeros({elements(Kernel::read, big) / kBlock + 1}, DType::f32, &dev)};
    for (int64_t ws : sets) {
      bool last = ws == big;
      p.levels.push_back(
          measure_level(dev, arr, ws, o.repeats, last ? &p.copy_gbps : nullptr, last ? &p.triad_gbps : nullptr));
    }
  }
  p.stream_gbps = p.levels.back().gbps;
  p.spread = p.levels.back().spread;
  {
    const int64_t m = o.matmul_n;
    Tensor x = randn({m, m}, 1, DType::f32, &dev), y = randn({m, m}, 2, DType::f32, &dev);
    matmul(x, y);  // warm: the BLAS threads start
    Timing t = time_runs(dev, o.repeats, [&] { matmul(x, y); });
    p.matmul_gflops = 2.0 * double(m) * double(m) * double(m) / t.best / 1e9;
    p.matmul_n = m;
  }
  {
    // Tiny adds queued back to back: the cost of a launch with no work in it, on the
    // slower of the host (op + submit) and the device (schedule, run, retire).
    constexpr int kLaunches = 2000;
    Tensor a = ones({8}, DType::f32, &dev), b = ones({8}, DType::f32, &dev);
    Timing t = time_runs(dev, o.repeats, [&] {
      for (int i = 0; i < kLaunches; ++i) add(a, b);
    });
    p.launch_ns = t.best / kLaunches * 1e9;
  }
  p.method = fmt::format(
      "best of {}: STREAM read/copy/triad (plain and non-temporal stores) at working sets of {} MiB f32 arrays on "
      "all cores, the fastest per size; f32 matmul {}x{}; {} back-to-back adds of 8 elements (wall time / launches)",
      o.repeats,
      [&] {
        std::string s;
        for (int64_t ws : sets) s += (s.empty() ? "" : ", ") + fmt::format("{:g}", double(ws) / double(1 << 20));
        return s;
      }(),
      o.matmul_n, o.matmul_n, 2000);
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
