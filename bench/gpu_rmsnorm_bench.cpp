// RMSNorm on cuda:0, every figure a ratio to a bandwidth probe measured in this run:
//  - probe: a 1 GiB device-to-device cudaMemcpyAsync and the device's own copy kernel
//    (clone of a 1 GiB f32 tensor), GB/s counting read + write; the better of the two is
//    "the probe";
//  - per shape and dtype: naive (the six ops of cases::naive_rms_norm), the built-in fused
//    rms_norm, and compiled (opscope::compile of the naive function: one NVRTC kernel),
//    µs per call, GB/s (read x + w, write y), % of the probe, and the max abs difference
//    against the CPU device's rms_norm.
// Timing: CUDA events recorded on the device's stream (as launches, in order with the
// calls) around N calls after a warm-up, the three impls alternated over 5 rounds, best
// of each; µs per call = elapsed / N. The host enqueues
// ahead of the GPU, so for the small shapes this is the launch path's rate, not the
// kernel's alone.
//
//   gpu_rmsnorm_bench [--json PATH] [--shapes 1x4096,32x4096] [--dtypes f32,bf16] [--ms 100]
// Without a GPU: exits 2 with "gpu_rmsnorm_bench: no CUDA GPU: <reason>".
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "opscope/cases/rmsnorm.h"
#include "opscope/cuda/cuda_device.h"
#include "opscope/opscope.h"
#include "opscope/runtime/cuda.h"
#include "opscope/runtime/runtime.h"

using namespace opscope;
using nlohmann::json;

namespace {

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "gpu_rmsnorm_bench: %s failed: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// Records `ev` on the device's stream in order with the launches around it.
void record(Device& gpu, cudaEvent_t ev) {
  LaunchSpec spec;
  spec.name = "bench_event";
  spec.body = [ev](int64_t, int64_t) { cuda_ok(cudaEventRecord(ev, cuda_impl::current_stream()), "cudaEventRecord"); };
  runtime::launch(gpu, std::move(spec), std::span<const Tensor* const>(), std::span<const Tensor* const>());
}

struct Timer {
  Device& gpu;
  cudaEvent_t a = nullptr, b = nullptr;
  explicit Timer(Device& g) : gpu(g) {
    cuda_ok(cudaEventCreate(&a), "cudaEventCreate");
    cuda_ok(cudaEventCreate(&b), "cudaEventCreate");
  }
  ~Timer() {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  // Milliseconds of `iters` calls of fn, between two CUDA events.
  double ms(int iters, const std::function<void()>& fn) {
    record(gpu, a);
    for (int i = 0; i < iters; ++i) fn();
    record(gpu, b);
    gpu.synchronize();
    float ms = 0;
    cuda_ok(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
    return ms;
  }
  // Calls of `fn` that fill a third of budget_ms, after a warm-up.
  int iterations(double budget_ms, const std::function<void()>& fn) {
    for (int i = 0; i < 3; ++i) fn();
    gpu.synchronize();
    double one = std::max(ms(3, fn) / 3, 1e-3);
    return int(std::clamp(budget_ms / 3 / one, 5.0, 2000.0));
  }
  // µs per call: warm-up, then as many calls as fill about `budget_ms`, best of 3 rounds.
  double us_per_call(double budget_ms, const std::function<void()>& fn) {
    int iters = iterations(budget_ms, fn);
    double best = 1e30;
    for (int r = 0; r < 3; ++r) best = std::min(best, ms(iters, fn) / iters);
    return best * 1e3;
  }
};

struct ProbeResult {
  double memcpy_gbs = 0, copy_kernel_gbs = 0;
  double best() const { return std::max(memcpy_gbs, copy_kernel_gbs); }
};

ProbeResult probe(Device& gpu, Timer& timer) {
  const int64_t n = int64_t(1) << 28;  // 1 GiB of f32
  const double bytes = 2.0 * double(n) * 4;
  Tensor src = full({n}, 1.0, DType::f32, &gpu), dst = empty({n}, DType::f32, &gpu);
  void* d = dst.data_ptr();
  const void* s = src.data_ptr();
  auto memcpy_d2d = [&] {
    LaunchSpec spec;
    spec.name = "probe_memcpy_d2d";
    spec.bytes = int64_t(bytes);
    spec.body = [=](int64_t, int64_t) {
      cuda_ok(cudaMemcpyAsync(d, s, size_t(n) * 4, cudaMemcpyDeviceToDevice, cuda_impl::current_stream()),
              "cudaMemcpyAsync");
    };
    runtime::launch(gpu, std::move(spec), {&src}, {&dst});
  };
  ProbeResult p;
  p.memcpy_gbs = bytes / (timer.us_per_call(100, memcpy_d2d) * 1e3);
  Tensor keep;
  p.copy_kernel_gbs = bytes / (timer.us_per_call(100, [&] { keep = src.clone(); }) * 1e3);
  return p;
}

struct Impl {
  std::string name;
  Tensor (*fn)(const Tensor&, const Tensor&, double);
};

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b, double rtol, double atol, bool& ok) {
  double d = 0;
  ok = a.size() == b.size();
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    double e = std::fabs(double(a[i]) - double(b[i]));
    if (!(e <= atol + rtol * std::fabs(double(b[i])))) ok = false;  // NaN fails too
    d = std::max(d, e);
  }
  return d;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, ','))
    if (!part.empty()) out.push_back(part);
  return out;
}

std::string cell_us(const json& r) {
  if (r.contains("error")) return "n/a";
  return fmt::format("{:.2f}", r["us"].get<double>());
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path;
  std::vector<std::string> shapes = {"1x4096", "32x4096", "4096x4096", "16384x8192"};
  std::vector<std::string> dtypes = {"f32", "bf16"};
  double budget_ms = 100;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "gpu_rmsnorm_bench: %s needs a value\n", a.c_str());
        std::exit(64);
      }
      return argv[++i];
    };
    if (a == "--json") json_path = value();
    else if (a == "--shapes") shapes = split(value());
    else if (a == "--dtypes") dtypes = split(value());
    else if (a == "--ms") budget_ms = std::stod(value());
    else {
      std::fprintf(stderr, "usage: gpu_rmsnorm_bench [--json PATH] [--shapes RxH,...] [--dtypes f32,bf16] [--ms N]\n");
      return 64;
    }
  }
  if (!cuda_available()) {
    std::fprintf(stderr, "gpu_rmsnorm_bench: no CUDA GPU: %s\n", cuda_unavailable_reason().c_str());
    if (!json_path.empty()) {
      std::ofstream(json_path) << json{{"error", "no CUDA GPU: " + cuda_unavailable_reason()}}.dump(2) << "\n";
    }
    return 2;
  }

  Device& gpu = cuda(0);
  Timer timer(gpu);
  json out;
  out["device"] = gpu.description();
  out["timing"] = "CUDA events on the device stream around N calls after warm-up; the impls alternated, best of 5 rounds";
  fmt::print("{}\n\n", gpu.description());

  ProbeResult p = probe(gpu, timer);
  out["probe"] = {{"memcpy_d2d_gbs", p.memcpy_gbs}, {"copy_kernel_gbs", p.copy_kernel_gbs}, {"best_gbs", p.best()},
                  {"bytes", "1 GiB read + 1 GiB written"}};
  fmt::print("bandwidth probe (1 GiB, read + write): cudaMemcpyAsync D2D {:.0f} GB/s, copy kernel {:.0f} GB/s\n\n",
             p.memcpy_gbs, p.copy_kernel_gbs);

  const std::vector<Impl> impls = {{"naive", cases::naive_rms_norm},
                                   {"fused", cases::builtin_rms_norm},
                                   {"compiled", cases::compiled_rms_norm}};
  fmt::print("| dtype | shape | impl | µs/call | GB/s | % of probe | max abs diff vs CPU | ok |\n");
  fmt::print("|---|---|---|---|---|---|---|---|\n");
  json rows = json::array();
  for (const std::string& dts : dtypes) {
    DType dt = dts == "bf16" ? DType::bf16 : dts == "f16" ? DType::f16 : DType::f32;
    double rtol = dt == DType::f32 ? 1e-4 : 1.0 / 64, atol = dt == DType::f32 ? 1e-5 : 1e-2;
    for (const std::string& sh : shapes) {
      int64_t R = 0, C = 0;
      cases::parse_shape(sh, R, C);
      Tensor xc = randn({R, C}, 1, dt), wc = rand({C}, 2, dt, nullptr, 0.5f, 1.5f);
      std::vector<float> ref = rms_norm(xc, wc, 1e-6).to(DType::f32).to_float_vector();
      Tensor x = xc.to(gpu), w = wc.to(gpu);
      double bytes = double(2 * R * C + C) * double(itemsize(dt));
      // Each impl warmed up and checked, then timed in 5 rounds that alternate the impls
      // (best of each): the small shapes are host-bound, and a machine's slow minute then
      // falls on every impl alike.
      struct Timed {
        json r;
        int iters = 0;
        double best_ms = 1e30;
      };
      std::vector<Timed> timed;
      for (const Impl& impl : impls) {
        Timed t;
        t.r = {{"dtype", dts}, {"shape", sh}, {"impl", impl.name}, {"bytes", bytes}};
        try {
          Tensor y;
          t.iters = timer.iterations(budget_ms, [&] { y = impl.fn(x, w, 1e-6); });
          bool ok = false;
          double diff = max_abs_diff(y.to(cpu()).to(DType::f32).to_float_vector(), ref, rtol, atol, ok);
          t.r["max_abs_diff"] = diff;
          t.r["ok"] = ok;
        } catch (const std::exception& e) {
          t.r["error"] = e.what();
          try {
            gpu.synchronize();  // a failed stream reports its error once; go on
          } catch (const std::exception&) {
          }
        }
        timed.push_back(std::move(t));
      }
      for (int round = 0; round < 5; ++round)
        for (size_t i = 0; i < impls.size(); ++i) {
          if (timed[i].r.contains("error")) continue;
          Tensor y;
          timed[i].best_ms = std::min(timed[i].best_ms, timer.ms(timed[i].iters, [&] { y = impls[i].fn(x, w, 1e-6); }) /
                                                            timed[i].iters);
        }
      for (size_t i = 0; i < impls.size(); ++i) {
        json& r = timed[i].r;
        if (!r.contains("error")) {
          double us = timed[i].best_ms * 1e3;
          r["us"] = us;
          r["gbs"] = bytes / (us * 1e3);
          r["pct_probe"] = 100.0 * r["gbs"].get<double>() / p.best();
        }
        if (r.contains("error"))
          fmt::print("| {} | {} | {} | n/a: {} | | | | FAIL |\n", dts, sh, impls[i].name,
                     r["error"].get<std::string>().substr(0, 200));
        else
          fmt::print("| {} | {} | {} | {} | {:.0f} | {:.1f}% | {:.3g} | {} |\n", dts, sh, impls[i].name, cell_us(r),
                     r["gbs"].get<double>(), r["pct_probe"].get<double>(), r["max_abs_diff"].get<double>(),
                     r["ok"].get<bool>() ? "ok" : "FAIL");
        std::fflush(stdout);
        rows.push_back(r);
      }
    }
  }
  out["results"] = rows;
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    f << out.dump(2) << "\n";
    if (!f) {
      std::fprintf(stderr, "gpu_rmsnorm_bench: cannot write %s\n", json_path.c_str());
      return 1;
    }
  }
  bool all_ok = true;
  for (const json& r : rows) all_ok = all_ok && !r.contains("error") && r["ok"].get<bool>();
  return all_ok ? 0 : 3;
}
