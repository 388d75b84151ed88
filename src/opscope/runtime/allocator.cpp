#include "opscope/runtime/allocator.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstdlib>

#include "opscope/core/bytes.h"
#include "opscope/core/error.h"
#include "opscope/profiler/hooks.h"
#include "opscope/runtime/device.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/stream.h"

namespace opscope {

namespace {
constexpr size_t kSmall = 1 << 20;
constexpr size_t kSmallRound = 512;
constexpr size_t kLargeRound = 2 << 20;
// Small blocks are cut in order from chunks of this size, on huge pages. A block the cache
// cannot serve (a tensor a little bigger than last step's, as a growing KV cache or its
// repeat_kv copy) then lands on memory faulted in 2 MiB at a time: on this kind of VM
// each fresh 4 KiB page costs microseconds to fault in, and a 320 KiB clone took 0.8 ms
// on fresh pages against 23 us on reused ones.
constexpr size_t kChunk = 2 << 20;
constexpr size_t kDivisionsFrom = 64 << 10;
constexpr size_t kDivisions = 8;
}  // namespace

#if defined(__SANITIZE_ADDRESS__)
const bool CachingAllocator::kChunkedSmallBlocks = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
const bool CachingAllocator::kChunkedSmallBlocks = false;
#else
const bool CachingAllocator::kChunkedSmallBlocks = true;
#endif
#else
const bool CachingAllocator::kChunkedSmallBlocks = true;
#endif

bool CachingAllocator::chunked(size_t size) const { return kChunkedSmallBlocks && !backend_ && size < kSmall; }

size_t CachingAllocator::round_size(size_t n) {
  if (n == 0) n = 1;
  size_t r = n < kSmall ? kSmallRound : kLargeRound;
  // From 64 KiB, eighths of the next power of two (torch's roundup_power2_divisions): a
  // tensor that grows a little each step reuses the block the last step freed.
  if (n >= kDivisionsFrom && n < kSmall) r = std::bit_ceil(n) / kDivisions;
  return (n + r - 1) / r * r;
}

CachingAllocator::~CachingAllocator() { release_cached(true); }

bool CachingAllocator::usable(Cached& c, const Stream* stream) {
  if (!c.stream || c.stream == stream) return true;
  if (c.stream->completed() < c.seq) return false;
  c.stream = nullptr;  // passed for good: no need to read the stream again
  return true;
}

Block CachingAllocator::allocate(size_t nbytes, Stream* stream) {
  if (!stream_ordered()) stream = nullptr;
  size_t size = round_size(nbytes);
  Block got{nullptr, size};
  int64_t now = 0;
  {
    std::lock_guard<SpinLock> g(m_);
    stats_.num_allocs++;
    // Best fit; a cached block may be at most twice the request so big blocks are not
    // wasted on small tensors. The newest usable block of a size first: the most likely
    // to be in cache.
    for (auto it = free_.lower_bound(size); it != free_.end() && it->first <= 2 * size && !got.ptr; ++it) {
      std::vector<Cached>& v = it->second;
      for (size_t i = v.size(); i-- > 0;) {
        if (!usable(v[i], stream)) continue;
        got = Block{v[i].ptr, it->first, v[i].stream ? v[i].seq : 0, v[i].stream};
        v.erase(v.begin() + std::ptrdiff_t(i));
        break;
      }
    }
    if (got.ptr) {
      if (chunked(got.size)) small_live_ += int64_t(got.size);
      stats_.num_cache_hits++;
      stats_.allocated += int64_t(got.size);
      stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
      now = stats_.allocated;
    }
  }
  if (!got.ptr) {
    bool from_os = true;
    auto get = [&] { return chunked(size) ? carve(size, &from_os) : reserve_and_alloc(size); };
    got.ptr = get();
    if (!got.ptr) {
      // Give the cache back and try once more before failing.
      empty_cache();
      got.ptr = get();
    }
    if (!got.ptr) fail_out_of_memory(size);
    std::lock_guard<SpinLock> g(m_);
    if (from_os) stats_.num_os_allocs++;
    stats_.allocated += int64_t(size);
    stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
    now = stats_.allocated;
  }
  if (prof::layers() & prof::kRuntime) prof::on_alloc(device_index_, got.ptr, int64_t(got.size), now);
  return got;
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

void* CachingAllocator::carve(size_t size, bool* new_chunk) {
  // One carver at a time: two threads taking new chunks at once would leave the first
  // one's remainder (over 1 MiB) to the cache, where it would pass for a large block.
  std::lock_guard<std::mutex> carving(carve_m_);
  {
    std::lock_guard<SpinLock> g(m_);
    *new_chunk = false;
    if (chunk_left_ >= size) {
      void* p = chunk_next_;
      chunk_next_ += size;
      chunk_left_ -= size;
      small_live_ += int64_t(size);
      return p;
    }
  }
  void* c = reserve_and_alloc(kChunk);
  if (!c) return nullptr;
  std::lock_guard<SpinLock> g(m_);
  // What is left of the previous chunk (less than `size`, so under 1 MiB; a multiple of
  // 512 B) is a cached block.
  if (chunk_left_ > 0) free_[chunk_left_].push_back(Cached{chunk_next_, nullptr, 0});
  chunks_.push_back(c);
  chunk_next_ = static_cast<char*>(c) + size;
  chunk_left_ = kChunk - size;
  small_live_ += int64_t(size);
  *new_chunk = true;
  return c;
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

void CachingAllocator::free(Block b, Stream* stream, uint64_t after) {
  if (!b.ptr) return;
  // Unused since it was handed out: the previous owner's launches may still run.
  if (after == 0) stream = b.fence, after = b.fence_seq;
  if (!stream_ordered() || after == 0) stream = nullptr;
  int64_t now;
  {
    std::lock_guard<SpinLock> g(m_);
    // Buckets stay when emptied: steady state allocates nothing.
    free_[b.size].push_back(Cached{b.ptr, stream, stream ? after : 0});
    if (chunked(b.size)) small_live_ -= int64_t(b.size);
    stats_.allocated -= int64_t(b.size);
    now = stats_.allocated;
  }
  if (prof::layers() & prof::kRuntime) prof::on_free(device_index_, b.ptr, int64_t(b.size), now);
}

void CachingAllocator::wait_for_cached() {
  std::vector<std::pair<Stream*, uint64_t>> pending;
  {
    std::lock_guard<SpinLock> g(m_);
    for (auto& [size, v] : free_)
      for (const Cached& c : v) {
        if (!c.stream) continue;
        auto at = std::find_if(pending.begin(), pending.end(), [&](auto& p) { return p.first == c.stream; });
        if (at == pending.end()) pending.emplace_back(c.stream, c.seq);
        else at->second = std::max(at->second, c.seq);
      }
  }
  // Outside m_: waiting releases what finished launches kept, which frees blocks.
  for (auto& [s, seq] : pending) s->wait_for(seq);
}

void CachingAllocator::empty_cache() {
  wait_for_cached();
  release_cached(false);
}

// Every idle cached block that is an allocation of its own; the chunks of small blocks
// only when none of their blocks is in use or awaited.
void CachingAllocator::release_cached(bool all) {
  std::lock_guard<SpinLock> g(m_);
  bool chunks_go = small_live_ == 0;
  for (auto& [size, v] : free_) {
    auto busy = [&](Cached& c) { return !all && !usable(c, nullptr); };
    if (chunked(size)) {
      chunks_go = chunks_go && std::none_of(v.begin(), v.end(), busy);
      continue;
    }
    auto keep = std::partition(v.begin(), v.end(), [&](Cached& c) { return !busy(c); });
    for (auto it = v.begin(); it != keep; ++it) os_free(it->ptr, size);
    stats_.reserved -= int64_t(size * size_t(keep - v.begin()));
    v.erase(v.begin(), keep);
  }
  std::erase_if(free_, [&](auto& kv) { return kv.second.empty() || (chunks_go && chunked(kv.first)); });
  if (!chunks_go) return;
  for (void* c : chunks_) os_free(c, kChunk);
  stats_.reserved -= int64_t(kChunk * chunks_.size());
  chunks_.clear();
  chunk_next_ = nullptr;
  chunk_left_ = 0;
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<SpinLock> g(m_);
  return stats_;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<SpinLock> g(m_);
  stats_.peak_allocated = stats_.allocated;
}

}  // namespace opscope
