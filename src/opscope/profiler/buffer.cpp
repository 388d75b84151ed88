#include "opscope/profiler/buffer.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <new>

#include "opscope/runtime/device.h"

namespace opscope::prof::detail {

constinit thread_local ThreadState* t_state __attribute__((tls_model("initial-exec"))) = nullptr;
Settings g_settings;

namespace {

constexpr uint64_t kIdBlock = 1 << 16;
std::atomic<uint64_t> g_next_id{1};  // correlation ids are never 0

// Every exited thread points at this; it is never written, and never destroyed (hooks
// may still run in other thread-local destructors after the reaper's).
ThreadState* dead_state() {
  static ThreadState* s = [] {
    auto* d = new ThreadState;
    d->dead = true;
    d->gen = UINT32_MAX;
    return d;
  }();
  return s;
}

// Retires this thread's ring when the thread exits: its records stay for the next
// collection, which then frees the ring.
struct Reaper {
  bool armed = false;
  ~Reaper() {
    ThreadState* st = t_state;
    if (!armed || !st || st->dead) return;
    if (st->ring) st->ring->retired.store(true, std::memory_order_release);
    t_state = dead_state();
    delete st;
  }
};
thread_local Reaper t_reaper;

Ring* new_ring(uint64_t cap) {
  size_t bytes = size_t(cap) * sizeof(Record);
  // Pages are touched as records arrive, so a mostly empty ring costs little memory;
  // a ring survives across sessions, so later sessions find its pages warm.
  void* p = map_huge(bytes);
  if (!p) return nullptr;
  auto* r = new (std::nothrow) Ring;
  if (!r) {
    unmap_huge(p, bytes);
    return nullptr;
  }
  r->data = static_cast<Record*>(p);
  r->cap = cap;
  r->map_bytes = bytes;
  r->os_tid = int64_t(syscall(SYS_gettid));
  Registry& reg = registry();
  std::lock_guard<std::mutex> g(reg.mutex);
  try {
    reg.rings.push_back(r);
  } catch (...) {
    free_ring(r);
    return nullptr;
  }
  return r;
}

}  // namespace

Registry& registry() {
  static Registry* r = new Registry;  // leaked: hooks may run during exit
  return *r;
}

constexpr size_t kHugePage = size_t(2) << 20;

void advise_huge(void* p, size_t bytes) {
  uintptr_t a = (uintptr_t(p) + kHugePage - 1) & ~uintptr_t(kHugePage - 1);
  uintptr_t e = (uintptr_t(p) + bytes) & ~uintptr_t(kHugePage - 1);
  if (e > a) madvise(reinterpret_cast<void*>(a), e - a, MADV_HUGEPAGE);
}

void* map_huge(size_t bytes) {
  if (bytes < kHugePage) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  }
  // Over-map by one huge page to align the start, then give the slack back.
  size_t len = bytes + kHugePage;
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  uintptr_t start = uintptr_t(p), a = (start + kHugePage - 1) & ~uintptr_t(kHugePage - 1);
  if (a > start) munmap(p, a - start);
  uintptr_t end = start + len, want = a + bytes;
  if (end > want) munmap(reinterpret_cast<void*>(want), end - want);
  advise_huge(reinterpret_cast<void*>(a), bytes);
  return reinterpret_cast<void*>(a);
}

void unmap_huge(void* p, size_t bytes) { munmap(p, bytes); }

void free_ring(Ring* r) {
  unmap_huge(r->data, r->map_bytes);
  delete r;
}

ThreadState* thread_state() {
  ThreadState* st = t_state;
  if (st) return st->dead ? nullptr : st;
  st = new (std::nothrow) ThreadState;
  if (!st) return nullptr;
  st->tsc = use_tsc();
  t_state = st;
  t_reaper.armed = true;
  return st;
}

bool adopt_ring(ThreadState* st) {
  if (st->dead) return false;
  uint32_t gen = g_settings.gen.load(std::memory_order_acquire);
  uint64_t cap = g_settings.capacity.load(std::memory_order_acquire);
  if (gen == 0 || cap == 0) return false;
  Ring* r = st->ring;
  if (!r || r->cap != cap) {
    if (r) r->retired.store(true, std::memory_order_release);
    st->ring = r = new_ring(cap);
    if (!r) {
      std::lock_guard<std::mutex> g(registry().mutex);
      registry().lost++;
      return false;
    }
  } else if (r->head.load(std::memory_order_relaxed) == r->tail.load(std::memory_order_acquire)) {
    // Empty: restart at data[0] so the pages in use stay those of the largest window.
    r->origin.store(r->head.load(std::memory_order_relaxed), std::memory_order_relaxed);
    r->pos = 0;
  }
  st->gen = gen;
  return true;
}

uint64_t take_id_block(ThreadState* st) {
  uint64_t id = g_next_id.fetch_add(kIdBlock, std::memory_order_relaxed);
  st->next_id = id + 1;
  st->id_end = id + kIdBlock;
  return id;
}

void begin_window(const ProfilerConfig& config, Window& w) {
  g_layers.store(0, std::memory_order_seq_cst);
  g_settings.capacity.store(uint64_t(config.max_events), std::memory_order_relaxed);
  g_settings.record_shapes.store(config.record_shapes, std::memory_order_relaxed);
  for (size_t i = 0; i < g_settings.cores.size(); ++i) {
    uint64_t word = 0;
    for (int b = 0; b < 64; ++b)
      if (config.cores.contains(int(i * 64 + b))) word |= uint64_t(1) << b;
    g_settings.cores[i].store(word, std::memory_order_relaxed);
  }
  uint32_t gen = g_settings.gen.load(std::memory_order_relaxed) + 1;
  if (gen == UINT32_MAX || gen == 0) gen = 1;  // UINT32_MAX marks the exited-thread sentinel
  g_settings.gen.store(gen, std::memory_order_release);
  {
    // Leftovers (late records of an earlier window) would only take capacity.
    Registry& reg = registry();
    std::lock_guard<std::mutex> g(reg.mutex);
    std::vector<Ring*> keep;
    for (Ring* r : reg.rings) {
      r->tail.store(r->head.load(std::memory_order_acquire), std::memory_order_release);
      r->dropped_base = r->dropped.load(std::memory_order_relaxed);
      if (r->retired.load(std::memory_order_acquire)) free_ring(r);
      else keep.push_back(r);
    }
    reg.rings.swap(keep);
    reg.lost = 0;
  }
  w = Window{};
  Anchor a = take_anchor();
  timespec wall;
  clock_gettime(CLOCK_REALTIME, &wall);
  w.timebase.add(a);
  w.start_ns = a.ns;
  w.start_wall_ns = int64_t(wall.tv_sec) * 1000000000 + wall.tv_nsec;
  w.last_anchor_ns = a.ns;
  w.layers = config.layers;
  g_layers.store(config.layers, std::memory_order_seq_cst);
}

void end_window(Window& w) {
  // Ops and launches stop now. Kernels queued in the window may not have run yet
  // (launches are asynchronous): the device layer stays on until every stream has run
  // what was queued, so they are recorded. Device::synchronize() is not used: it would
  // consume (rethrow) a kernel error that belongs to the program's next synchronization.
  uint32_t device_only = w.layers & kDevice;
  g_layers.store(device_only, std::memory_order_seq_cst);
  w.stop_ns = now_ns();
  if (device_only) {
    for (int i = 0; i < Device::kMaxDevices; ++i) {
      Device* d = Device::by_index(i);
      if (!d) continue;
      for (int s = 0, n = d->num_streams(); s < n; ++s) d->stream(s).wait_for(d->stream(s).submitted());
    }
  }
  g_layers.store(0, std::memory_order_seq_cst);
  w.timebase.add(take_anchor());
}

void anchor_window(Window& w) {
  Anchor a = take_anchor();
  if (a.ns - w.last_anchor_ns < 1'000'000) return;
  w.timebase.add(a);
  w.last_anchor_ns = a.ns;
}

}  // namespace opscope::prof::detail
