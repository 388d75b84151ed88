// The edge between torch and opscope, in one place: a torch tensor on the privateuseone
// device and an opscope::Tensor over the same memory (same strides, storage offset and
// dtype), both ways, without a copy. No opscope runtime header includes this one.
#pragma once
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <optional>
#include <span>

#include "opscope/runtime/device.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/tensor.h"

namespace opscope::torch_bridge {

// How many privateuseone devices there are (opscope's CPU device is privateuseone:0).
int device_count();
// The opscope device behind privateuseone:index; "[privateuseone] device index ..." if none.
Device& device(int64_t index);
// The privateuseone allocator: opscope's CachingAllocator of device 0. The DataPtr's context
// holds a reference to the opscope Storage, so a block torch frees returns to the cache only
// after every launch that uses it has retired.
c10::Allocator* allocator();

std::optional<DType> to_dtype(at::ScalarType t);
at::ScalarType to_scalar_type(DType t);
inline bool on_device(const at::Tensor& t) { return t.defined() && t.device().type() == c10::DeviceType::PrivateUse1; }
// A 0-dim CPU tensor (what torch makes of a Python number) may join a device op.
inline bool is_cpu_scalar(const at::Tensor& t) { return t.defined() && t.dim() == 0 && t.device().is_cpu(); }

// The opscope view of a device tensor. Throws "[op] ..." naming `op` when t is not on the
// device or its dtype has no opscope kernels (callers check has_kernels first).
Tensor from_torch(const at::Tensor& t, const char* op);
// The same for an optional operand (a bias, a weight): undefined stays undefined.
inline Tensor from_torch_opt(const at::Tensor& t, const char* op) { return t.defined() ? from_torch(t, op) : Tensor(); }
// A device tensor over the storage of an opscope tensor.
at::Tensor to_torch(const Tensor& t);
// True when every defined tensor is on the device with a dtype opscope computes in.
bool has_kernels(std::initializer_list<const at::Tensor*> ts, bool floating_only = true);
// A CPU tensor over the same memory as a device tensor (no copy). The caller keeps the
// device tensor alive and synchronizes first. It counts as a host write of the storage
// (Storage::host_writes): the caller may write through it.
at::Tensor cpu_alias(const at::Tensor& t);
// The same for a caller that only reads through it (a host copy's source): not a write, so
// what caches these bytes (a compiled matmul's packed weight) stays valid.
at::Tensor cpu_alias_read(const at::Tensor& t);
// A new device tensor with the values of a CPU tensor (synchronous host copy).
at::Tensor to_device_copy(const at::Tensor& cpu, int64_t device_index = 0);
// Throws torch's error for tensors on two devices.
[[noreturn]] void two_devices(const char* op, const at::Tensor& a, const at::Tensor& b);

// The framework op of a bridged aten op: names the kernels it launches (and their errors)
// "aten::add", records the op when the profiler records, and keeps the opscope ops called
// inside it from opening nested ops of their own.
using AtenScope = FrameworkOpScope;

// True when the thread runs under FakeTensor / meta tracing (Meta in the thread-local
// include set): the tensors have no data, so kernels hand the call to Meta.
bool meta_mode();

// Rethrows an out-of-memory error of the device as "[op] out of memory ... (allocator: ...)".
[[noreturn]] void out_of_memory(const char* op, const std::string& what);
bool is_out_of_memory(const std::string& what);

}  // namespace opscope::torch_bridge
