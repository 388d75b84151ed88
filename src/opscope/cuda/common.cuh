// Device-side basics shared by the kernels: element types and their f32 conversions,
// 128-bit packs, warp and block reductions. Built by nvcc, and on the host by the tests
// under the CUDA emulator (tests/cuda_emulator.h plus the types the tests define).
#pragma once
#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif
#include <stdint.h>

namespace opscope::cuda_impl::dev {

using bf16 = __nv_bfloat16;
using f16 = __half;

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(bf16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_f32(f16 v) { return __half2float(v); }
template <class A, class B> struct same_type { static constexpr bool value = false; };
template <class A> struct same_type<A, A> { static constexpr bool value = true; };
// One template, no specializations: the emulator builds __device__ as `static`, which
// an explicit specialization may not carry.
template <class T> __device__ __forceinline__ T from_f32(float v) {
  if constexpr (same_type<T, bf16>::value) return __float2bfloat16(v);  // nearest even
  else if constexpr (same_type<T, f16>::value) return __float2half(v);
  else return v;
}

// 16 bytes of T: one 128-bit load or store when the address is 16-byte aligned.
template <class T> struct alignas(16) Pack {
  static constexpr int N = 16 / sizeof(T);
  T v[N];
};

// 16 bytes that a kernel reads or writes once (x and y of a norm): cache-streaming
// (__ldcs / __stcs, evict-first), so they do not push out what is read again (the
// weights). On the H200: rms_norm 16384x8192 f32 at 97% of cudaMemcpy with, 94% without.
// The emulator (no __CUDA_ARCH__) takes plain loads and stores: the same values.
template <class T>
__device__ __forceinline__ Pack<T> load_once(const T* p) {
#if defined(__CUDA_ARCH__)
  float4 t = __ldcs(reinterpret_cast<const float4*>(p));
  return *reinterpret_cast<const Pack<T>*>(&t);
#else
  return *reinterpret_cast<const Pack<T>*>(p);
#endif
}
template <class T>
__device__ __forceinline__ void store_once(T* p, const Pack<T>& v) {
#if defined(__CUDA_ARCH__)
  __stcs(reinterpret_cast<float4*>(p), *reinterpret_cast<const float4*>(&v));
#else
  *reinterpret_cast<Pack<T>*>(p) = v;
#endif
}

constexpr int kWarp = 32;

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum (or max) over the block; every thread gets the result. `scratch` holds 32 floats.
// Starts and ends with a barrier, so calls may follow each other on the same scratch.
template <bool kMax>
__device__ __forceinline__ float block_reduce(float v, float* scratch) {
  int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, nwarps = (blockDim.x + kWarp - 1) / kWarp;
  v = kMax ? warp_max(v) : warp_sum(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float r = lane < nwarps ? scratch[lane] : (kMax ? -INFINITY : 0.0f);
  r = kMax ? warp_max(r) : warp_sum(r);
  return r;
}

// Whether p is 16-byte aligned.
__device__ __forceinline__ bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace opscope::cuda_impl::dev
