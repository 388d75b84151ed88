#include "opscope/runtime/tensor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "opscope/compiler/trace.h"
#include "opscope/core/error.h"
#include "opscope/kernels/cpu/copy.h"
#include "opscope/kernels/dispatch.h"
#include "opscope/runtime/device.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/runtime.h"

namespace opscope {

Storage::~Storage() { device->allocator().free(block, home, last_use.load(std::memory_order_relaxed)); }

int64_t Tensor::dim(int64_t axis) const { return shape_[normalize_axis(axis, ndim(), "dim")]; }

bool Tensor::is_contiguous() const {
  int64_t expect = 1;
  for (int i = ndim() - 1; i >= 0; --i) {
    if (shape_[i] == 1) continue;
    if (strides_[i] != expect) return false;
    expect *= shape_[i];
  }
  return true;
}

namespace {
void check_defined(const Tensor& t, const char* op) {
  if (!t.defined()) fail(op, "the tensor is undefined (default-constructed)");
}

// Resolves one -1 in a requested shape against numel.
Shape infer_shape(const Shape& req, int64_t numel, const char* op, const Shape& from) {
  Shape s = req;
  int neg = -1;
  int64_t known = 1;
  for (int i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (neg >= 0) fail(op, "only one dimension can be -1, got {}", req.str());
      neg = i;
    } else if (s[i] < 0) {
      fail(op, "invalid dimension {} in shape {}", s[i], req.str());
    } else {
      known *= s[i];
    }
  }
  if (neg >= 0) {
    if (known == 0 || numel % known) fail(op, "cannot reshape {} into {}", from.str(), req.str());
    s[neg] = numel / known;
  }
  if (s.numel() != numel)
    fail(op, "cannot reshape {} ({} elements) into {} ({} elements)", from.str(), numel, req.str(), s.numel());
  return s;
}

// Strides for viewing (shape, strides) as `to` without a copy, if possible
// (the algorithm of torch's computeStride: merge runs of dims that are contiguous
// with each other, then split them into the new dims).
bool view_strides(const Shape& shape, const Strides& strides, const Shape& to, Strides& out) {
  out.resize(to.size());
  if (shape.numel() == 0 || shape.size() == 0) {  // empty, or a 0-d scalar: any layout works
    out = contiguous_strides(to);
    return true;
  }
  int view_d = to.size() - 1;
  int64_t chunk_base_stride = strides.size() ? strides.back() : 1;
  int64_t tensor_numel = 1, view_numel = 1;
  for (int d = shape.size() - 1; d >= 0; --d) {
    tensor_numel *= shape[d];
    if (d == 0 || (shape[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || to[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= to[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}
}  // namespace

Tensor Tensor::view(const Shape& shape) const {
  OPSCOPE_OP("view", this);
  check_defined(*this, "view");
  Shape s = infer_shape(shape, numel(), "view", shape_);
  Strides st;
  if (!view_strides(shape_, strides_, s, st))
    fail("view", "a tensor of shape {} with strides {} cannot be viewed as {}; use reshape (copies)", shape_.str(),
         strides_.str(), s.str());
  return Tensor(storage_, s, st, offset_, dtype_);
}

Tensor Tensor::reshape(const Shape& shape) const {
  OPSCOPE_OP("reshape", this);
  check_defined(*this, "reshape");
  Shape s = infer_shape(shape, numel(), "reshape", shape_);
  Strides st;
  if (view_strides(shape_, strides_, s, st)) return Tensor(storage_, s, st, offset_, dtype_);
  Tensor c = contiguous();
  return Tensor(c.storage_, s, contiguous_strides(s), c.offset_, dtype_);
}

Tensor Tensor::transpose(int64_t a, int64_t b) const {
  OPSCOPE_OP("transpose", this);
  check_defined(*this, "transpose");
  int x = normalize_axis(a, ndim(), "transpose"), y = normalize_axis(b, ndim(), "transpose");
  Shape s = shape_;
  Strides st = strides_;
  std::swap(s[x], s[y]);
  std::swap(st[x], st[y]);
  return Tensor(storage_, s, st, offset_, dtype_);
}

Tensor Tensor::permute(const std::vector<int64_t>& order) const {
  OPSCOPE_OP("permute", this);
  check_defined(*this, "permute");
  if (int(order.size()) != ndim())
    fail("permute", "order has {} entries but the tensor {} has {} dims", order.size(), shape_.str(), ndim());
  Shape s;
  Strides st;
  s.resize(ndim());
  st.resize(ndim());
  std::array<bool, kMaxDims> seen{};
  for (int i = 0; i < ndim(); ++i) {
    int a = normalize_axis(order[i], ndim(), "permute");
    if (seen[a]) fail("permute", "axis {} appears twice in the order", a);
    seen[a] = true;
    s[i] = shape_[a];
    st[i] = strides_[a];
  }
  return Tensor(storage_, s, st, offset_, dtype_);
}

Tensor Tensor::slice(int64_t axis, int64_t start, int64_t stop, int64_t step) const {
  OPSCOPE_OP("slice", this);
  check_defined(*this, "slice");
  int a = normalize_axis(axis, ndim(), "slice");
  if (step <= 0) fail("slice", "step must be positive, got {}", step);
  int64_t n = shape_[a];
  auto clampi = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
  int64_t lo = clampi(start), hi = clampi(stop);
  int64_t len = hi > lo ? (hi - lo + step - 1) / step : 0;
  Shape s = shape_;
  Strides st = strides_;
  s[a] = len;
  st[a] = strides_[a] * step;
  return Tensor(storage_, s, st, offset_ + lo * strides_[a], dtype_);
}

Tensor Tensor::expand(const Shape& shape) const {
  OPSCOPE_OP("expand", this);
  check_defined(*this, "expand");
  if (shape.size() < ndim())
    fail("expand", "cannot expand {} to {} (fewer dims)", shape_.str(), shape.str());
  Shape s = shape;
  Strides st;
  st.resize(shape.size());
  int lead = shape.size() - ndim();
  for (int i = 0; i < shape.size(); ++i) {
    int j = i - lead;
    int64_t have = j >= 0 ? shape_[j] : 1;
    if (shape[i] == -1) {
      if (j < 0) fail("expand", "-1 is not allowed for the new leading dim {} in {}", i, shape.str());
      s[i] = have;
    } else if (shape[i] < 0) {
      fail("expand", "invalid size {} at dim {} in {}", shape[i], i, shape.str());
    }
    if (j >= 0 && have == s[i]) {
      st[i] = strides_[j];
    } else if (have == 1) {
      st[i] = 0;
    } else {
      fail("expand", "cannot expand {} to {}: dim {} has size {}, not 1", shape_.str(), shape.str(), j, have);
    }
  }
  return Tensor(storage_, s, st, offset_, dtype_);
}

Tensor Tensor::unsqueeze(int64_t axis) const {
  OPSCOPE_OP("unsqueeze", this);
  check_defined(*this, "unsqueeze");
  int a = normalize_axis(axis, ndim() + 1, "unsqueeze");
  Shape s;
  Strides st;
  for (int i = 0, j = 0; i <= ndim(); ++i) {
    if (i == a) {
      s.push_back(1);
      st.push_back(j < ndim() ? strides_[j] * shape_[j] : 1);
    } else {
      s.push_back(shape_[j]);
      st.push_back(strides_[j]);
      ++j;
    }
  }
  return Tensor(storage_, s, st, offset_, dtype_);
}

Tensor Tensor::squeeze(int64_t axis) const {
  OPSCOPE_OP("squeeze", this);
  check_defined(*this, "squeeze");
  int a = normalize_axis(axis, ndim(), "squeeze");
  if (shape_[a] != 1) fail("squeeze", "dim {} of {} has size {}, not 1", a, shape_.str(), shape_[a]);
  Shape s;
  Strides st;
  for (int i = 0; i < ndim(); ++i)
    if (i != a) {
      s.push_back(shape_[i]);
      st.push_back(strides_[i]);
    }
  return Tensor(storage_, s, st, offset_, dtype_);
}

Tensor Tensor::contiguous() const {
  check_defined(*this, "contiguous");
  if (is_contiguous()) return *this;
  OPSCOPE_OP("contiguous", this);
  Tensor out = runtime::allocate(shape_, dtype_, device());
  kernels::launch_copy(out, *this);
  if (compiler::tracing()) compiler::record("contiguous", {this}, out);
  return out;
}

Tensor Tensor::clone() const {
  OPSCOPE_OP("clone", this);
  check_defined(*this, "clone");
  Tensor out = runtime::allocate(shape_, dtype_, device());
  kernels::launch_copy(out, *this);
  if (compiler::tracing()) compiler::record("clone", {this}, out);
  return out;
}

Tensor Tensor::to(DType dtype) const {
  check_defined(*this, "to");
  if (dtype == dtype_) return *this;
  OPSCOPE_OP("to", this);
  Tensor out = runtime::allocate(shape_, dtype, device());
  kernels::launch_copy(out, *this);
  if (compiler::tracing()) compiler::record("to", {this}, out, compiler::TraceAttrs::cast(dtype));
  return out;
}

Tensor Tensor::to(Device& dev) const {
  OPSCOPE_OP("to", this);
  check_defined(*this, "to");
  if (&dev == &device()) return *this;
  if (device().type() == DeviceType::cuda && dev.type() == DeviceType::cuda)
    return to(cpu()).to(dev);  // no peer copies yet: through the host
  Tensor src = contiguous();
  Tensor out = runtime::allocate(shape_, dtype_, dev);
  if (numel() == 0) return out;
#if OPSCOPE_HAVE_CUDA
  if (dev.type() == DeviceType::cuda) cuda_kernels::launch_h2d(out, src);
  else cuda_kernels::copy_d2h(out, src);
#else
  fail("to", "copies between {} and {} need the CUDA device, which this build has not", device().name(), dev.name());
#endif
  return out;
}

std::vector<float> Tensor::to_float_vector() const {
  OPSCOPE_OP("to_host", this);
  check_defined(*this, "to_host");
  std::vector<float> out(static_cast<size_t>(numel()));
  if (numel() == 0) return out;
  if (device().type() != DeviceType::cpu) return to(cpu()).to_float_vector();  // device to host, then read
  Stream& s = current_stream(device());
  cpu_kernels::launch_to_host_f32(out.data(), *this);
  s.synchronize();
  return out;
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  OPSCOPE_OP("to_host", this);
  check_defined(*this, "to_host");
  if (dtype_of<T>::value != dtype_)
    fail("to_host", "to_vector<{}> on a tensor of dtype {}", dtype_name(dtype_of<T>::value), dtype_name(dtype_));
  std::vector<T> out(static_cast<size_t>(numel()));
  if (numel() == 0) return out;
  if (device().type() != DeviceType::cpu) return to(cpu()).to_vector<T>();  // device to host, then read
  Tensor c = contiguous();
  Stream& s = current_stream(device());
  cpu_kernels::launch_to_host_bytes(out.data(), c);
  s.synchronize();
  return out;
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<bf16_t> Tensor::to_vector<bf16_t>() const;
template std::vector<f16_t> Tensor::to_vector<f16_t>() const;
template std::vector<int32_t> Tensor::to_vector<int32_t>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;

float Tensor::item() const {
  check_defined(*this, "item");
  if (numel() != 1) fail("item", "the tensor has {} elements ({}), not 1", numel(), shape_.str());
  return to_float_vector()[0];
}

std::string Tensor::str() const {
  if (!defined()) return "Tensor(undefined)";
  return fmt::format("Tensor(shape={}, dtype={}, device={})", shape_.str(), dtype_name(dtype_), device().name());
}

// ---- creation ----
namespace {
Device& dev_or_cpu(Device* d) { return d ? *d : cpu(); }
// Values made by a host-side generator (arange, host data, seeded random numbers) for
// another device: made on the CPU device and copied, so a seed gives the same values.
bool on_host_first(Device* d) { return d && d->type() != DeviceType::cpu; }
}  // namespace

Tensor empty(const Shape& shape, DType dtype, Device* device) {
  OPSCOPE_OP("empty");
  return runtime::allocate(shape, dtype, dev_or_cpu(device));
}

Tensor full(const Shape& shape, double value, DType dtype, Device* device) {
  OPSCOPE_OP("full");
  Tensor t = runtime::allocate(shape, dtype, dev_or_cpu(device));
  if (t.numel()) kernels::launch_fill(t, value);
  if (compiler::tracing()) compiler::record_creation(t);
  return t;
}
Tensor zeros(const Shape& shape, DType dtype, Device* device) { return full(shape, 0.0, dtype, device); }
Tensor ones(const Shape& shape, DType dtype, Device* device) { return full(shape, 1.0, dtype, device); }

Tensor arange(double start, double stop, double step, DType dtype, Device* device) {
  OPSCOPE_OP("arange");
  if (step == 0) fail("arange", "step must not be 0");
  if (on_host_first(device)) return arange(start, stop, step, dtype, nullptr).to(*device);
  double span = (stop - start) / step;
  int64_t n = span > 0 ? int64_t(std::ceil(span)) : 0;
  Tensor t = runtime::allocate({n}, dtype, dev_or_cpu(device));
  if (n) cpu_kernels::launch_arange(t, start, step);
  if (compiler::tracing()) compiler::record_creation(t);
  return t;
}

Tensor from_host(const std::vector<float>& values, const Shape& shape, DType dtype, Device* device) {
  OPSCOPE_OP("from_host");
  if (int64_t(values.size()) != shape.numel())
    fail("from_host", "{} values given for shape {} ({} elements)", values.size(), shape.str(), shape.numel());
  if (on_host_first(device)) return from_host(values, shape, dtype, nullptr).to(*device);
  Tensor t = runtime::allocate(shape, dtype, dev_or_cpu(device));
  if (t.numel()) cpu_kernels::launch_from_host_f32(t, std::make_shared<const std::vector<float>>(values));
  if (compiler::tracing()) compiler::record_creation(t);
  return t;
}

Tensor from_host_i64(const std::vector<int64_t>& values, const Shape& shape, Device* device) {
  OPSCOPE_OP("from_host");
  if (int64_t(values.size()) != shape.numel())
    fail("from_host", "{} values given for shape {} ({} elements)", values.size(), shape.str(), shape.numel());
  if (on_host_first(device)) return from_host_i64(values, shape, nullptr).to(*device);
  Tensor t = runtime::allocate(shape, DType::i64, dev_or_cpu(device));
  if (t.numel()) cpu_kernels::launch_from_host_i64(t, std::make_shared<const std::vector<int64_t>>(values));
  if (compiler::tracing()) compiler::record_creation(t);
  return t;
}

Tensor randn(const Shape& shape, uint64_t seed, DType dtype, Device* device, float mean, float stddev) {
  OPSCOPE_OP("randn");
  if (!is_floating(dtype)) fail("randn", "dtype {} is not a floating type", dtype_name(dtype));
  if (on_host_first(device)) return randn(shape, seed, dtype, nullptr, mean, stddev).to(*device);
  Tensor t = runtime::allocate(shape, dtype, dev_or_cpu(device));
  if (t.numel()) cpu_kernels::launch_random(t, seed, true, mean, stddev);
  if (compiler::tracing()) compiler::record_creation(t);
  return t;
}

Tensor rand(const Shape& shape, uint64_t seed, DType dtype, Device* device, float low, float high) {
  OPSCOPE_OP("rand");
  if (!is_floating(dtype)) fail("rand", "dtype {} is not a floating type", dtype_name(dtype));
  if (on_host_first(device)) return rand(shape, seed, dtype, nullptr, low, high).to(*device);
  Tensor t = runtime::allocate(shape, dtype, dev_or_cpu(device));
  if (t.numel()) cpu_kernels::launch_random(t, seed, false, low, high);
  if (compiler::tracing()) compiler::record_creation(t);
  return t;
}

}  // namespace opscope
