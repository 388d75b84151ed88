// The matmul paths against the ones they replace, on one core, on a 4-layer d=512
// decoder's per-core slices (128 tokens; its projections cut into one column chunk per
// core) and a 512^3 product; alternated, median of 9:
//  - f32: sgemm (packs B on every call) against PackedMatmul (B packed once, what a
//    compiled graph runs);
//  - bf16: converting both operands to f32 for sgemm and the result back (the old path)
//    against gemm_bf16 (oneDNN's matmul on the CPU's bf16 dot products).
// Prints GFLOP/s and each time ratio, and their geometric means.
//   build/bench/matmul_paths
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "timing.h"
#include "opscope/kernels/cpu/gemm_bf16.h"
#include "opscope/kernels/cpu/onednn.h"
#include "opscope/kernels/cpu/packed_matmul.h"
#include "opscope/kernels/cpu/sgemm.h"
#include "opscope/runtime/device.h"
#include "opscope/runtime/tensor.h"

using namespace opscope;

namespace {

struct Case {
  const char* what;
  int64_t m, n, k;
};

}  // namespace

int main() {
  cpu_kernels::onednn_on_this_core();
  const Case shapes[] = {
      {"q,k,v projection, a core's half", 128, 768, 512}, {"attention out, a core's half", 128, 256, 512},
      {"mlp up, a core's half", 128, 1024, 512},           {"mlp down, a core's half", 128, 256, 2048},
      {"64 rows, 512 -> 1536", 64, 1536, 512},             {"512^3", 512, 512, 512},
  };
  double log_f32 = 0, log_bf16 = 0;
  int count = 0;
  for (const Case& s : shapes) {
    const double flops = 2.0 * s.m * s.n * s.k;
    const int reps = std::max(3, int(1e9 / flops));
    // f32: x (m, k) @ w (n, k) transposed, as a Linear.
    Tensor x = randn({s.m, s.k}, 1), w = randn({s.n, s.k}, 2), out = empty({s.m, s.n});
    Tensor wt = w.transpose(0, 1);
    auto packed = cpu_kernels::PackedMatmul::make(x, wt, nullptr, 1);
    if (!packed) {
      std::printf("%s: not packed\n", s.what);
      return 1;
    }
    LaunchSpec spec = packed->spec(out, x, nullptr);
    const float* xp = x.data<float>();
    const float* wp = w.data<float>();
    float* op = out.data<float>();
    auto [t_sgemm, t_packed] = bench::alternated(
        [&] { cpu_kernels::sgemm("bench", false, true, s.m, s.n, s.k, xp, s.k, wp, s.k, 0.0f, op, s.n); },
        [&] { spec.body(0, spec.work); }, reps);
    // bf16: the same product in bf16.
    std::vector<bf16_t> xb(size_t(s.m * s.k)), wb(size_t(s.n * s.k)), ob(size_t(s.m * s.n));
    for (size_t i = 0; i < xb.size(); ++i) xb[i] = f32_to_bf16(xp[i]);
    for (size_t i = 0; i < wb.size(); ++i) wb[i] = f32_to_bf16(wp[i]);
    std::vector<float> fx(xb.size()), fw(wb.size()), fo(ob.size());
    auto [t_convert, t_bf16] = bench::alternated(
        [&] {
          for (size_t i = 0; i < xb.size(); ++i) fx[i] = bf16_to_f32(xb[i]);
          for (size_t i = 0; i < wb.size(); ++i) fw[i] = bf16_to_f32(wb[i]);
          cpu_kernels::sgemm("bench", false, true, s.m, s.n, s.k, fx.data(), s.k, fw.data(), s.k, 0.0f, fo.data(), s.n);
          for (size_t i = 0; i < ob.size(); ++i) ob[i] = f32_to_bf16(fo[i]);
        },
        [&] { cpu_kernels::gemm_bf16(xb.data(), s.k, 1, wb.data(), 1, s.k, ob.data(), s.n, s.m, s.n, s.k); }, reps);
    std::printf("%-34s m %4ld n %4ld k %4ld | f32: sgemm %6.1f packed %6.1f GFLOP/s, packed/sgemm %.2f | bf16: "
                "via f32 %6.1f native %6.1f GFLOP/s, native/via f32 %.2f\n",
                s.what, long(s.m), long(s.n), long(s.k), flops / t_sgemm / 1e9, flops / t_packed / 1e9,
                t_packed / t_sgemm, flops / t_convert / 1e9, flops / t_bf16 / 1e9, t_bf16 / t_convert);
    log_f32 += std::log(t_packed / t_sgemm), log_bf16 += std::log(t_bf16 / t_convert), ++count;
  }
  std::printf("geometric mean time: f32 packed/sgemm %.2f, bf16 native/via f32 %.2f\n", std::exp(log_f32 / count),
              std::exp(log_bf16 / count));
}
