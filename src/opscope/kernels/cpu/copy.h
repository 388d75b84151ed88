// Copy kernels: strided → contiguous with dtype conversion (contiguous(), to(),
// clone()), and host ↔ device copies.
#pragma once
#include <memory>
#include <vector>

#include "opscope/runtime/tensor.h"

namespace opscope::cpu_kernels {

// Queues a kernel that writes src's values (converted to dst's dtype) into dst, a tensor
// of the same shape with any (non-overlapping) strides: a view's writes reach its base.
void launch_copy(const Tensor& dst, const Tensor& src);
// Host → device: row-major values, converted to dst's dtype. The launch owns the host
// buffer until it has run, so the caller's vector may go away at once.
void launch_from_host_f32(const Tensor& dst, std::shared_ptr<const std::vector<float>> host);
void launch_from_host_i64(const Tensor& dst, std::shared_ptr<const std::vector<int64_t>> host);
// Device → host: converted to f32.
void launch_to_host_f32(float* host, const Tensor& src);
// Device → host, raw bytes of a contiguous view.
void launch_to_host_bytes(void* host, const Tensor& src);
// Fills a contiguous tensor.
void launch_fill(const Tensor& dst, double value);
void launch_arange(const Tensor& dst, double start, double step);
// Counter-based random numbers: element i depends only on (seed, i).
void launch_random(const Tensor& dst, uint64_t seed, bool normal, float a, float b);

}  // namespace opscope::cpu_kernels
