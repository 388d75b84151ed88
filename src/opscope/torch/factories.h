// The unboxed kernels of copy.cpp, registered by native_functions.cpp.
#pragma once
#include <ATen/ATen.h>

namespace opscope::torch_bridge {

at::Tensor empty(c10::SymIntArrayRef size, c10::optional<at::ScalarType> dtype, c10::optional<at::Layout> layout,
                 c10::optional<at::Device> dev, c10::optional<bool> pin, c10::optional<at::MemoryFormat> memory_format);
at::Tensor empty_strided(c10::SymIntArrayRef size, c10::SymIntArrayRef stride, c10::optional<at::ScalarType> dtype,
                         c10::optional<at::Layout> layout, c10::optional<at::Device> dev, c10::optional<bool> pin);
at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking);
at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst);
const at::Tensor& resize_kernel(const at::Tensor& self, c10::SymIntArrayRef size, c10::optional<at::MemoryFormat> fmt);
at::Scalar local_scalar_dense(const at::Tensor& self);
at::Tensor view(const at::Tensor& self, c10::SymIntArrayRef size);
at::Tensor as_strided(const at::Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
                      c10::optional<c10::SymInt> offset);
at::Tensor reshape_alias(const at::Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride);
at::Tensor unfold(const at::Tensor& self, int64_t dim, int64_t size, int64_t step);
at::Tensor view_as_real(const at::Tensor& self);
at::Tensor view_as_complex(const at::Tensor& self);
at::Tensor& fill_scalar_(at::Tensor& self, const at::Scalar& value);
at::Tensor& fill_tensor_(at::Tensor& self, const at::Tensor& value);
at::Tensor& zero_kernel(at::Tensor& self);

}  // namespace opscope::torch_bridge
