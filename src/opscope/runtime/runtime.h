// The runtime layer: between a framework op (which validated its inputs and inferred
// the output) and the device (whose cores execute). It allocates outputs and queues
// kernel launches, tracking which stream last wrote each storage.
#pragma once
#include <initializer_list>
#include <span>

#include "opscope/runtime/device.h"
#include "opscope/runtime/launch.h"
#include "opscope/runtime/tensor.h"

namespace opscope::runtime {

// Allocates a contiguous tensor on `dev` through its caching allocator.
Tensor allocate(const Shape& shape, DType dtype, Device& dev);

// Queues `spec` on the current stream of `dev`; the kernel reads `reads` and writes
// `writes` (their storage stays alive until it has run, and later readers on other
// streams wait for it). Returns the launch id.
uint64_t launch(Device& dev, LaunchSpec spec, std::span<const Tensor* const> reads,
                std::span<const Tensor* const> writes);
inline uint64_t launch(Device& dev, LaunchSpec spec, std::initializer_list<const Tensor*> reads,
                       std::initializer_list<const Tensor*> writes) {
  return launch(dev, std::move(spec), std::span<const Tensor* const>(reads.begin(), reads.size()),
                std::span<const Tensor* const>(writes.begin(), writes.size()));
}

// Waits until the last writer of `t` has run (a tensor read); rethrows its stream's error.
void wait_written(const Tensor& t);

}  // namespace opscope::runtime
