// LaunchSpecs of the CUDA kernels: the layout work on the host at the op call (as the
// CPU kernels do it), a body that enqueues the kernel on the launch's stream.
#include <fmt/format.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "opscope/core/error.h"
#include "opscope/cuda/cuda_device.h"
#include "opscope/cuda/kernels.h"
#include "opscope/cuda/launchers.h"
#include "opscope/runtime/op_scope.h"

namespace opscope::cuda_kernels {

using cuda_impl::Dt;
using cuda_impl::Layout;

namespace {

const char* op_name() {
  const char* o = OpScope::current();
  return *o ? o : "cuda";
}

Dt dt_of(DType t) { return Dt(int(t)); }

void need_float(const Tensor& t) {
  if (!is_floating(t.dtype()))
    fail(op_name(), "no CUDA kernel yet for dtype {} (shape {} on {}); convert with .to(f32)", dtype_name(t.dtype()),
         t.shape().str(), t.device().name());
}

// The coalesced index space of out and its inputs; false when every operand is
// contiguous in out's order (the flat and vectorized paths).
template <int N>
bool make_layout(const Tensor& out, const std::array<const Tensor*, N - 1>& in, Layout& l) {
  Shape shape;
  std::array<Strides, N> st;
  cpu_kernels::elementwise_layout<N>(out, in, shape, st);
  bool flat = shape.size() <= 1;
  for (int k = 0; k < N && flat && shape.size() == 1; ++k) flat = st[k][0] == 1;
  if (flat) return false;
  l.ndim = shape.size();
  for (int d = 0; d < l.ndim; ++d) {
    l.shape[d] = shape[d];
    for (int k = 0; k < N; ++k) l.stride[k][d] = st[k][d];
  }
  return true;
}

// An elementwise launch: the layout work here, at the op call; the body hands `enqueue`
// the layout (null: every operand contiguous, the flat or 128-bit path) and the stream.
template <int N, class F>
LaunchSpec map_spec(std::string name, int64_t in_elements, const Tensor& out,
                    const std::array<const Tensor*, N - 1>& in, F enqueue) {
  LaunchSpec spec;
  spec.name = std::move(name);
  spec.bytes = (in_elements + out.numel()) * int64_t(out.itemsize());
  spec.flops = out.numel();
  Layout l;
  bool strided = make_layout<N>(out, in, l);
  spec.body = [=](int64_t, int64_t) { enqueue(strided ? &l : nullptr, cuda_impl::current_stream()); };
  return spec;
}

}  // namespace

LaunchSpec unary_spec(UnaryOp op, const Tensor& out, const Tensor& x) {
  need_float(x);
  void* o = out.data_ptr();
  const void* xp = x.data_ptr();
  int64_t n = out.numel();
  Dt dt = dt_of(x.dtype());
  return map_spec<2>(cpu_kernels::kernel_name(op, x.dtype()), cpu_kernels::distinct_elements(x), out, {&x},
                     [=](const Layout* l, cudaStream_t s) { cuda_impl::launch_unary(int(op), dt, o, xp, n, l, s); });
}

LaunchSpec binary_spec(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  need_float(a);
  void* o = out.data_ptr();
  const void* ap = a.data_ptr();
  const void* bp = b.data_ptr();
  int64_t n = out.numel();
  Dt dt = dt_of(a.dtype());
  return map_spec<3>(cpu_kernels::kernel_name(op, a.dtype(), false),
                     cpu_kernels::distinct_elements(a) + cpu_kernels::distinct_elements(b), out, {&a, &b},
                     [=](const Layout* l, cudaStream_t s) {
                       cuda_impl::launch_binary(int(op), dt, o, ap, bp, n, l, s);
                     });
}

LaunchSpec binary_scalar_spec(BinaryOp op, const Tensor& out, const Tensor& x, double s, bool scalar_first) {
  need_float(x);
  void* o = out.data_ptr();
  const void* xp = x.data_ptr();
  int64_t n = out.numel();
  Dt dt = dt_of(x.dtype());
  float c = float(s);
  return map_spec<2>(cpu_kernels::kernel_name(op, x.dtype(), true), cpu_kernels::distinct_elements(x), out, {&x},
                     [=](const Layout* l, cudaStream_t st) {
                       cuda_impl::launch_binary_scalar(int(op), dt, o, xp, c, scalar_first, n, l, st);
                     });
}

LaunchSpec softmax_spec(const Tensor& out, const Tensor& x, int axis) {
  need_float(x);
  const Shape& s = x.shape();
  int64_t outer = 1, len = s.size() ? s[axis] : 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= s[d];
  for (int d = axis + 1; d < s.size(); ++d) inner *= s[d];
  LaunchSpec spec;
  spec.name = fmt::format("{}_{}", inner == 1 ? "softmax" : "softmax_cols", dtype_name(x.dtype()));
  spec.bytes = x.nbytes() + out.nbytes();
  spec.flops = x.numel() * 20;
  void* y = out.data_ptr();
  const void* xp = x.data_ptr();
  Dt dt = dt_of(x.dtype());
  spec.body = [=](int64_t, int64_t) {
    cuda_impl::launch_softmax(dt, y, xp, outer, len, inner, cuda_impl::current_stream());
  };
  return spec;
}

LaunchSpec rms_norm_spec(const Tensor& out, const Tensor& x, const Tensor* weight, float eps) {
  need_float(x);
  int64_t cols = x.shape().back(), rows = cols ? x.numel() / cols : 0;
  LaunchSpec spec;
  spec.name = fmt::format("rms_norm_{}", dtype_name(x.dtype()));
  spec.bytes = x.nbytes() + out.nbytes() + (weight ? weight->nbytes() : 0);
  spec.flops = x.numel() * 4;
  void* y = out.data_ptr();
  const void* xp = x.data_ptr();
  const void* wp = weight ? weight->data_ptr() : nullptr;
  Dt dt = dt_of(x.dtype());
  spec.body = [=](int64_t, int64_t) {
    cuda_impl::launch_rms_norm(dt, y, xp, wp, rows, cols, eps, cuda_impl::current_stream());
  };
  return spec;
}

LaunchSpec layer_norm_spec(const Tensor& out, const Tensor& x, const Tensor* weight, const Tensor* bias, float eps) {
  need_float(x);
  int64_t cols = x.shape().back(), rows = cols ? x.numel() / cols : 0;
  LaunchSpec spec;
  spec.name = fmt::format("layer_norm_{}", dtype_name(x.dtype()));
  spec.bytes = x.nbytes() + out.nbytes() + (weight ? weight->nbytes() : 0) + (bias ? bias->nbytes() : 0);
  spec.flops = x.numel() * 8;
  void* y = out.data_ptr();
  const void* xp = x.data_ptr();
  const void* wp = weight ? weight->data_ptr() : nullptr;
  const void* bp = bias ? bias->data_ptr() : nullptr;
  Dt dt = dt_of(x.dtype());
  spec.body = [=](int64_t, int64_t) {
    cuda_impl::launch_layer_norm(dt, y, xp, wp, bp, rows, cols, eps, cuda_impl::current_stream());
  };
  return spec;
}

LaunchSpec reduce_spec(ReduceKind kind, const Tensor& out, const Tensor& x, std::span<const int> axes,
                       int64_t correction) {
  need_float(x);
  int nd = x.ndim();
  std::array<bool, kMaxDims> red{};
  for (int a : axes) red[a] = true;
  // Rows: x contiguous and the reduced axes are exactly its trailing dims.
  int first = nd;
  while (first > 0 && red[first - 1]) --first;
  bool tail_only = true;
  for (int d = 0; d < first; ++d) tail_only = tail_only && !red[d];
  bool rows = x.is_contiguous() && tail_only;
  int64_t len = 1;
  for (int d = 0; d < nd; ++d)
    if (red[d]) len *= x.shape()[d];
  LaunchSpec spec;
  spec.name = fmt::format("{}_{}_{}", cpu_kernels::reduce_name(kind), rows ? "rows" : "strided", dtype_name(x.dtype()));
  spec.bytes = x.nbytes() + out.nbytes();
  spec.flops = x.numel() * (kind == ReduceKind::var ? 4 : 1);
  void* o = out.data_ptr();
  const void* xp = x.data_ptr();
  Dt dt = dt_of(x.dtype());
  int k = int(kind);
  if (rows) {
    int64_t outer = out.numel();
    spec.body = [=](int64_t, int64_t) {
      cuda_impl::launch_reduce_rows(k, dt, o, xp, outer, len, correction, cuda_impl::current_stream());
    };
    return spec;
  }
  Layout kept, redl;
  cuda_impl::reduce_layouts(nd, x.shape().begin(), x.strides().begin(), red.data(), kept, redl);
  spec.body = [=](int64_t, int64_t) {
    cuda_impl::launch_reduce_strided(k, dt, o, xp, kept, redl, correction, cuda_impl::current_stream());
  };
  return spec;
}

LaunchSpec concat_spec(const Tensor& out, std::span<const Tensor> xs, int axis, int64_t start) {
  struct Piece {
    void* dst;
    const void* src;
    Layout layout;
  };
  auto pieces = std::make_shared<std::vector<Piece>>();
  int64_t pos = start, bytes = 0;
  char* base = static_cast<char*>(out.data_ptr());
  for (const Tensor& x : xs) {
    if (x.numel() > 0) {
      cuda_impl::ConcatPiece c =
          cuda_impl::concat_piece(out.ndim(), out.shape().begin(), axis, pos, x.shape().begin(), x.strides().begin());
      pieces->push_back(Piece{base + c.dst_offset * int64_t(out.itemsize()), x.data_ptr(), c.layout});
      bytes += 2 * x.nbytes();
    }
    pos += x.shape()[axis];
  }
  LaunchSpec spec;
  spec.name = fmt::format("concat_{}", dtype_name(out.dtype()));
  spec.work = pieces->empty() ? 0 : 1;
  spec.bytes = bytes;
  Dt dt = dt_of(out.dtype());
  spec.body = [=](int64_t, int64_t) {
    for (const Piece& p : *pieces) cuda_impl::launch_copy(dt, dt, p.dst, p.src, p.layout, cuda_impl::current_stream());
  };
  return spec;
}

LaunchSpec embedding_spec(const Tensor& out, const Tensor& weight, const Tensor& indices) {
  need_float(weight);
  int64_t V = weight.shape()[0], D = weight.shape()[1], n = indices.numel();
  LaunchSpec spec;
  spec.name = fmt::format("embedding_{}", dtype_name(weight.dtype()));
  spec.bytes = indices.nbytes() + 2 * out.nbytes();
  void* o = out.data_ptr();
  const void* w = weight.data_ptr();
  const void* idx = indices.data_ptr();
  int idx_bytes = int(indices.itemsize());
  int64_t ws = weight.strides()[0];
  Dt dt = dt_of(weight.dtype());
  spec.body = [=](int64_t, int64_t) {
    cuda_impl::launch_embedding(dt, o, w, idx, idx_bytes, n, D, V, ws, cuda_impl::current_error_slot(),
                                cuda_impl::current_stream());
  };
  return spec;
}

}  // namespace opscope::cuda_kernels
