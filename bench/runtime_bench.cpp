// Runtime benchmarks, every figure a ratio measured in this run:
//  - bandwidth probe: STREAM-like copy and triad on the CPU device's cores (the limit);
//  - rms_norm f32 4096x4096: achieved GB/s as a fraction of the probe's copy bandwidth;
//  - mean / var / layer_norm / rms_norm / softmax over rows of 4096 (f32, bf16, f16), the same way;
//  - softmax over rows of 128 (attention's scores), plain and causal-masked, and rows of 197, the same way;
//  - naive RMSNorm (six ops) vs the built-in fused kernel at 1x4096, 32x4096, 4096x4096;
//  - 200 relu launches on 1 MiB queued, then one synchronize, against copy bandwidth;
//  - launch overhead: 10,000 launches of add on 8 elements, then one synchronize; and the
//    same adds paced by 1 us of host work each, timing the host's call alone.
//
//   runtime_bench                      everything above
//   runtime_bench --rms-norm [--json PATH]
//                                      the probe and fused rms_norm f32 at 4096x4096 and
//                                      16384x8192 only (the GPU check runs it at several
//                                      OPSCOPE_CPU_CORES to measure the device's scaling)
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "opscope/cases/rmsnorm.h"
#include "opscope/opscope.h"
#include "opscope/runtime/runtime.h"

#include "device_timing.h"

using namespace opscope;

namespace {

using bench::best_of;
using bench::now_s;

// STREAM copy (a = b) and triad (a = b + s*c) as kernels on the device's cores.
struct Probe {
  double copy_gbs, triad_gbs;
};
Probe bandwidth_probe(int64_t n) {
  Tensor a = zeros({n}), b = full({n}, 1.0), c = full({n}, 2.0);
  float* pa = a.data<float>();
  const float* pb = b.data<float>();
  const float* pc = c.data<float>();
  constexpr int64_t kBlock = 1 << 16;
  auto launch = [&](bool triad) {
    LaunchSpec spec;
    spec.name = triad ? "stream_triad" : "stream_copy";
    spec.work = (n + kBlock - 1) / kBlock;
    spec.grain = 1;
    spec.bytes = (triad ? 3 : 2) * n * 4;
    spec.body = [=](int64_t lo, int64_t hi) {
      int64_t i0 = lo * kBlock, i1 = std::min(n, hi * kBlock);
      if (!triad) {
        std::memcpy(pa + i0, pb + i0, size_t(i1 - i0) * 4);
      } else {
        for (int64_t i = i0; i < i1; ++i) pa[i] = pb[i] + 3.0f * pc[i];
      }
    };
    runtime::launch(cpu(), std::move(spec), {&b, &c}, {&a});
  };
  cpu().synchronize();
  double tc = best_of(10, [&] { launch(false); });
  double tt = best_of(10, [&] { launch(true); });
  return {2.0 * n * 4 / tc / 1e9, 3.0 * n * 4 / tt / 1e9};
}

// Fused rms_norm f32 on rows x hidden against the probe's copy rate; prints one line and
// returns its figures.
nlohmann::json rms_norm_vs_probe(int64_t rows, int64_t hidden, const Probe& p) {
  Tensor x = randn({rows, hidden}, 1), w = rand({hidden}, 2);
  double t = best_of(10, [&] { rms_norm(x, w); });
  double gbs = 2.0 * x.nbytes() / t / 1e9;
  fmt::print("rms_norm f32 {}x{}: {:.3f} ms, {:.1f} GB/s = {:.2f} of copy bandwidth (target >= 0.80)\n", rows, hidden,
             t * 1e3, gbs, gbs / p.copy_gbs);
  return {{"shape", fmt::format("{}x{}", rows, hidden)}, {"ms", t * 1e3}, {"gbs", gbs}, {"of_copy", gbs / p.copy_gbs}};
}

// --rms-norm: the probe and the fused kernel alone, as JSON too when asked.
// The probe's arrays are 512 MiB here: past any L3 (the H200's 16-core host has 300 MiB,
// where 128 MiB arrays read as 4x the memory's rate), like the 512 MiB x of 16384x8192.
int rms_norm_only(const char* json_path) {
  const int64_t probe_floats = int64_t(128) << 20;
  Probe p = bandwidth_probe(probe_floats);
  fmt::print("bandwidth probe (512 MiB arrays): copy {:.1f} GB/s, triad {:.1f} GB/s\n", p.copy_gbs, p.triad_gbs);
  nlohmann::json rows = nlohmann::json::array();
  rows.push_back(rms_norm_vs_probe(4096, 4096, p));
  rows.push_back(rms_norm_vs_probe(16384, 8192, p));
  if (json_path) {
    nlohmann::json j = {{"device", cpu().description()}, {"cores", cpu().num_cores()}, {"copy_gbs", p.copy_gbs},
                        {"triad_gbs", p.triad_gbs}, {"probe_array_bytes", probe_floats * 4}, {"rms_norm", rows}};
    std::string tmp = std::string(json_path) + ".tmp";
    std::ofstream(tmp) << j.dump(2) << "\n";
    if (std::rename(tmp.c_str(), json_path) != 0) {
      fmt::print(stderr, "runtime_bench: --json: cannot write '{}'\n", json_path);
      return 1;
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool only = false;
  const char* json_path = nullptr;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--rms-norm") {
      only = true;
    } else if (a == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else {
      fmt::print(stderr, "runtime_bench: unknown argument '{}' (usage: runtime_bench [--rms-norm [--json PATH]])\n", a);
      return 64;
    }
  }
  if (json_path && !only) {
    fmt::print(stderr, "runtime_bench: --json goes with --rms-norm\n");
    return 64;
  }
  fmt::print("{}\n\n", cpu().description());
  if (only) return rms_norm_only(json_path);

  // 1. The machine's limit.
  Probe p = bandwidth_probe(int64_t(32) << 20);  // 128 MiB per array
  fmt::print("bandwidth probe (128 MiB arrays): copy {:.1f} GB/s, triad {:.1f} GB/s\n", p.copy_gbs, p.triad_gbs);

  // 2. rms_norm f32 4096x4096 against the probe.
  rms_norm_vs_probe(4096, 4096, p);

  // 2b. Row reductions over the last axis (read-bound: x once, the row result is small)
  // against the probe; layer_norm reads x twice (mean, then squared deviations) and writes it.
  fmt::print("\nrow reductions, best of 30 (GB/s as a fraction of copy bandwidth):\n");
  for (DType dt : {DType::f32, DType::bf16, DType::f16})
  for (int64_t rows : {int64_t(32), int64_t(1024)}) {
    Tensor x = randn({rows, 4096}, 3, dt), w = ones({4096}, dt), b = zeros({4096}, dt);
    auto show = [&](const char* what, double s, double passes) {
      double gbs = passes * double(x.nbytes()) / s / 1e9;
      fmt::print("  {:>4} {:>4}x4096 {:<10} {:8.1f} us  {:6.1f} GB/s = {:.2f}\n", dtype_name(dt), rows, what, s * 1e6, gbs,
                 gbs / p.copy_gbs);
    };
    show("mean", best_of(30, [&] { mean(x, {-1}); }), 1);
    show("var", best_of(30, [&] { var(x, {-1}); }), 2);
    show("layer_norm", best_of(30, [&] { layer_norm(x, w, b); }), 3);
    show("rms_norm", best_of(30, [&] { rms_norm(x, w); }), 2);
    show("softmax", best_of(30, [&] { softmax(x, -1); }), 2);
  }

  // 2c. Softmax over short rows, attention's scores at 128 tokens: the row's max and sum
  // reductions weigh more there than in rows of 4096.
  fmt::print("\nsoftmax over rows of 128, best of 30 (GB/s as a fraction of copy bandwidth):\n");
  for (int64_t rows : {int64_t(1024), int64_t(8192)}) {
    Tensor x = randn({rows, 128}, 3);
    double s = best_of(30, [&] { softmax(x, -1); }), gbs = 2.0 * double(x.nbytes()) / s / 1e9;
    fmt::print("   f32 {:>4}x128  softmax    {:8.1f} us  {:6.1f} GB/s = {:.2f}\n", rows, s * 1e6, gbs, gbs / p.copy_gbs);
  }
  // The same rows under a causal mask (-inf above each 128x128 block's diagonal: a decoder's
  // scores), and rows of 197 (ViT-B/16's tokens: a partial vector at each row's end).
  {
    std::vector<float> v = randn({8192, 128}, 3).to_float_vector();
    for (int64_t i = 0; i < 8192; ++i)
      for (int64_t j = i % 128 + 1; j < 128; ++j) v[size_t(i * 128 + j)] = -INFINITY;
    for (auto [what, x] : {std::pair<const char*, Tensor>{"causal", from_host(v, {8192, 128})},
                           std::pair<const char*, Tensor>{"softmax", randn({2364, 197}, 3)}}) {
      double s = best_of(30, [&] { softmax(x, -1); }), gbs = 2.0 * double(x.nbytes()) / s / 1e9;
      fmt::print("   f32 {:>4}x{:<4} {:<10} {:8.1f} us  {:6.1f} GB/s = {:.2f}\n", x.shape()[0], x.shape()[1], what,
                 s * 1e6, gbs, gbs / p.copy_gbs);
    }
  }

  // 3. naive vs built-in.
  fmt::print("\nRMSNorm naive (six ops) vs built-in, device time (median of events):\n");
  fmt::print("{:>12} {:>12} {:>12} {:>8}\n", "shape", "naive ms", "builtin ms", "ratio");
  for (auto [r, h] : std::vector<std::pair<int64_t, int64_t>>{{1, 4096}, {32, 4096}, {4096, 4096}}) {
    cases::RmsNormSetup st;
    st.rows = r;
    st.hidden = h;
    st.iters = r >= 4096 ? 10 : 200;
    st.warmup = 5;
    auto t = cases::time_rms_norm(st, {"naive", "builtin"});
    fmt::print("{:>12} {:>12.4f} {:>12.4f} {:>7.2f}x\n", fmt::format("{}x{}", r, h), t[0].device_ms, t[1].device_ms,
               t[0].device_ms / t[1].device_ms);
  }

  // 4. Small ops queued, then one synchronize: a forward under Python, whose host queues the
  //    ops and then waits. 1 MiB is below the size at which the core on the host's CPU joins
  //    a launch while the host submits; while it waits, that core joins every launch.
  {
    Tensor x = randn({256, 1024}, 3);
    constexpr int kOps = 200;
    double t = best_of(10, [&] {
      Tensor y = x;
      for (int i = 0; i < kOps; ++i) y = relu(y);
    });
    double gbs = kOps * 2.0 * double(x.nbytes()) / t / 1e9;
    fmt::print("\nqueued small ops: {} relu on 1 MiB, then 1 synchronize: {:.3f} ms, {:.1f} GB/s = {:.2f} of copy "
               "bandwidth\n",
               kOps, t * 1e3, gbs, gbs / p.copy_gbs);
  }

  // 5. Launch overhead of a tiny op.
  {
    Tensor a = ones({8}), b = ones({8});
    cpu().synchronize();
    constexpr int kN = 10000;
    double best = 1e30;
    for (int rep = 0; rep < 5; ++rep) {
      double t0 = now_s();
      for (int i = 0; i < kN; ++i) add(a, b);
      cpu().synchronize();
      best = std::min(best, now_s() - t0);
    }
    fmt::print("\nlaunch overhead: add on 8 elements, {} launches + 1 synchronize: {:.0f} ns per op (target <= 500)\n",
               kN, best / kN * 1e9);
    // Paced, as under Python: ~1 us of other host work after each op, so the device keeps up
    // and the host fills each launch while a core reads the one before (the cross-core case).
    auto spin = [](double s) {
      for (double t0 = now_s(); now_s() - t0 < s;) {
      }
    };
    double in_add = 1e30;
    for (int rep = 0; rep < 5; ++rep) {
      double sum = 0;
      for (int i = 0; i < kN; ++i) {
        double t0 = now_s();
        { Tensor z = add(a, b); }
        sum += now_s() - t0;
        spin(1e-6);
      }
      cpu().synchronize();
      in_add = std::min(in_add, sum);
    }
    fmt::print("launch overhead, paced (1 us of host work between ops): {:.0f} ns per op in add(); "
               "paced / back-to-back {:.2f}\n",
               in_add / kN * 1e9, in_add / best);
  }
  return 0;
}
