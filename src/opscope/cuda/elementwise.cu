// Launchers of the elementwise kernels (elementwise.cuh).
#include "opscope/cuda/check.h"
#include "opscope/cuda/elementwise.cuh"
#include "opscope/cuda/launchers.h"

namespace opscope::cuda_impl {

namespace {

constexpr int kThreads = 256;

unsigned grid_for(int64_t work) { return cuda_impl::grid_for(work, kThreads); }

template <class T, int kIn>
void map_t(void* out, const void* a, const void* b, int64_t n, const Layout* layout, dev::MapOp f, cudaStream_t s) {
  T* o = static_cast<T*>(out);
  const T* pa = static_cast<const T*>(a);
  const T* pb = static_cast<const T*>(b);
  switch (dev::map_path(layout != nullptr, out, a, kIn == 2 ? b : nullptr)) {
    case dev::MapPath::strided:
      dev::map_strided<T, kIn><<<grid_for(n), kThreads, 0, s>>>(o, pa, pb, n, *layout, f);
      break;
    case dev::MapPath::vec:
      dev::map_vec<T, kIn><<<grid_for(n / dev::Pack<T>::N + 1), kThreads, 0, s>>>(o, pa, pb, n, f);
      break;
    case dev::MapPath::flat:
      dev::map_flat<T, kIn><<<grid_for(n), kThreads, 0, s>>>(o, pa, pb, n, f);
      break;
  }
  OPSCOPE_CUDA_CHECK_LAUNCH();
}

template <int kIn>
void map(Dt dt, void* out, const void* a, const void* b, int64_t n, const Layout* layout, dev::MapOp f,
         cudaStream_t s) {
  switch (dt) {
    case Dt::f32: return map_t<float, kIn>(out, a, b, n, layout, f, s);
    case Dt::bf16: return map_t<dev::bf16, kIn>(out, a, b, n, layout, f, s);
    case Dt::f16: return map_t<dev::f16, kIn>(out, a, b, n, layout, f, s);
    default: throw_cuda_error(cudaErrorInvalidValue, "elementwise kernel (integer dtype)");
  }
}

int64_t numel(const Layout& l) {
  int64_t n = 1;
  for (int d = 0; d < l.ndim; ++d) n *= l.shape[d];
  return n;
}

template <class D>
void copy_from(Dt src_dt, D* dst, const void* src, int64_t n, const Layout& l, cudaStream_t s) {
  switch (src_dt) {
    case Dt::f32: dev::copy_convert<D, float><<<grid_for(n), kThreads, 0, s>>>(dst, static_cast<const float*>(src), n, l); break;
    case Dt::bf16: dev::copy_convert<D, dev::bf16><<<grid_for(n), kThreads, 0, s>>>(dst, static_cast<const dev::bf16*>(src), n, l); break;
    case Dt::f16: dev::copy_convert<D, dev::f16><<<grid_for(n), kThreads, 0, s>>>(dst, static_cast<const dev::f16*>(src), n, l); break;
    default: throw_cuda_error(cudaErrorInvalidValue, "copy kernel (integer to floating conversion)");
  }
}

int bytes_of(Dt dt) { return dt == Dt::f32 || dt == Dt::i32 ? 4 : dt == Dt::i64 ? 8 : 2; }

}  // namespace

void launch_unary(int op, Dt dt, void* out, const void* x, int64_t n, const Layout* layout, cudaStream_t s) {
  map<1>(dt, out, x, nullptr, n, layout, dev::MapOp{0, op, 0.0f}, s);
}

void launch_binary(int op, Dt dt, void* out, const void* a, const void* b, int64_t n, const Layout* layout,
                   cudaStream_t s) {
  map<2>(dt, out, a, b, n, layout, dev::MapOp{1, op, 0.0f}, s);
}

void launch_binary_scalar(int op, Dt dt, void* out, const void* x, float c, bool scalar_first, int64_t n,
                          const Layout* layout, cudaStream_t s) {
  map<1>(dt, out, x, nullptr, n, layout, dev::MapOp{scalar_first ? 3 : 2, op, c}, s);
}

void launch_copy(Dt dst_dt, Dt src_dt, void* dst, const void* src, const Layout& l, cudaStream_t s) {
  int64_t n = numel(l);
  if (n == 0) return;
  if (dst_dt == src_dt && dense_row_major(l, 0) && dense_row_major(l, 1)) {
    OPSCOPE_CUDA_CHECK(cudaMemcpyAsync(dst, src, size_t(n) * size_t(bytes_of(dst_dt)), cudaMemcpyDeviceToDevice, s));
    return;
  }
  if (dst_dt == src_dt) {
    switch (bytes_of(dst_dt)) {
      case 2: dev::copy_bits<uint16_t><<<grid_for(n), kThreads, 0, s>>>(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), n, l); break;
      case 4: dev::copy_bits<uint32_t><<<grid_for(n), kThreads, 0, s>>>(static_cast<uint32_t*>(dst), static_cast<const uint32_t*>(src), n, l); break;
      default: dev::copy_bits<uint64_t><<<grid_for(n), kThreads, 0, s>>>(static_cast<uint64_t*>(dst), static_cast<const uint64_t*>(src), n, l); break;
    }
  } else {
    switch (dst_dt) {
      case Dt::f32: copy_from(src_dt, static_cast<float*>(dst), src, n, l, s); break;
      case Dt::bf16: copy_from(src_dt, static_cast<dev::bf16*>(dst), src, n, l, s); break;
      case Dt::f16: copy_from(src_dt, static_cast<dev::f16*>(dst), src, n, l, s); break;
      default: throw_cuda_error(cudaErrorInvalidValue, "copy kernel (floating to integer conversion)");
    }
  }
  OPSCOPE_CUDA_CHECK_LAUNCH();
}

void launch_fill(int bytes, void* dst, uint64_t bits, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  if (bits == 0) {
    OPSCOPE_CUDA_CHECK(cudaMemsetAsync(dst, 0, size_t(n) * size_t(bytes), s));
    return;
  }
  switch (bytes) {
    case 1: dev::fill_bits<uint8_t><<<grid_for(n), kThreads, 0, s>>>(static_cast<uint8_t*>(dst), uint8_t(bits), n); break;
    case 2: dev::fill_bits<uint16_t><<<grid_for(n), kThreads, 0, s>>>(static_cast<uint16_t*>(dst), uint16_t(bits), n); break;
    case 4: dev::fill_bits<uint32_t><<<grid_for(n), kThreads, 0, s>>>(static_cast<uint32_t*>(dst), uint32_t(bits), n); break;
    default: dev::fill_bits<uint64_t><<<grid_for(n), kThreads, 0, s>>>(static_cast<uint64_t*>(dst), bits, n); break;
  }
  OPSCOPE_CUDA_CHECK_LAUNCH();
}

}  // namespace opscope::cuda_impl
