// The capture side's per-thread buffers. Every thread that records owns one Ring: a
// single-producer single-consumer ring of Records with a fixed capacity. The owner
// appends without locks or atomic read-modify-writes (a release store publishes each
// record); the collector drains [tail, head) under the registry lock and advances tail.
// A full ring drops the event and counts it. Because the collector only ever advances
// tail, a hook still running when a session stops (it read the layer mask just before
// it was cleared) can never corrupt a collection: its record lands in the ring and is
// discarded by the next one (its time is before that window). Rings are registered in
// a global list under a mutex only when a thread first records, and freed only after
// their owner retired them (the thread exited, or a session asked for another capacity).
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "opscope/profiler/config.h"
#include "opscope/profiler/names.h"
#include "opscope/profiler/record.h"
#include "opscope/profiler/timebase.h"

namespace opscope::prof::detail {

struct Ring {
  Record* data = nullptr;
  uint64_t cap = 0;
  size_t map_bytes = 0;
  int64_t os_tid = 0;

  // ---- written by the owner thread ----
  alignas(64) std::atomic<uint64_t> head{0};  // records published so far
  std::atomic<uint64_t> origin{0};            // absolute position stored at data[0]
  uint64_t pos = 0;                           // data index of `head`
  uint64_t tail_cache = 0;                    // last tail seen (a lower bound)
  std::atomic<uint64_t> dropped{0};           // events lost because the ring was full
  std::atomic<int32_t> core_track{-1};        // (device << 16) | core once it recorded a kernel
                                              // (| kEngineTrack | stream for an engine's)
  std::atomic<bool> retired{false};           // the owner will never write again

  // ---- owned by the collector (under the registry lock) ----
  alignas(64) std::atomic<uint64_t> tail{0};
  uint64_t dropped_base = 0;

  // The slot for the next record, or null (and one more drop) when full.
  Record* reserve() {
    uint64_t h = head.load(std::memory_order_relaxed);
    if (h - tail_cache >= cap) [[unlikely]] {
      tail_cache = tail.load(std::memory_order_acquire);
      if (h - tail_cache >= cap) {
        dropped.store(dropped.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return nullptr;
      }
    }
    return data + pos;
  }
  void commit() {
    pos = pos + 1 == cap ? 0 : pos + 1;
    head.store(head.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }
};

// A framework op or user range that has begun on this thread and not yet ended.
struct OpenScope {
  uint64_t id;
  int64_t t0;
  uint64_t name;
  uint64_t seq;
  void* ret;
  uint32_t shapes;
  uint8_t kind;  // EventKind | flags
};

constexpr int kMaxDepth = 128;  // deeper nesting still balances; its scopes are not recorded

// Per-thread state of the recorder, reached through t_state (one TLS load).
struct ThreadState {
  uint32_t gen = 0;      // == g_settings.gen when `ring` is ready for the current session
  bool dead = false;     // the sentinel every exited thread points at
  bool tsc = false;      // timestamps from the TSC (see timebase.h)
  Ring* ring = nullptr;
  int depth = 0;
  uint64_t next_id = 0, id_end = 0;  // a block of correlation ids taken from a global counter
  uint64_t seq = 0;                  // sequence number of this thread's framework scopes
  NameCache names;
  OpenScope stack[kMaxDepth];
};

extern constinit thread_local ThreadState* t_state __attribute__((tls_model("initial-exec")));

// What the current session asked for; written by begin_window while nothing records.
struct Settings {
  std::atomic<uint32_t> gen{0};
  std::atomic<uint64_t> capacity{0};
  std::atomic<bool> record_shapes{false};
  std::array<std::atomic<uint64_t>, (CoreSet::kMaxCore + 1) / 64> cores{};

  bool core_traced(int core) const {
    return unsigned(core) <= unsigned(CoreSet::kMaxCore) &&
           (cores[size_t(core) >> 6].load(std::memory_order_relaxed) >> (core & 63)) & 1;
  }
};
extern Settings g_settings;

// This thread's state, made on first use; null on an exiting thread.
ThreadState* thread_state();
// Makes st->ring ready for the current session (a new ring if none or another
// capacity); false when no ring can be had (exiting thread, out of memory).
bool adopt_ring(ThreadState* st);
// The state with a ready ring, or null: the slow-path-included entry for the hooks
// other than the op scope.
inline ThreadState* recording_state() {
  ThreadState* st = t_state;
  if (!st || st->dead) [[unlikely]] {
    st = thread_state();
    if (!st) return nullptr;
  }
  if (st->gen != g_settings.gen.load(std::memory_order_relaxed) && !adopt_ring(st)) return nullptr;
  return st;
}
uint64_t take_id_block(ThreadState* st);
inline uint64_t next_id(ThreadState* st) {
  uint64_t id = st->next_id++;
  return id == st->id_end ? take_id_block(st) : id;
}

// Rings of all threads that have recorded. Lock `mutex` to walk or drain them.
struct Registry {
  std::mutex mutex;
  std::vector<Ring*> rings;
  int64_t lost = 0;  // events lost because no ring could be made (guarded by mutex)
};
Registry& registry();
void free_ring(Ring* r);

// Large buffers are first touched while recording or collecting; with 4 KiB pages a
// fresh page costs ~20-40 us under a hypervisor (a 64 MB ring: ~0.3 s), with 2 MiB
// transparent huge pages ~0.3 ms per 2 MiB. map_huge returns a 2 MiB-aligned mapping
// advised MADV_HUGEPAGE; advise_huge advises the aligned interior of any range.
void* map_huge(size_t bytes);
void unmap_huge(void* p, size_t bytes);
void advise_huge(void* p, size_t bytes);

// One recording window of a session: from start_trace to stop_trace.
struct Window {
  Timebase timebase;
  int64_t start_ns = 0;       // CLOCK_MONOTONIC at start; events before it are discarded
  int64_t start_wall_ns = 0;  // CLOCK_REALTIME at the same moment
  int64_t stop_ns = 0;        // when ops and launches stopped recording
  int64_t last_anchor_ns = 0;
  uint32_t layers = 0;
};

// Applies the config, discards anything left in the rings, then turns recording on.
void begin_window(const ProfilerConfig& config, Window& w);
// Turns recording off: ops and launches at once, kernels once every device has run
// what was queued in the window.
void end_window(Window& w);
// Adds a clock anchor if the last is at least 1 ms old (called at each step()).
void anchor_window(Window& w);

}  // namespace opscope::prof::detail
