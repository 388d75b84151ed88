// The privateuseone device: its guard (which device and stream is current), its
// allocator (opscope's CachingAllocator) and the tensor conversions of bridge.h.
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <fmt/format.h>

#include <string_view>

#include "opscope/core/error.h"
#include "opscope/torch/bridge.h"
#include "opscope/torch/compat.h"

namespace opscope::torch_bridge {

int device_count() { return 1; }

Device& device(int64_t index) {
  if (index < 0 || index >= device_count())
    fail(kBackendName, "device index {} is out of range: opscope has {} device(s), {}:0 to {}", index, device_count(),
         kBackendName, device_count() - 1);
  return cpu();
}

namespace {

// ---- allocator ----
void delete_storage(void* ctx) { delete static_cast<std::shared_ptr<Storage>*>(ctx); }

struct OpscopeAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) const override {
    Device& dev = device(0);
    Block b;
    try {
      b = dev.allocator().allocate(nbytes);
    } catch (const opscope::Error& e) {
      const char* op = OpScope::current();
      out_of_memory(op[0] ? op : "privateuseone", e.what());
    }
    auto* st = new std::shared_ptr<Storage>(std::make_shared<Storage>(dev, b));
    // An idle block (the host may write it at once: copies from torch, fallbacks'
    // outputs), then used in order on this thread's stream like the runtime's own.
    if (dev.allocator().stream_ordered()) (*st)->home = &current_stream(dev);
    void* p = (*st)->block.ptr;
    return {p, st, &delete_storage, c10::Device(c10::DeviceType::PrivateUse1, 0)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
};
OpscopeAllocator g_allocator;

// ---- device guard: one device; streams are opscope's (id = opscope stream id) ----
struct GuardImpl final : c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;
  c10::DeviceType type() const override { return kType; }
  c10::Device exchangeDevice(c10::Device d) const override {
    device(d.index());
    return {kType, 0};
  }
  c10::Device getDevice() const override { return {kType, 0}; }
  void setDevice(c10::Device d) const override { device(d.index()); }
  void uncheckedSetDevice(c10::Device) const noexcept override {}
  c10::Stream getStream(c10::Device d) const noexcept override {
    return c10::Stream(c10::Stream::UNSAFE, d, current_stream(cpu()).id());
  }
  c10::Stream exchangeStream(c10::Stream s) const noexcept override { return getStream(s.device()); }
  c10::DeviceIndex deviceCount() const noexcept override { return c10::DeviceIndex(device_count()); }
};
C10_REGISTER_GUARD_IMPL(PrivateUse1, GuardImpl);

// Registered at load: factories and copies to privateuseone allocate through it.
struct RegisterAllocator {
  RegisterAllocator() { c10::SetAllocator(c10::DeviceType::PrivateUse1, &g_allocator); }
} g_register_allocator;

std::shared_ptr<Storage> storage_of(const at::Tensor& t) {
  void* ctx = t.storage().data_ptr().get_context();
  if (t.storage().data_ptr().get_deleter() != &delete_storage)
    fail("privateuseone", "the tensor's memory did not come from opscope's allocator");
  return *static_cast<std::shared_ptr<Storage>*>(ctx);
}

}  // namespace

c10::Allocator* allocator() { return &g_allocator; }

std::optional<DType> to_dtype(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return DType::f32;
    case at::kBFloat16: return DType::bf16;
    case at::kHalf: return DType::f16;
    case at::kInt: return DType::i32;
    case at::kLong: return DType::i64;
    case at::kBool: return DType::b8;
    default: return std::nullopt;
  }
}

at::ScalarType to_scalar_type(DType t) {
  switch (t) {
    case DType::f32: return at::kFloat;
    case DType::bf16: return at::kBFloat16;
    case DType::f16: return at::kHalf;
    case DType::i32: return at::kInt;
    case DType::i64: return at::kLong;
    case DType::b8: return at::kBool;
  }
  return at::kFloat;
}

bool has_kernels(std::initializer_list<const at::Tensor*> ts, bool floating_only) {
  for (const at::Tensor* t : ts) {
    if (!t->defined()) continue;
    if (!on_device(*t) || t->dim() > kMaxDims || !t->storage()) return false;
    auto d = to_dtype(t->scalar_type());
    if (!d || (floating_only && !is_floating(*d))) return false;
  }
  return true;
}

Tensor from_torch(const at::Tensor& t, const char* op) {
  if (!on_device(t)) fail(op, "expected a tensor on privateuseone, got one on {}", t.device().str());
  auto d = to_dtype(t.scalar_type());
  if (!d) fail(op, "opscope has no kernels for dtype {}", c10::toString(t.scalar_type()));
  Shape shape(std::span<const int64_t>(t.sizes().data(), t.sizes().size()));
  Strides strides(std::span<const int64_t>(t.strides().data(), t.strides().size()));
  return Tensor(storage_of(t), shape, strides, t.storage_offset(), *d);
}

at::Tensor to_torch(const Tensor& t) {
  auto* ctx = new std::shared_ptr<Storage>(t.storage());
  size_t nbytes = t.storage()->block.size;
  c10::DataPtr dp(t.storage()->block.ptr, ctx, &delete_storage, c10::Device(c10::DeviceType::PrivateUse1, 0));
  c10::Storage st(c10::Storage::use_byte_size_t(), nbytes, std::move(dp), &g_allocator, /*resizable=*/true);
  auto out = at::detail::make_tensor<c10::TensorImpl>(std::move(st), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                                      caffe2::TypeMeta::fromScalarType(to_scalar_type(t.dtype())));
  out.unsafeGetTensorImpl()->set_sizes_and_strides(c10::IntArrayRef(t.shape().begin(), t.shape().size()),
                                                   c10::IntArrayRef(t.strides().begin(), t.strides().size()));
  out.unsafeGetTensorImpl()->set_storage_offset(t.offset());
  return out;
}

at::Tensor cpu_alias(const at::Tensor& t) {
  // The host may write through the alias: caches of these bytes must not trust them.
  storage_of(t)->host_writes.fetch_add(1, std::memory_order_relaxed);
  return cpu_alias_read(t);
}

at::Tensor cpu_alias_read(const at::Tensor& t) {
  const c10::Storage& src = t.storage();
  // Not owning: the caller holds the device tensor while the alias is in use.
  c10::DataPtr dp(src.data_ptr().get(), c10::Device(c10::DeviceType::CPU));
  c10::Storage st(c10::Storage::use_byte_size_t(), src.nbytes(), std::move(dp), nullptr, /*resizable=*/false);
  auto out = at::detail::make_tensor<c10::TensorImpl>(std::move(st), c10::DispatchKeySet(c10::DispatchKey::CPU),
                                                      t.dtype());
  out.unsafeGetTensorImpl()->set_sizes_and_strides(t.sizes(), t.strides());
  out.unsafeGetTensorImpl()->set_storage_offset(t.storage_offset());
  return out;
}

at::Tensor to_device_copy(const at::Tensor& cpu, int64_t device_index) {
  device(device_index);
  at::Tensor src = cpu.contiguous();
  at::Tensor out = at::detail::empty_generic(src.sizes(), &g_allocator, c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                             src.scalar_type(), c10::nullopt);
  if (src.nbytes()) std::memcpy(out.data_ptr(), src.data_ptr(), src.nbytes());
  return out;
}

void two_devices(const char* op, const at::Tensor& a, const at::Tensor& b) {
  fail(op, "Expected all tensors to be on the same device, but found at least two devices, {} and {}!", a.device().str(),
       b.device().str());
}

bool is_out_of_memory(const std::string& what) { return what.find("out of memory") != std::string::npos; }

void out_of_memory(const char* op, const std::string& what) {
  AllocatorStats st = device(0).allocator().stats();
  // The allocator's message names the op already ("[aten::mul] cpu:0: ..."): say it once.
  std::string_view detail = what;
  if (std::string prefix = fmt::format("[{}] ", op); detail.starts_with(prefix)) detail.remove_prefix(prefix.size());
  fail(op, "out of memory on privateuseone:0: {} (allocator: {} bytes allocated, {} reserved, peak {}); free "
       "tensors, call opscope.empty_cache() or use smaller shapes", detail, st.allocated, st.reserved,
       st.peak_allocated);
}

bool meta_mode() { return c10::impl::tls_is_dispatch_key_included(c10::DispatchKey::Meta); }

}  // namespace opscope::torch_bridge
