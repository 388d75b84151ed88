#include "opscope/kernels/cpu/rotary.h"

#include <fmt/format.h>

#include <algorithm>

#include "opscope/core/error.h"
#include "opscope/kernels/cpu/elementwise.h"
#include "opscope/kernels/cpu/strided.h"

namespace opscope::cpu_kernels {

namespace {

// One row of D = 2h: the first half takes -x[j + h] * sin[j], the second x[j - h] * sin[j].
// Unit strides: the two halves are plain loops the compiler vectorizes.
void rotary_row(float* __restrict o, const float* __restrict x, const float* __restrict c,
                const float* __restrict s, int64_t h) {
  for (int64_t j = 0; j < h; ++j) o[j] = x[j] * c[j] + -x[j + h] * s[j];
  for (int64_t j = h; j < 2 * h; ++j) o[j] = x[j] * c[j] + x[j - h] * s[j];
}

void rotary_row_strided(float* o, const float* x, int64_t xs, const float* c, int64_t cs, const float* s, int64_t ss,
                        int64_t h) {
  for (int64_t j = 0; j < 2 * h; ++j) {
    const float other = j < h ? -x[(j + h) * xs] : x[(j - h) * xs];
    o[j] = x[j * xs] * c[j * cs] + other * s[j * ss];
  }
}

void check_broadcasts(const Tensor& t, const Shape& to, const char* what) {
  if (!broadcasts_to(t.shape(), to))
    fail("rotary", "{} of shape {} does not broadcast to x's {}", what, t.shape().str(), to.str());
}

}  // namespace

LaunchSpec rotary_spec(const Tensor& out, const Tensor& x, const Tensor& cos, const Tensor& sin) {
  const Shape& shape = x.shape();
  const int nd = x.ndim();
  if (nd == 0 || x.dtype() != DType::f32 || cos.dtype() != DType::f32 || sin.dtype() != DType::f32)
    fail("rotary", "x, cos and sin must be f32 with x of at least one dim, got {} {}, {}, {}", dtype_name(x.dtype()),
         shape.str(), dtype_name(cos.dtype()), dtype_name(sin.dtype()));
  const int64_t D = shape[nd - 1];
  if (D % 2 != 0) fail("rotary", "x's last dim must be even (two halves to rotate), got {}", shape.str());
  if (out.shape() != shape || out.dtype() != DType::f32 || !out.is_contiguous())
    fail("rotary", "out must be a contiguous f32 {}, got {} {}", shape.str(), dtype_name(out.dtype()), out.shape().str());
  check_broadcasts(cos, shape, "cos");
  check_broadcasts(sin, shape, "sin");
  const Strides cst = broadcast_strides(cos, shape), sst = broadcast_strides(sin, shape);
  const Strides& xst = x.strides();
  const int64_t rows = D == 0 ? 0 : shape.numel() / D, h = D / 2;
  LaunchSpec spec;
  spec.name = kRotaryKernel;
  spec.work = rows;
  spec.grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(D, 1));  // rows of ~16 KB a unit
  spec.bytes = x.nbytes() + out.nbytes() + cos.nbytes() + sin.nbytes();
  spec.flops = 3 * shape.numel();
  const float *xp = x.data<float>(), *cp = cos.data<float>(), *sp = sin.data<float>();
  float* op = out.data<float>();
  spec.body = [=](int64_t b, int64_t e) {
    const bool unit = xst[nd - 1] == 1 && cst[nd - 1] == 1 && sst[nd - 1] == 1;
    for (int64_t r = b; r < e; ++r) {
      const float* xr = xp + offset_of(r, shape, xst, nd - 1);
      const float* cr = cp + offset_of(r, shape, cst, nd - 1);
      const float* sr = sp + offset_of(r, shape, sst, nd - 1);
      if (unit) rotary_row(op + r * D, xr, cr, sr, h);
      else rotary_row_strided(op + r * D, xr, xst[nd - 1], cr, cst[nd - 1], sr, sst[nd - 1], h);
    }
  };
  return spec;
}

}  // namespace opscope::cpu_kernels
