#include "opscope/kernels/cpu/batch_norm.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "opscope/kernels/cpu/half_rows.h"

namespace opscope::cpu_kernels {

namespace {

constexpr int64_t kChunk = 4096;  // elements a bf16/f16 plane is converted in at a time

void affine(const float* x, float* y, int64_t n, float s, float b) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * s + b;
}

void plane_affine(const float* x, float* y, int64_t n, float s, float b, std::vector<float>&) { affine(x, y, n, s, b); }

// bf16/f16: through an f32 chunk, rounded once.
template <class T>
void plane_affine(const T* x, T* y, int64_t n, float s, float b, std::vector<float>& buf) {
  buf.resize(size_t(std::min(n, kChunk)));
  for (int64_t i = 0; i < n; i += kChunk) {
    const int64_t m = std::min(kChunk, n - i);
    row_to_f32(x + i, buf.data(), m);
    affine(buf.data(), buf.data(), m, s, b);
    row_from_f32(buf.data(), y + i, m);
  }
}

}  // namespace

LaunchSpec batch_norm_spec(const Tensor& out, const Tensor& x, const Tensor& mean, const Tensor& var,
                           const Tensor* weight, const Tensor* bias, double eps) {
  const int64_t N = x.shape()[0], C = x.shape()[1], plane = N > 0 && C > 0 ? x.numel() / (N * C) : 0;
  LaunchSpec spec;
  spec.name = fmt::format("batch_norm_{}", dtype_name(x.dtype()));
  spec.work = N * C;
  spec.grain = std::max<int64_t>(1, (int64_t(1) << 15) / std::max<int64_t>(plane, 1));  // ~32k elements a core at least
  spec.bytes = x.nbytes() + out.nbytes() + 4 * C * int64_t(sizeof(float));
  spec.flops = 2 * x.numel();
  const float* mp = mean.data<float>();
  const float* vp = var.data<float>();
  const float* wp = weight ? weight->data<float>() : nullptr;
  const float* bp = bias ? bias->data<float>() : nullptr;
  OPSCOPE_DISPATCH_FLOAT(x.dtype(), T, [&] {
    const T* xp = x.data<T>();
    T* yp = out.data<T>();
    spec.body = [=](int64_t begin, int64_t end) {
      std::vector<float> buf;
      for (int64_t u = begin; u < end; ++u) {
        const int64_t c = u % C;
        // As torch's CPU kernel: the inverse standard deviation in f32, then the weight.
        const float invstd = 1.0f / std::sqrt(vp[c] + float(eps));
        const float s = wp ? wp[c] * invstd : invstd;
        const float b = (bp ? bp[c] : 0.0f) - mp[c] * s;
        plane_affine(xp + u * plane, yp + u * plane, plane, s, b, buf);
      }
    };
  });
  return spec;
}

}  // namespace opscope::cpu_kernels
