// Elementwise kernels: unary, binary (broadcast through strides) and tensor-scalar ops,
// copies with dtype conversion, fills. Three paths per kernel:
//   vec      every operand contiguous and 16-byte aligned: 128-bit loads and stores in
//            a grid-stride loop, the tail (n % Pack::N) by the first threads;
//   flat     contiguous but misaligned: one element per iteration;
//   strided  up to 8 dims, each operand's offset from the row-major index.
// The op is a kernel argument (a uniform switch), not a template parameter: a few
// kernels per dtype keep nvcc's build short, and these kernels are bound by memory.
#pragma once
#include "opscope/cuda/common.cuh"
#include "opscope/cuda/layout.h"

namespace opscope::cuda_impl::dev {

// Values of cpu_kernels::UnaryOp and BinaryOp.
enum : int { kNeg, kAbs, kExp, kLog, kSqrt, kRsqrt, kSin, kCos, kTanh, kSigmoid, kSilu, kGelu, kRelu, kGeluTanh,
             kHardswish, kHardsigmoid, kFloor, kCeil, kRound, kTrunc, kSign, kLog2, kReciprocal, kErf,
             kExpm1, kLog1p, kTan, kAtan, kAsin, kAcos, kSinh, kCosh, kErfinv, kUnaryOps };
enum : int { kAdd, kSub, kMul, kDiv, kPow, kMaximum, kMinimum, kDivTrunc, kDivFloor, kRemainder, kBinaryOps };

__device__ __forceinline__ float sigmoid_f(float x) {
  float e = expf(-fabsf(x));  // <= 1: neither tail overflows
  return x >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
}

__device__ __forceinline__ float unary_f(int op, float x) {
  switch (op) {
    case kNeg: return -x;
    case kAbs: return fabsf(x);
    case kExp: return expf(x);
    case kLog: return logf(x);
    case kSqrt: return sqrtf(x);
    case kRsqrt: return 1.0f / sqrtf(x);
    case kSin: return sinf(x);
    case kCos: return cosf(x);
    case kTanh: return tanhf(x);
    case kSigmoid: return sigmoid_f(x);
    case kSilu: return x == -INFINITY ? -0.0f : x * sigmoid_f(x);
    case kGelu: return 0.5f * x * erfcf(-x * 0.70710678118654752f);
    case kRelu: return x > 0.0f ? x : (x != x ? x : 0.0f);
    case kGeluTanh: return x * sigmoid_f(1.5957691216057308f * (x + 0.044715f * x * x * x));  // x/2 (1 + tanh z)
    case kHardswish: return x * fminf(fmaxf(x + 3.0f, 0.0f), 6.0f) / 6.0f;
    case kHardsigmoid: return fminf(fmaxf(x + 3.0f, 0.0f), 6.0f) / 6.0f;
    case kFloor: return floorf(x);
    case kCeil: return ceilf(x);
    case kRound: return rintf(x);  // half to even, as torch.round
    case kTrunc: return truncf(x);
    case kSign: return x != x ? x : float(x > 0.0f) - float(x < 0.0f);
    case kLog2: return log2f(x);
    case kReciprocal: return 1.0f / x;
    case kErf: return erff(x);
    case kExpm1: return expm1f(x);
    case kLog1p: return log1pf(x);
    case kTan: return tanf(x);
    case kAtan: return atanf(x);
    case kAsin: return asinf(x);
    case kAcos: return acosf(x);
    case kSinh: return sinhf(x);
    case kCosh: return coshf(x);
    case kErfinv: return erfinvf(x);
  }
  return x;  // not reached: kUnaryOps covers cpu_kernels::UnaryOp (CudaKernelsEmu.EveryUnaryOpMatchesTheCpuKernel)
}

__device__ __forceinline__ float binary_f(int op, float a, float b) {
  switch (op) {
    case kAdd: return a + b;
    case kSub: return a - b;
    case kMul: return a * b;
    case kDiv: return a / b;
    case kPow: return powf(a, b);
    case kMaximum: return (a != a || b != b) ? a + b : fmaxf(a, b);  // NaN from either side
    case kMinimum: return (a != a || b != b) ? a + b : fminf(a, b);
    case kDivTrunc: return truncf(a / b);
    case kDivFloor: {  // as the CPU kernel (elementwise_binary.cpp): floor through fmod
      if (b == 0.0f) return a / b;
      float mod = fmodf(a, b), d = (a - mod) / b;
      if (mod != 0.0f && ((b < 0.0f) != (mod < 0.0f))) d -= 1.0f;
      if (d == 0.0f) return copysignf(0.0f, a / b);
      float fl = floorf(d);
      return d - fl > 0.5f ? fl + 1.0f : fl;
    }
    case kRemainder: {  // as the CPU kernel: fmod, moved by b where its sign is not b's
      float r = fmodf(a, b);
      return (r != 0.0f && ((r < 0.0f) != (b < 0.0f))) ? r + b : r;
    }
  }
  return a;  // not reached: kBinaryOps covers cpu_kernels::BinaryOp (CudaKernelsEmu.EveryBinaryOpMatchesTheCpuKernel)
}

// The op of one launch: unary (kIn 1), binary (kIn 2), or with a scalar (kIn 1).
struct MapOp {
  int kind;  // 0 unary, 1 binary, 2 scalar-right, 3 scalar-left
  int op;
  float c;
};
// A free function, not a member: the emulator builds __device__ as `static`.
__device__ __forceinline__ float apply(const MapOp& f, float a, float b) {
  switch (f.kind) {
    case 0: return unary_f(f.op, a);
    case 1: return binary_f(f.op, a, b);
    case 2: return binary_f(f.op, a, f.c);
    default: return binary_f(f.op, f.c, a);
  }
}

// Element offsets of the row-major index i in each of the K operands of `l`.
template <int K>
__device__ __forceinline__ void layout_offsets(const Layout& l, int64_t i, int64_t* off) {
#pragma unroll
  for (int k = 0; k < K; ++k) off[k] = 0;
  for (int d = l.ndim - 1; d >= 0; --d) {
    int64_t n = l.shape[d], idx = i % n;
    i /= n;
#pragma unroll
    for (int k = 0; k < K; ++k) off[k] += idx * l.stride[k][d];
  }
}

// Which kernel a map launch takes (host code, shared with the tests): strided when the
// operands need a layout, the 128-bit path only when out and every input start 16-byte
// aligned (a view's offset can break it; a null b is not loaded), else flat.
enum class MapPath : int { strided, vec, flat };
inline MapPath map_path(bool strided, const void* out, const void* a, const void* b) {
  auto al = [](const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; };
  if (strided) return MapPath::strided;
  return al(out) && al(a) && (!b || al(b)) ? MapPath::vec : MapPath::flat;
}

template <class T, int kIn>
__global__ void map_vec(T* __restrict__ out, const T* __restrict__ a, const T* __restrict__ b, int64_t n, MapOp f) {
  constexpr int N = Pack<T>::N;
  int64_t packs = n / N, stride = int64_t(gridDim.x) * blockDim.x, t0 = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t p = t0; p < packs; p += stride) {
    Pack<T> pa = reinterpret_cast<const Pack<T>*>(a)[p], pb, po;
    if (kIn == 2) pb = reinterpret_cast<const Pack<T>*>(b)[p];
#pragma unroll
    for (int j = 0; j < N; ++j) po.v[j] = from_f32<T>(apply(f, to_f32(pa.v[j]), kIn == 2 ? to_f32(pb.v[j]) : 0.0f));
    reinterpret_cast<Pack<T>*>(out)[p] = po;
  }
  for (int64_t i = packs * N + t0; i < n; i += stride)
    out[i] = from_f32<T>(apply(f, to_f32(a[i]), kIn == 2 ? to_f32(b[i]) : 0.0f));
}

template <class T, int kIn>
__global__ void map_flat(T* __restrict__ out, const T* __restrict__ a, const T* __restrict__ b, int64_t n, MapOp f) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = from_f32<T>(apply(f, to_f32(a[i]), kIn == 2 ? to_f32(b[i]) : 0.0f));
}

template <class T, int kIn>
__global__ void map_strided(T* __restrict__ out, const T* __restrict__ a, const T* __restrict__ b, int64_t n,
                            Layout l, MapOp f) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t off[3];
    layout_offsets<3>(l, i, off);
    out[off[0]] = from_f32<T>(apply(f, to_f32(a[off[1]]), kIn == 2 ? to_f32(b[off[2]]) : 0.0f));
  }
}

// dst = src converted (floating types), strided both sides.
template <class D, class S>
__global__ void copy_convert(D* __restrict__ dst, const S* __restrict__ src, int64_t n, Layout l) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t off[2];
    layout_offsets<2>(l, i, off);
    dst[off[0]] = from_f32<D>(to_f32(src[off[1]]));
  }
}

// dst = src bit for bit (same dtype), strided both sides.
template <class B>
__global__ void copy_bits(B* __restrict__ dst, const B* __restrict__ src, int64_t n, Layout l) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t off[2];
    layout_offsets<2>(l, i, off);
    dst[off[0]] = src[off[1]];
  }
}

template <class B>
__global__ void fill_bits(B* __restrict__ dst, B v, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = v;
}

}  // namespace opscope::cuda_impl::dev
