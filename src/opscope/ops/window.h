// Input checks that conv2d and max_pool2d share: an NCHW floating x and the window's
// stride, padding and dilation, each error naming the op.
#pragma once
#include "opscope/core/error.h"
#include "opscope/kernels/window2d.h"
#include "opscope/ops/ops.h"

namespace opscope::ops_detail {

inline void check_nchw(const char* op, const Tensor& x) {
  if (!x.defined()) fail(op, "x is undefined (default-constructed)");
  if (!is_floating(x.dtype())) fail(op, "x has dtype {}, not a floating type (f32, bf16, f16)", dtype_name(x.dtype()));
  if (x.ndim() != 4) fail(op, "x has shape {}; it must be (N, C, H, W)", x.shape().str());
}

// The window's parameters into g (kernel size set by the caller).
inline void set_window(const char* op, kernels::Window2d& g, Size2 stride, Size2 padding, Size2 dilation) {
  for (int a = 0; a < 2; ++a) {
    if (stride[a] < 1) fail(op, "stride ({}, {}) must be at least 1", stride[0], stride[1]);
    if (padding[a] < 0) fail(op, "padding ({}, {}) must not be negative", padding[0], padding[1]);
    if (dilation[a] < 1) fail(op, "dilation ({}, {}) must be at least 1", dilation[0], dilation[1]);
  }
  g.sh = stride[0], g.sw = stride[1], g.ph = padding[0], g.pw = padding[1], g.dh = dilation[0], g.dw = dilation[1];
}

// Output size with the window inside the padded input, or "[op] ..." saying why not.
inline void set_output_size(const char* op, kernels::Window2d& g, bool ceil_mode) {
  g.oh = kernels::window_out_size(g.h, g.kh, g.sh, g.ph, g.dh, ceil_mode);
  g.ow = kernels::window_out_size(g.w, g.kw, g.sw, g.pw, g.dw, ceil_mode);
  if (g.oh < 1 || g.ow < 1)
    fail(op, "the window {}x{} (dilation {}, {}) is larger than the padded input {}x{} (padding {}, {})", g.kh, g.kw,
         g.dh, g.dw, g.h + 2 * g.ph, g.w + 2 * g.pw, g.ph, g.pw);
}

}  // namespace opscope::ops_detail
