// Copies on the CUDA device: strided/converting copies and fills as kernels, host <->
// device through cudaMemcpyAsync (device-to-host through a pinned staging buffer).
#include <fmt/format.h>

#include <bit>
#include <cstring>

#include "opscope/core/error.h"
#include "opscope/cuda/check.h"
#include "opscope/cuda/cuda_device.h"
#include "opscope/cuda/kernels.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/runtime.h"

namespace opscope::cuda_kernels {

using cuda_impl::Dt;
using cuda_impl::Layout;

namespace {
Dt dt_of(DType t) { return Dt(int(t)); }
const char* op_name() {
  const char* o = OpScope::current();
  return *o ? o : "copy";
}
}  // namespace

void launch_copy(const Tensor& dst, const Tensor& src) {
  DType dt = dst.dtype(), st = src.dtype();
  if (dt == DType::b8 || st == DType::b8 || (dt != st && !(is_floating(dt) && is_floating(st))))
    fail(op_name(), "no CUDA kernel yet for converting {} to {} (shape {} on {})", dtype_name(st), dtype_name(dt),
         src.shape().str(), src.device().name());
  if (src.ndim() > cuda_impl::kMaxLayoutDims) fail(op_name(), "more than {} dims", cuda_impl::kMaxLayoutDims);
  Layout l;
  l.ndim = src.ndim();
  Strides dst_st = contiguous_strides(src.shape());
  for (int d = 0; d < l.ndim; ++d) {
    l.shape[d] = src.shape()[d];
    l.stride[0][d] = dst_st[d];
    l.stride[1][d] = src.strides()[d];
  }
  LaunchSpec spec;
  spec.name = dt == st ? fmt::format("copy_{}", dtype_name(dt)) : fmt::format("cast_{}_{}", dtype_name(st), dtype_name(dt));
  spec.bytes = src.numel() * int64_t(itemsize(dt) + itemsize(st));
  void* d = dst.data_ptr();
  const void* s = src.data_ptr();
  Dt ddt = dt_of(dt), sdt = dt_of(st);
  spec.body = [=](int64_t, int64_t) { cuda_impl::launch_copy(ddt, sdt, d, s, l, cuda_impl::current_stream()); };
  runtime::launch(dst.device(), std::move(spec), {&src}, {&dst});
}

void launch_fill(const Tensor& dst, double value) {
  uint64_t bits = 0;
  switch (dst.dtype()) {
    case DType::f32: bits = std::bit_cast<uint32_t>(float(value)); break;
    case DType::bf16: bits = f32_to_bf16(float(value)).bits; break;
    case DType::f16: bits = std::bit_cast<uint16_t>(f16_t(float(value))); break;
    case DType::i32: bits = uint32_t(int32_t(value)); break;
    case DType::i64: bits = uint64_t(int64_t(value)); break;
    case DType::b8: fail(op_name(), "no CUDA kernel yet for filling a bool tensor ({})", dst.device().name());
  }
  LaunchSpec spec;
  spec.name = fmt::format("fill_{}", dtype_name(dst.dtype()));
  spec.bytes = dst.nbytes();
  void* d = dst.data_ptr();
  int bytes = int(dst.itemsize());
  int64_t n = dst.numel();
  spec.body = [=](int64_t, int64_t) { cuda_impl::launch_fill(bytes, d, bits, n, cuda_impl::current_stream()); };
  runtime::launch(dst.device(), std::move(spec), {}, {&dst});
}

void launch_h2d(const Tensor& dst, const Tensor& src) {
  LaunchSpec spec;
  spec.name = "memcpy_h2d";
  spec.kind = Launch::Kind::copy_h2d;
  spec.bytes = 2 * src.nbytes();
  void* d = dst.data_ptr();
  const void* s = src.data_ptr();
  size_t n = size_t(src.nbytes());
  // Pageable source: the driver stages it before cudaMemcpyAsync returns, and the launch
  // keeps src's storage alive until the copy has completed in any case.
  spec.body = [=](int64_t, int64_t) {
    OPSCOPE_CUDA_CHECK(cudaMemcpyAsync(d, s, n, cudaMemcpyHostToDevice, cuda_impl::current_stream()));
  };
  runtime::launch(dst.device(), std::move(spec), {&src}, {&dst});
}

void copy_d2h(const Tensor& dst, const Tensor& src) {
  auto& dev = cuda_impl::as_cuda(src.device());
  size_t n = size_t(src.nbytes());
  cuda_impl::PinnedBuffer buf = dev.get_pinned(n);
  struct Return {
    cuda_impl::CudaDevice& dev;
    cuda_impl::PinnedBuffer buf;
    ~Return() { dev.put_pinned(buf); }
  } ret{dev, buf};
  LaunchSpec spec;
  spec.name = "memcpy_d2h";
  spec.kind = Launch::Kind::copy_d2h;
  spec.bytes = 2 * src.nbytes();
  void* h = buf.ptr;
  const void* s = src.data_ptr();
  spec.body = [=](int64_t, int64_t) {
    OPSCOPE_CUDA_CHECK(cudaMemcpyAsync(h, s, n, cudaMemcpyDeviceToHost, cuda_impl::current_stream()));
  };
  Stream& st = current_stream(src.device());
  runtime::launch(src.device(), std::move(spec), {&src}, {});
  st.synchronize();  // rethrows the errors of this stream's kernels, naming their ops
  std::memcpy(dst.data_ptr(), buf.ptr, n);
}

}  // namespace opscope::cuda_kernels
