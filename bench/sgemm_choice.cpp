// Which BLAS the CPU kernels call (issue #32: "measure before choosing"): OpenBLAS's
// cblas_sgemm against oneDNN's dnnl_sgemm on one core, on the shapes the kernels hand a
// core (matmul's 64-row slices, conv's im2col blocks of 64 output channels, 1x1 convs),
// alternated, median of 9. Prints GFLOP/s of each and the time ratio oneDNN / OpenBLAS.
//   build/bench/sgemm_choice
#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "timing.h"

extern "C" void openblas_set_num_threads(int);
extern "C" void omp_set_num_threads(int) noexcept;
extern "C" char* openblas_get_corename();

namespace {

struct Shape {
  const char* what;
  int m, n, k;
};

}  // namespace

int main() {
  openblas_set_num_threads(1);
  omp_set_num_threads(1);
  std::printf("one core; OpenBLAS core: %s\n", openblas_get_corename());
  const Shape shapes[] = {
      {"probe 1024^3", 1024, 1024, 1024},
      {"linear slice 64 x 768 -> 3072", 64, 3072, 768},
      {"linear slice 64 x 2048 -> 5632", 64, 5632, 2048},
      {"conv 3x3 64ch, 56x56 block", 64, 256, 576},
      {"conv 3x3 128ch, 28x28 block", 64, 256, 1152},
      {"conv 3x3 256ch, 14x14", 64, 196, 2304},
      {"conv 3x3 512ch, 7x7", 64, 49, 4608},
      {"conv 1x1 256->64, 56x56", 64, 3136, 256},
      {"conv 1x1 1024->256, 14x14", 64, 196, 1024},
  };
  double log_sum = 0;
  int count = 0;
  for (const Shape& s : shapes) {
    std::vector<float> a(size_t(s.m) * s.k, 0.5f), b(size_t(s.k) * s.n, 0.25f), c(size_t(s.m) * s.n);
    auto blas = [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), s.n, 0.0f,
                  c.data(), s.n);
    };
    auto dnnl = [&] { dnnl_sgemm('N', 'N', s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), s.n, 0.0f, c.data(), s.n); };
    const int reps = std::max(3, int(2e9 / (2.0 * s.m * s.n * s.k)));  // ~10-20 ms a sample
    auto [t_blas, t_dnnl] = opscope::bench::alternated(blas, dnnl, reps);
    const double flops = 2.0 * s.m * s.n * s.k, ratio = t_dnnl / t_blas;
    std::printf("%-34s m %4d n %4d k %4d  OpenBLAS %6.1f  oneDNN %6.1f GFLOP/s  oneDNN/OpenBLAS time %.2f\n", s.what,
                s.m, s.n, s.k, flops / t_blas / 1e9, flops / t_dnnl / 1e9, ratio);
    log_sum += std::log(ratio), ++count;
  }
  std::printf("geometric mean of oneDNN/OpenBLAS time: %.2f\n", std::exp(log_sum / count));
}
