// Tensor: a strided view over device storage. Views share storage; ops write new
// storage. Reading values (to_vector, item) synchronizes with the kernels that wrote it.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "opscope/core/dtype.h"
#include "opscope/core/shape.h"
#include "opscope/runtime/allocator.h"

namespace opscope {

class Device;
class Stream;

struct Storage {
  Storage(Device& d, Block b) : device(&d), block(b) {}
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  Device* device;
  Block block;
  // The last launch that writes this storage; readers on other streams wait for it.
  Stream* writer = nullptr;
  uint64_t writer_seq = 0;
  // Bumped where host code may write the memory outside a launch (the torch bridge's host copies
  // and CPU fallbacks; C++ writing through data_ptr() must bump it too). With writer/writer_seq it
  // tells a cached copy of these bytes (a compiled graph's packed weights) they may have changed.
  std::atomic<uint64_t> host_writes{0};
  // The stream whose launches use the storage in order (the allocator is stream-ordered,
  // see allocator.h): they need not keep it alive, and when the host drops it the block
  // is cached fenced at `last_use`, the last of them. Null: every launch keeps it.
  Stream* home = nullptr;
  std::atomic<uint64_t> last_use{0};  // host threads launching on one stream may race
  void used_at(uint64_t seq) {
    uint64_t cur = last_use.load(std::memory_order_relaxed);
    while (cur < seq && !last_use.compare_exchange_weak(cur, seq, std::memory_order_relaxed)) {
    }
  }
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(std::shared_ptr<Storage> st, Shape shape, Strides strides, int64_t offset, DType dtype)
      : storage_(std::move(st)), shape_(shape), strides_(strides), offset_(offset), dtype_(dtype) {}

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  const Strides& strides() const { return strides_; }
  int ndim() const { return shape_.size(); }
  // Size of `axis` (negative counts from the end).
  int64_t dim(int64_t axis) const;
  int64_t numel() const { return shape_.numel(); }
  DType dtype() const { return dtype_; }
  size_t itemsize() const { return opscope::itemsize(dtype_); }
  int64_t nbytes() const { return numel() * int64_t(itemsize()); }
  int64_t offset() const { return offset_; }  // in elements
  Device& device() const { return *storage_->device; }
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  bool is_contiguous() const;

  // Raw pointer to element 0 of this view. No synchronization: for kernels.
  void* data_ptr() const { return static_cast<char*>(storage_->block.ptr) + offset_ * int64_t(itemsize()); }
  template <class T> T* data() const { return static_cast<T*>(data_ptr()); }

  // ---- views (no copy, no launch) ----
  Tensor view(const Shape& shape) const;         // throws if the strides do not allow it
  Tensor reshape(const Shape& shape) const;      // a view if possible, else a contiguous copy
  Tensor transpose(int64_t a, int64_t b) const;
  Tensor permute(const std::vector<int64_t>& order) const;
  Tensor slice(int64_t axis, int64_t start, int64_t stop, int64_t step = 1) const;
  Tensor expand(const Shape& shape) const;       // broadcast to `shape` (stride 0)
  Tensor unsqueeze(int64_t axis) const;
  Tensor squeeze(int64_t axis) const;
  Tensor flatten() const { return reshape({numel()}); }

  // ---- copies (launch a kernel) ----
  Tensor contiguous() const;      // itself if already contiguous
  Tensor clone() const;
  Tensor to(DType dtype) const;   // itself if already that dtype
  // A copy on `dev` (itself if already there): host to CUDA is an async copy launch;
  // CUDA to host synchronizes (through a pinned buffer), as reading values does.
  Tensor to(Device& dev) const;

  // ---- host access (synchronizes; rethrows kernel errors) ----
  // Values converted to f32 (floating and integer dtypes alike), in row-major order.
  std::vector<float> to_float_vector() const;
  // Values of exactly type T, which must match the dtype.
  template <class T> std::vector<T> to_vector() const;
  float item() const;  // one-element tensors
  std::string str() const;  // "Tensor(shape=(2, 3), dtype=f32, device=cpu:0)"

 private:
  std::shared_ptr<Storage> storage_;
  Shape shape_;
  Strides strides_;
  int64_t offset_ = 0;
  DType dtype_ = DType::f32;
};

// ---- creation ----
Tensor empty(const Shape& shape, DType dtype = DType::f32, Device* device = nullptr);
Tensor zeros(const Shape& shape, DType dtype = DType::f32, Device* device = nullptr);
Tensor ones(const Shape& shape, DType dtype = DType::f32, Device* device = nullptr);
Tensor full(const Shape& shape, double value, DType dtype = DType::f32, Device* device = nullptr);
// [start, stop) by step, as a 1-d tensor.
Tensor arange(double start, double stop, double step = 1, DType dtype = DType::f32, Device* device = nullptr);
// Copies host values (converted from f32 to `dtype`) to the device: a host-to-device copy.
Tensor from_host(const std::vector<float>& values, const Shape& shape, DType dtype = DType::f32,
                 Device* device = nullptr);
Tensor from_host_i64(const std::vector<int64_t>& values, const Shape& shape, Device* device = nullptr);
// Seeded random values; the same seed gives the same values whatever the core count.
Tensor randn(const Shape& shape, uint64_t seed, DType dtype = DType::f32, Device* device = nullptr, float mean = 0,
             float stddev = 1);
Tensor rand(const Shape& shape, uint64_t seed, DType dtype = DType::f32, Device* device = nullptr, float low = 0,
            float high = 1);

}  // namespace opscope
