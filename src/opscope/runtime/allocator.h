// A caching allocator: freed blocks go back to a per-device pool and are handed out
// again, so a steady-state loop of ops allocates from the OS (and page-faults) only once.
//
// Stream-ordered, as CUDA's caching allocator: a block the host drops while launches
// queued on its stream still use it is cached at once, fenced by that stream's sequence
// number. A later allocation for the same stream may take it at once (the stream runs its
// launches in order, so they all finish before the new owner's first launch starts);
// other streams, and the host, take it only once the fence is passed. Without this, a host
// running ahead of the device got a fresh block for each queued call, and every page of
// it faulted inside a kernel.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "opscope/core/spinlock.h"

namespace opscope {

struct AllocatorStats {
  int64_t allocated = 0;       // bytes in blocks handed out now
  int64_t reserved = 0;        // bytes held from the OS (allocated + cached + the uncut part of a chunk)
  int64_t peak_allocated = 0;  // high-water mark of `allocated`
  int64_t num_allocs = 0;      // allocate() calls
  int64_t num_cache_hits = 0;  // allocate() calls served from the cache
  int64_t num_os_allocs = 0;   // allocate() calls that went to the OS (small blocks: for a new chunk)
  int64_t capacity = 0;        // bytes `reserved` may reach (0: no limit of its own)
};

class Stream;

struct Block {
  void* ptr = nullptr;
  size_t size = 0;  // rounded size, as held by the allocator
  // Launches on `fence` up to this sequence number may still use the block (taken
  // stream-ordered from a pending one); 0: nothing does.
  uint64_t fence_seq = 0;
  Stream* fence = nullptr;
};

// Where a device's memory comes from when the cache has no block: the CPU device uses
// aligned_alloc (no backend); the CUDA device cudaMalloc/cudaFree. `alloc` returns null
// when the device is out of memory (other failures throw).
struct AllocatorBackend {
  void* (*alloc)(size_t size, void* ctx) = nullptr;
  void (*free)(void* p, size_t size, void* ctx) = nullptr;
  void* ctx = nullptr;
  std::string device_name;  // "cuda:0", for messages
};

class CachingAllocator {
 public:
  explicit CachingAllocator(int device_index, const AllocatorBackend* backend = nullptr)
      : device_index_(device_index), backend_(backend) {}
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Never returns null: past the capacity, or when the OS refuses, it empties the cache,
  // retries once, then throws "[op] cpu:0: out of memory allocating ..." (the op open on
  // this thread, the bytes asked, allocated / reserved / capacity).
  // With `stream`, the block is for launches on that stream and may be one their
  // predecessors still use (Block::fence says which); without, it is idle, for the host
  // to write at once.
  Block allocate(size_t nbytes, Stream* stream = nullptr);
  // `after`: launches on `stream` up to this sequence number may still use the block (0:
  // none since allocate(), whose fence then still holds).
  void free(Block b, Stream* stream = nullptr, uint64_t after = 0);
  // Returns every cached (free) block to the OS, after waiting for the launches that
  // still use them; small blocks' chunks only once no small block is in use.
  void empty_cache();
  // Whether allocate(n, stream) reuses blocks in stream order: host memory only (the CUDA
  // device's blocks stay alive until their launches have run).
  bool stream_ordered() const { return backend_ == nullptr; }
  AllocatorStats stats() const;
  // Starts the high-water mark again from what is allocated now (torch.cuda's
  // reset_peak_memory_stats): the peak of one region of a program.
  void reset_peak();
  // The most bytes the allocator may hold from the OS (cached blocks included); 0: no
  // limit but the OS's. Lowering it under `reserved` only refuses later allocations.
  void set_capacity(int64_t bytes);

  // Small requests round up to 512 B (from 64 KiB: to an eighth of the next power of two),
  // large ones (1 MiB on) to 2 MiB (huge-page sized).
  static size_t round_size(size_t nbytes);
  // Whether small blocks of host memory are cut from 2 MiB chunks on huge pages (not under
  // AddressSanitizer, which then sees each block as its own allocation).
  static const bool kChunkedSmallBlocks;

 private:
  // A cached block: free, but launches on `stream` up to `seq` may still use it.
  struct Cached {
    void* ptr;
    Stream* stream;  // null: idle
    uint64_t seq;
  };
  // Whether `c` may go to an allocation for `stream` (null: the host) now.
  static bool usable(Cached& c, const Stream* stream);
  // Waits for the launches that still use cached blocks (called without m_).
  void wait_for_cached();
  // Returns the idle cached blocks to the OS; `all`: every one, fences unread (the
  // destructor: the streams are gone).
  void release_cached(bool all);
  void* reserve_and_alloc(size_t size);  // null: over capacity or refused by the OS
  [[noreturn]] void fail_out_of_memory(size_t size) const;
  void* os_alloc(size_t size);
  void os_free(void* p, size_t size);
  // A small block cut from the current chunk, or from a new one (*new_chunk set).
  void* carve(size_t size, bool* new_chunk);
  bool chunked(size_t size) const;

  int device_index_;
  const AllocatorBackend* backend_;  // null: host memory (the CPU device)
  // The host thread writes these at every allocation; their own cache lines keep the
  // device's cores (which poll nearby fields) from missing on them.
  alignas(64) mutable SpinLock m_;
  std::map<size_t, std::vector<Cached>> free_;  // cached blocks by rounded size, newest last
  AllocatorStats stats_;
  // The chunks small blocks are cut from; they go back to the OS only together, when no
  // small block is in use (small_live_ == 0).
  std::mutex carve_m_;
  std::vector<void*> chunks_;
  char* chunk_next_ = nullptr;
  size_t chunk_left_ = 0;
  int64_t small_live_ = 0;
};

}  // namespace opscope
