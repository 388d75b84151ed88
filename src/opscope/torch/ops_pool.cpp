// Pooling and interpolation: aten's avg_pool2d/3d, _adaptive_avg_pool2d/3d,
// adaptive_max_pool2d/3d, max_pool3d_with_indices and the upsample_* family, on opscope's
// kernels (ops/spatial.h). The 1-d forms are composites that reach the 2-d ones.
#include "opscope/core/error.h"
#include "opscope/ops/spatial.h"
#include "opscope/torch/kernels.h"

namespace opscope::torch_bridge {

namespace {

// The input as (N, C, *spatial): an unbatched (C, *spatial) one gets N = 1.
struct Batched {
  Tensor x;
  bool unbatched = false;
  Tensor restore(const Tensor& y) const { return unbatched ? y.squeeze(0) : y; }
};
Batched batched(const Tensor& x, int spatial) {
  if (x.ndim() == spatial + 1) return {x.unsqueeze(0), true};
  return {x, false};
}

std::optional<double> opt_double(const c10::IValue& v) {
  if (v.isNone()) return std::nullopt;
  return v.toDouble();
}

Interpolation mode_of(Interp i) {
  switch (i) {
    case Interp::nearest: return Interpolation::nearest;
    case Interp::nearest_exact: return Interpolation::nearest_exact;
    case Interp::linear: return Interpolation::linear;
    case Interp::cubic: return Interpolation::cubic;
  }
  return Interpolation::nearest;
}

}  // namespace

// avg_pool{2,3}d(self, kernel_size, stride=[], padding=0, ceil_mode, count_include_pad,
// divisor_override?) and their out forms.
template <int D, Form F>
void avg_pool_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  if ((self.dim() != D + 1 && self.dim() != D + 2) || !has_kernels({&self})) return c.fall_back();
  std::vector<int64_t> kernel = int_list(c.arg(1)), stride = int_list(c.arg(2)), padding = int_list(c.arg(3));
  if (stride.empty()) stride = kernel;
  std::optional<int64_t> divisor;
  if (!c.arg(6).isNone()) divisor = c.arg(6).toInt();
  run_unary<F>(c, [&](const Tensor& x) {
    Batched b = batched(x, D);
    return b.restore(avg_pool(b.x, kernel, stride, padding, c.arg(4).toBool(), c.arg(5).toBool(), divisor));
  });
}

// _adaptive_avg_pool{2,3}d(self, output_size)
template <int D>
void adaptive_avg_pool_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  if ((self.dim() != D + 1 && self.dim() != D + 2) || !has_kernels({&self})) return c.fall_back();
  std::vector<int64_t> size = int_list(c.arg(1));
  run_unary<Form::functional>(c, [&](const Tensor& x) {
    Batched b = batched(x, D);
    return b.restore(adaptive_avg_pool(b.x, size));
  });
}

// adaptive_max_pool{2,3}d(self, output_size) -> (out, indices), and its out form.
template <int D, Form F>
void adaptive_max_pool_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  if ((self.dim() != D + 1 && self.dim() != D + 2) || !has_kernels({&self})) return c.fall_back();
  std::vector<int64_t> size = int_list(c.arg(1));
  try {
    Tensor x = from_torch(self, c.name());
    AtenScope scope(c.name(), {&x});
    Batched b = batched(x, D);
    auto [y, idx] = adaptive_max_pool(b.x, size);
    y = b.restore(y), idx = b.restore(idx);
    if (F == Form::out) c.ret_tuple(deliver(F, y, c.tensor(2), c.name()), deliver(F, idx, c.tensor(3), c.name()));
    else c.ret_tuple(to_torch(y), to_torch(idx));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

// max_pool3d_with_indices(self, kernel_size, stride=[], padding=0, dilation=1, ceil_mode)
// and its out form (..., *, out, indices).
template <Form F>
void max_pool3d_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  if ((self.dim() != 4 && self.dim() != 5) || !has_kernels({&self})) return c.fall_back();
  std::vector<int64_t> kernel = int_list(c.arg(1)), stride = int_list(c.arg(2));
  if (stride.empty()) stride = kernel;
  try {
    Tensor x = from_torch(self, c.name());
    AtenScope scope(c.name(), {&x});
    Batched b = batched(x, 3);
    auto [y, idx] = max_pool_with_indices(b.x, kernel, stride, int_list(c.arg(3)), int_list(c.arg(4)), c.arg(5).toBool());
    y = b.restore(y), idx = b.restore(idx);
    if (F == Form::out) c.ret_tuple(deliver(F, y, c.tensor(6), c.name()), deliver(F, idx, c.tensor(7), c.name()));
    else c.ret_tuple(to_torch(y), to_torch(idx));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

// upsample_<mode><D>d(self, output_size, [align_corners,] scales...) and its out form,
// and the .vec form (input, output_size?, [align_corners,] scale_factors?).
template <Interp I, int D, Form F>
void upsample_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  if (self.dim() != D + 2 || !has_kernels({&self})) return c.fall_back();
  const bool corners = I == Interp::linear || I == Interp::cubic;
  const bool vec = op.schema().overload_name() == "vec";
  bool align_corners = corners && c.arg(2).toBool();
  size_t first_scale = corners ? 3 : 2;
  std::vector<int64_t> size;
  std::vector<std::optional<double>> scales;
  if (vec) {
    std::vector<double> factors;
    if (!c.arg(first_scale).isNone()) factors = c.arg(first_scale).toDoubleVector();
    if (!c.arg(1).isNone()) {
      size = int_list(c.arg(1));
    } else if (factors.size() == size_t(D)) {  // torch's compute_output_size
      for (int a = 0; a < D; ++a) size.push_back(int64_t(double(self.size(2 + a)) * factors[size_t(a)]));
    } else {
      return c.fall_back();  // torch's own error
    }
    for (int a = 0; a < D; ++a)
      scales.push_back(factors.empty() ? std::nullopt : std::optional<double>(factors[size_t(a)]));
  } else {
    size = int_list(c.arg(1));
    for (int a = 0; a < D; ++a) scales.push_back(opt_double(c.arg(first_scale + size_t(a))));
  }
  run_unary<F>(c, [&](const Tensor& x) { return interpolate(x, size, mode_of(I), align_corners, scales); });
}

// grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners): modes as
// torch numbers them (bilinear 0, nearest 1; zeros 0, border 1, reflection 2); bicubic
// falls back.
void grid_sampler_2d_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor &input = c.tensor(0), &grid = c.tensor(1);
  if (on_device(input) != on_device(grid)) two_devices(c.name(), input, grid);
  const int64_t mode = c.arg(2).toInt(), padding = c.arg(3).toInt();
  if (!has_kernels({&input, &grid}) || input.scalar_type() != grid.scalar_type() || mode < 0 || mode > 1 ||
      padding < 0 || padding > 2 || input.dim() != 4 || grid.dim() != 4 || grid.size(3) != 2 ||
      grid.size(0) != input.size(0) || input.size(2) == 0 || input.size(3) == 0)
    return c.fall_back();  // bicubic, or torch's own error
  try {
    Tensor x = from_torch(input, c.name()), g = from_torch(grid, c.name());
    AtenScope scope(c.name(), {&x, &g});
    auto pad = padding == 1 ? GridSamplePadding::border : padding == 2 ? GridSamplePadding::reflection
                                                                        : GridSamplePadding::zeros;
    c.ret(to_torch(grid_sample(x, g, mode == 1 ? GridSampleMode::nearest : GridSampleMode::bilinear, pad,
                               c.arg(4).toBool())));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

template void avg_pool_kernel<2, Form::functional>(const c10::OperatorHandle&, Stack*);
template void avg_pool_kernel<2, Form::out>(const c10::OperatorHandle&, Stack*);
template void avg_pool_kernel<3, Form::functional>(const c10::OperatorHandle&, Stack*);
template void avg_pool_kernel<3, Form::out>(const c10::OperatorHandle&, Stack*);
template void adaptive_avg_pool_kernel<2>(const c10::OperatorHandle&, Stack*);
template void adaptive_avg_pool_kernel<3>(const c10::OperatorHandle&, Stack*);
template void adaptive_max_pool_kernel<2, Form::functional>(const c10::OperatorHandle&, Stack*);
template void adaptive_max_pool_kernel<2, Form::out>(const c10::OperatorHandle&, Stack*);
template void adaptive_max_pool_kernel<3, Form::functional>(const c10::OperatorHandle&, Stack*);
template void adaptive_max_pool_kernel<3, Form::out>(const c10::OperatorHandle&, Stack*);
template void max_pool3d_kernel<Form::functional>(const c10::OperatorHandle&, Stack*);
template void max_pool3d_kernel<Form::out>(const c10::OperatorHandle&, Stack*);
#define OPSCOPE_UPSAMPLE(I, D)                                                                   \
  template void upsample_kernel<Interp::I, D, Form::functional>(const c10::OperatorHandle&, Stack*); \
  template void upsample_kernel<Interp::I, D, Form::out>(const c10::OperatorHandle&, Stack*);
OPSCOPE_UPSAMPLE(nearest, 1)
OPSCOPE_UPSAMPLE(nearest, 2)
OPSCOPE_UPSAMPLE(nearest, 3)
OPSCOPE_UPSAMPLE(nearest_exact, 1)
OPSCOPE_UPSAMPLE(nearest_exact, 2)
OPSCOPE_UPSAMPLE(nearest_exact, 3)
OPSCOPE_UPSAMPLE(linear, 1)
OPSCOPE_UPSAMPLE(linear, 2)
OPSCOPE_UPSAMPLE(linear, 3)
OPSCOPE_UPSAMPLE(cubic, 2)
#undef OPSCOPE_UPSAMPLE

}  // namespace opscope::torch_bridge
