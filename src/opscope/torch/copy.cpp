// Factories, copies and views of privateuseone tensors: what torch needs before any op
// can run (empty, empty_strided, _copy_from, resize_, the view ops, item()).
#include <ATen/EmptyTensor.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/resize_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/SymIntArrayRef.h>

#include "opscope/core/error.h"
#include "opscope/kernels/cpu/copy.h"
#include "opscope/runtime/runtime.h"
#include "opscope/torch/factories.h"
#include "opscope/torch/kernels.h"

namespace opscope::torch_bridge {

namespace {
const c10::DispatchKeySet kDeviceKeys(c10::DispatchKey::PrivateUse1);

// 1.13 does not check the index of privateuseone:N; the factories do.
void check_device(c10::optional<c10::Device> d) {
  if (d) device(d->has_index() ? d->index() : 0);
}
}  // namespace

at::Tensor empty(c10::SymIntArrayRef size, c10::optional<at::ScalarType> dtype, c10::optional<at::Layout>,
                 c10::optional<at::Device> dev, c10::optional<bool>, c10::optional<at::MemoryFormat> memory_format) {
  check_device(dev);
  AtenScope scope("aten::empty", {});  // names an out-of-memory error
  return at::detail::empty_generic(c10::asIntArrayRefSlow(size), allocator(), kDeviceKeys,
                                   dtype.value_or(at::get_default_dtype_as_scalartype()), memory_format);
}

at::Tensor empty_strided(c10::SymIntArrayRef size, c10::SymIntArrayRef stride, c10::optional<at::ScalarType> dtype,
                         c10::optional<at::Layout>, c10::optional<at::Device> dev, c10::optional<bool>) {
  check_device(dev);
  AtenScope scope("aten::empty_strided", {});
  return at::detail::empty_strided_generic(c10::asIntArrayRefSlow(size), c10::asIntArrayRefSlow(stride), allocator(),
                                           kDeviceKeys, dtype.value_or(at::get_default_dtype_as_scalartype()));
}

void copy_into(const Tensor& dst, const Tensor& src) {
  if (dst.numel()) cpu_kernels::launch_copy(dst, src);
}

// Device ↔ host copies synchronize, as a pageable cudaMemcpy does; device → device copies
// (casts included) are one launch.
at::Tensor copy_from(const at::Tensor& src, const at::Tensor& dst, bool /*non_blocking*/) {
  // copy_ hands over src unbroadcast: expand it (torch's own error if it cannot).
  at::Tensor self = src.sizes() == dst.sizes() ? src : src.expand_as(dst);
  if (self.numel() == 0) return dst;
  // As torch's CPU copy_: the cores would read elements other cores have already written.
  at::assert_no_internal_overlap(dst);
  at::assert_no_partial_overlap(dst, self);
  if (on_device(self) && on_device(dst) && has_kernels({&self, &dst}, false)) {
    AtenScope scope("aten::copy_", {});
    copy_into(from_torch(dst, "aten::copy_"), from_torch(self, "aten::copy_"));
    return dst;
  }
  // A host copy: wait for the compute streams (also for launches still reading dst) and for
  // the last writers of both sides, then copy the memory as CPU tensors. As .cpu() under
  // CUDA, a collective in flight on a communication stream holds it up only when it writes
  // src or dst (a reader of dst there is ordered by work.wait(), as NCCL's).
  AtenScope scope("aten::copy_", {});
  Device& dev = device(0);
  for (int i = 0; i < dev.num_streams(); ++i)
    if (!dev.stream(i).engine()) dev.stream(i).synchronize();
  for (const at::Tensor* t : {static_cast<const at::Tensor*>(&self), &dst}) {
    if (!on_device(*t)) continue;
    if (!to_dtype(t->scalar_type())) {  // no opscope view of it: wait for everything
      dev.synchronize();
      break;
    }
    runtime::wait_written(from_torch(*t, "aten::copy_"));
  }
  at::Tensor s = on_device(self) ? cpu_alias_read(self) : self;
  at::Tensor d = on_device(dst) ? cpu_alias(dst) : dst;
  d.copy_(s);
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  if (dst.sizes() != self.sizes()) dst.resize_(self.sizes());
  return copy_from(self, dst, false);
}

const at::Tensor& resize_kernel(const at::Tensor& self, c10::SymIntArrayRef size, c10::optional<at::MemoryFormat> fmt) {
  // Growing copies the old bytes on the host: let the kernels writing them finish. An
  // empty storage (the out tensor of torch.arange(..., device=dev), of an empty()) has no
  // bytes to copy: waiting there stalled every decode step's host behind its device.
  at::IntArrayRef sz = c10::asIntArrayRefSlow(size);
  int64_t n = 1;
  for (int64_t d : sz) n *= d;
  const size_t have = self.storage().nbytes();
  if (have > 0 && size_t(n) * self.itemsize() + size_t(self.storage_offset()) * self.itemsize() > have)
    device(0).synchronize();
  return at::native::resize_(self, sz, fmt);
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  if (has_kernels({&self}, false)) {
    runtime::wait_written(from_torch(self, "aten::item"));  // rethrows a kernel error
  } else {
    device(0).synchronize();
  }
  return at::_local_scalar_dense(cpu_alias(self));
}

// ---- views: new TensorImpls over the same storage ----
at::Tensor view(const at::Tensor& self, c10::SymIntArrayRef size) {
  return at::native::view(self, c10::asIntArrayRefSlow(size));
}
at::Tensor as_strided(const at::Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
                      c10::optional<c10::SymInt> offset) {
  c10::optional<int64_t> off;
  if (offset) off = offset->expect_int();
  return at::native::as_strided_tensorimpl(self, c10::asIntArrayRefSlow(size), c10::asIntArrayRefSlow(stride), off);
}
at::Tensor reshape_alias(const at::Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride) {
  return at::native::_reshape_alias(self, c10::asIntArrayRefSlow(size), c10::asIntArrayRefSlow(stride));
}
at::Tensor unfold(const at::Tensor& self, int64_t dim, int64_t size, int64_t step) {
  return at::native::unfold(self, dim, size, step);
}
at::Tensor view_as_real(const at::Tensor& self) { return at::native::view_as_real(self); }
at::Tensor view_as_complex(const at::Tensor& self) { return at::native::view_as_complex(self); }

// ---- fill ----
at::Tensor& fill_scalar_(at::Tensor& self, const at::Scalar& value) {
  if (!has_kernels({&self}, false)) {
    device(0).synchronize();
    cpu_alias(self).fill_(value);
    return self;
  }
  Tensor t = from_torch(self, "aten::fill_");
  AtenScope scope("aten::fill_", {&t});
  if (t.is_contiguous()) {
    if (t.numel()) cpu_kernels::launch_fill(t, value.toDouble());
  } else {
    Tensor tmp = runtime::allocate(t.shape(), t.dtype(), t.device());
    if (t.numel()) cpu_kernels::launch_fill(tmp, value.toDouble());
    copy_into(t, tmp);
  }
  return self;
}
at::Tensor& fill_tensor_(at::Tensor& self, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "[aten::fill_] the value must be a 0-dim tensor, got ", value.dim(), " dims");
  return fill_scalar_(self, value.item());
}
at::Tensor& zero_kernel(at::Tensor& self) { return fill_scalar_(self, 0); }

at::Tensor deliver(Form f, const Tensor& r, const at::Tensor& dst, const char* op) {
  if (f == Form::functional) return to_torch(r);
  if (f == Form::out) {
    if (!on_device(dst)) fail(op, "out= is on {}, expected privateuseone", dst.device().str());
    at::native::resize_output(dst, c10::IntArrayRef(r.shape().begin(), r.shape().size()));
  } else if (dst.sizes() != c10::IntArrayRef(r.shape().begin(), r.shape().size())) {
    fail(op, "the in-place result has shape {} but self has shape {}", r.shape().str(), c10::str(dst.sizes()));
  }
  copy_into(from_torch(dst, op), r);
  return dst;
}

}  // namespace opscope::torch_bridge
