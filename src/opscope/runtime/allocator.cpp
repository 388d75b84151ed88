#include "opscope/runtime/allocator.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>

#include "opscope/core/bytes.h"
#include "opscope/core/error.h"
#include "opscope/profiler/hooks.h"
#include "opscope/runtime/device.h"
#include "opscope/runtime/op_scope.h"

namespace opscope {

namespace {
constexpr size_t kSmall = 1 << 20;
constexpr size_t kSmallRound = 512;
constexpr size_t kLargeRound = 2 << 20;
}  // namespace

size_t CachingAllocator::round_size(size_t n) {
  if (n == 0) n = 1;
  size_t r = n < kSmall ? kSmallRound : kLargeRound;
  return (n + r - 1) / r * r;
}

CachingAllocator::~CachingAllocator() { empty_cache(); }

Block CachingAllocator::allocate(size_t nbytes) {
  size_t size = round_size(nbytes);
  void* p = nullptr;
  int64_t now = 0;
  {
    std::lock_guard<SpinLock> g(m_);
    stats_.num_allocs++;
    // Best fit; a cached block may be at most twice the request so big blocks are not
    // wasted on small tensors.
    for (auto it = free_.lower_bound(size); it != free_.end() && it->first <= 2 * size; ++it) {
      if (it->second.empty()) continue;
      size = it->first;
      p = it->second.back();
      it->second.pop_back();
      stats_.num_cache_hits++;
      stats_.allocated += int64_t(size);
      stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
      now = stats_.allocated;
      break;
    }
  }
  if (!p) {
    p = reserve_and_alloc(size);
    if (!p) {
      // Give the cache back and try once more before failing.
      empty_cache();
      p = reserve_and_alloc(size);
    }
    if (!p) fail_out_of_memory(size);
    std::lock_guard<SpinLock> g(m_);
    stats_.num_os_allocs++;
    stats_.allocated += int64_t(size);
    stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
    now = stats_.allocated;
  }
  if (prof::layers() & prof::kRuntime) prof::on_alloc(device_index_, p, int64_t(size), now);
  return Block{p, size};
}

void* CachingAllocator::reserve_and_alloc(size_t size) {
  {
    // Counted before the OS call, so two threads cannot both pass the capacity check.
    std::lock_guard<SpinLock> g(m_);
    if (stats_.capacity > 0 && stats_.reserved + int64_t(size) > stats_.capacity) return nullptr;
    stats_.reserved += int64_t(size);
  }
  void* p = os_alloc(size);
  if (!p) {
    std::lock_guard<SpinLock> g(m_);
    stats_.reserved -= int64_t(size);
  }
  return p;
}

void CachingAllocator::fail_out_of_memory(size_t size) const {
  AllocatorStats st = stats();
  const char* op = OpScope::current();
  const Device* dev = Device::by_index(device_index_);
  std::string device = backend_ ? backend_->device_name : dev ? dev->name() : fmt::format("cpu:{}", device_index_);
  std::string capacity = st.capacity > 0 ? fmt::format(", capacity {}", format_memory(st.capacity)) : "";
  // Where the CPU device's capacity comes from, so the user knows what to change.
  if (!backend_ && st.capacity > 0) capacity += " (MemAvailable at start, or OPSCOPE_CPU_MEMORY)";
  fail(op[0] ? op : "allocator",
       "{}: out of memory allocating {} ({} bytes): allocated {}, reserved {}{}; the cache was emptied and the "
       "allocation retried: free tensors or use smaller shapes",
       device, format_memory(int64_t(size)), size, format_memory(st.allocated),
       format_memory(st.reserved), capacity);
}

void CachingAllocator::set_capacity(int64_t bytes) {
  std::lock_guard<SpinLock> g(m_);
  stats_.capacity = bytes > 0 ? bytes : 0;
}

void* CachingAllocator::os_alloc(size_t size) {
  if (backend_) return backend_->alloc(size, backend_->ctx);
  size_t align = size >= kLargeRound ? kLargeRound : 64;
  void* p = std::aligned_alloc(align, size);
  if (p && size >= kLargeRound) madvise(p, size, MADV_HUGEPAGE);
  return p;
}

void CachingAllocator::os_free(void* p, size_t size) {
  if (backend_) backend_->free(p, size, backend_->ctx);
  else std::free(p);
}

void CachingAllocator::free(Block b) {
  if (!b.ptr) return;
  int64_t now;
  {
    std::lock_guard<SpinLock> g(m_);
    free_[b.size].push_back(b.ptr);  // buckets stay when emptied: steady state allocates nothing
    stats_.allocated -= int64_t(b.size);
    now = stats_.allocated;
  }
  if (prof::layers() & prof::kRuntime) prof::on_free(device_index_, b.ptr, int64_t(b.size), now);
}

void CachingAllocator::empty_cache() {
  std::lock_guard<SpinLock> g(m_);
  for (auto& [size, blocks] : free_) {
    for (void* p : blocks) os_free(p, size);
    stats_.reserved -= int64_t(size * blocks.size());
  }
  free_.clear();
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<SpinLock> g(m_);
  return stats_;
}

}  // namespace opscope
