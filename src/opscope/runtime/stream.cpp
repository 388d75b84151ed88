#include "opscope/runtime/stream.h"

#include <immintrin.h>

#include <cstddef>
#include <cstdlib>
#include <new>

#include "opscope/core/clock.h"
#include "opscope/core/error.h"
#include "opscope/core/futex.h"
#include "opscope/profiler/hooks.h"
#include "opscope/runtime/device.h"

namespace opscope {

void Launch::reset() {
  // Only what holds resources: every other field is written again when the launch is
  // filled (after new_launch() has prefetched its lines for writing). Each store here
  // may miss — the device's cores read these lines, or fetched them beside lines they
  // read — and the reference drops below wait for every earlier store.
  keep.clear();  // vectors keep their capacity: a recycled launch rarely allocates
  if (!waits.empty()) waits.clear();
  if (event) event.reset();
  // `next` is left alone: the scheduler polled it, so writing it here would miss;
  // new_launch() clears it after prefetching it for writing.
}

// ---- where launches live ----
// Launches come from slabs of kSlabPages pages, the k-th of a slab on page k % kSlabPages:
// launches made one after another sit on different pages, and those that share a page
// were made kSlabPages apart. The device's core that executes a launch has its cache
// fetch lines around it (hardware prefetch, within a 4 KiB page); with launches back to
// back (`new Launch()`), those were the lines of the next launch, which the host was
// filling at that moment, and each of the host's stores then waited for a cross-core
// transfer. Tiny add through torch on 2 vCPUs, opscope / torch CPU, alternating builds:
// 1.02-1.08 with `new Launch()`, 0.92-0.94 with these slabs (8-page slabs: 0.96-1.01).
namespace {
constexpr size_t kPage = 4096, kSlabPages = 64;
constexpr size_t kPerPage = kPage / sizeof(Launch), kPerSlab = kPerPage * kSlabPages;
static_assert(kPage % sizeof(Launch) == 0, "launches must tile a page");
}  // namespace

Launch* Stream::allocate_launch() {
  if (slabs_.empty() || slab_used_ == kPerSlab) {
    void* m = std::aligned_alloc(kPage, kPage * kSlabPages);
    if (!m) throw std::bad_alloc();
    slabs_.push_back(m);
    slab_used_ = 0;
  }
  // The k-th launch of a slab: page k % kSlabPages, slot k / kSlabPages of that page.
  size_t k = slab_used_++;
  char* at = static_cast<char*>(slabs_.back()) + (k % kSlabPages) * kPage + (k / kSlabPages) * sizeof(Launch);
  return new (at) Launch();
}

Stream::Stream(Device& dev, int id, StreamEngine* engine) : device_(dev), id_(id), engine_(engine) {
  tail_ = oldest_ = head_ = allocate_launch();  // sentinel, seq 0
}

Stream::~Stream() {
  for (Launch* l = oldest_; l;) {
    Launch* n = l->next.load(std::memory_order_relaxed);
    l->~Launch();
    l = n;
  }
  for (Launch* l = free_; l;) {
    Launch* n = l->free_next;
    l->~Launch();
    l = n;
  }
  for (void* m : slabs_) std::free(m);
}

void Stream::reclaim_locked() {
  uint64_t done = completed_.load(std::memory_order_acquire);
  // The scheduler still reads the `next` of the launch numbered `done`: recycle only
  // those before it, but drop the payload of that one too.
  while (oldest_->seq < done) {
    Launch* n = oldest_->next.load(std::memory_order_relaxed);
    oldest_->reset();
    oldest_->free_next = nullptr;
    if (free_tail_) free_tail_->free_next = oldest_;
    else free_ = oldest_;
    free_tail_ = oldest_;
    oldest_ = n;
  }
  if (released_ < done && oldest_->seq == done) {
    oldest_->keep.clear();
    if (oldest_->event) oldest_->event.reset();
    released_ = done;
  }
}

Launch* Stream::new_launch() {
  {
    std::lock_guard<SpinLock> g(m_);
    // Recycle in batches: reading `completed` (the scheduler's line) at every launch
    // cost a cross-core miss per op. The pool grows until a batch comes back.
    uint64_t submitted = submitted_.load(std::memory_order_relaxed);
    if (!free_ && submitted - reclaimed_at_ >= kReclaimBatch) {
      reclaim_locked();
      reclaimed_at_ = submitted;
    }
    if (Launch* l = free_) {
      free_ = l->free_next;
      if (!free_) free_tail_ = nullptr;
      l->next.store(nullptr, std::memory_order_relaxed);
      // The scheduler's cache still holds lines of the launch after this one; ask for
      // them now, for writing, so the transfer overlaps this op instead of stalling
      // the next one (a cross-core transfer costs ~250 ns on a 2-vCPU VM).
      if (Launch* after = free_)
        for (size_t off = 0; off < sizeof(Launch); off += 64)
          __builtin_prefetch(reinterpret_cast<char*>(after) + off, 1, 3);
      return l;
    }
    return allocate_launch();
  }
}

uint64_t Stream::submit(Launch* l) {
  uint64_t seq;
  {
    std::lock_guard<SpinLock> g(m_);
    seq = submitted_.load(std::memory_order_relaxed) + 1;
    l->seq = seq;
    tail_->next.store(l, std::memory_order_release);  // publishes the filled launch
    tail_ = l;
    submitted_.store(seq, std::memory_order_release);
  }
  if (StreamEngine* e = engine()) e->notify();
  else device_.notify_work();
  return seq;
}

Launch* Stream::ready_head() {
  Launch* l = head_->next.load(std::memory_order_acquire);
  if (!l) return nullptr;
  for (auto& [s, seq] : l->waits)
    if (s->completed() < seq) return nullptr;
  return l;
}

void Stream::retire_head() {
  Launch* l = head_->next.load(std::memory_order_relaxed);
  head_ = l;  // before `completed` moves: submitters may then recycle the previous head
  completed_.store(l->seq, std::memory_order_seq_cst);  // seq_cst: ordered before the waiters_ load (Dekker)
  // Sleeping waiters are woken once the least launch one of them waits for is done, not at
  // every retirement: each wake cost this core a syscall and put the waiting host thread
  // back on a CPU the device's cores share, only for it to sleep again (two-core kernels of
  // 200 us started 13 us apart and 15 us after the one before; a compiled transformer's
  // launches ran ~20 us apart). The woken register again what they still wait for; the
  // epoch moves after wake_at_ is cleared, so that a registration the clearing dropped
  // belongs to a waiter whose futex_wait then returns at once.
  bool wake = waiters_.load(std::memory_order_seq_cst) > 0 && l->seq >= wake_at_.load(std::memory_order_seq_cst);
  if (wake) wake_at_.store(UINT64_MAX, std::memory_order_seq_cst);
  retire_epoch_.fetch_add(1, std::memory_order_seq_cst);
  if (wake) futex_wake_all(retire_epoch_);
}

void Stream::wait_for(uint64_t seq) {
  if (completed_.load(std::memory_order_acquire) < seq) {
    for (uint64_t w = waited_.load(std::memory_order_relaxed); w < seq && !waited_.compare_exchange_weak(w, seq);) {
    }
    // Poll briefly (short kernels finish within microseconds), then sleep.
    for (int i = 0; i < 2000 && completed_.load(std::memory_order_acquire) < seq; ++i) _mm_pause();
    while (completed_.load(std::memory_order_acquire) < seq) {
      uint32_t epoch = retire_epoch_.load(std::memory_order_seq_cst);
      waiters_.fetch_add(1, std::memory_order_seq_cst);
      for (uint64_t at = wake_at_.load(std::memory_order_seq_cst); seq < at && !wake_at_.compare_exchange_weak(at, seq);) {
      }
      if (completed_.load(std::memory_order_seq_cst) < seq) futex_wait(retire_epoch_, epoch);
      waiters_.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  // What the finished kernels kept alive (inputs, outputs) goes back to the allocator.
  std::lock_guard<SpinLock> g(m_);
  reclaim_locked();
}

void Stream::set_error(std::string msg) {
  std::lock_guard<SpinLock> g(m_);
  if (!failed_.load()) {
    error_ = std::move(msg);
    failed_.store(true, std::memory_order_release);
  }
}

void Stream::check_error() {
  if (!failed_.load(std::memory_order_acquire)) return;
  std::string msg;
  {
    std::lock_guard<SpinLock> g(m_);
    msg = std::move(error_);
    error_.clear();
    failed_.store(false, std::memory_order_release);
  }
  throw Error(msg);
}

void Stream::synchronize() {
  int64_t t0 = now_ns();
  wait_for(submitted());
  if (prof::layers() & prof::kRuntime) prof::on_sync(prof::SyncKind::stream, device_.index(), id_, t0, now_ns());
  check_error();
}

// A marker launch (no kernel): the fields a recycled launch may still hold are cleared.
Launch* Stream::new_marker(const char* name) {
  Launch* l = new_launch();
  l->kind = Launch::Kind::marker;
  l->id = l->op_id = 0;
  l->bytes = l->flops = 0;
  l->name = name;
  l->op.clear();
  l->body = nullptr;
  return l;
}

Event Stream::record() {
  Launch* l = new_marker("event");
  auto st = std::make_shared<EventState>();
  l->event = st;
  uint64_t seq = submit(l);
  return Event(this, seq, std::move(st));
}

void Stream::wait(const Event& e) {
  if (!e.stream()) fail("stream_wait", "the event was never recorded");
  Launch* l = new_marker("wait_event");
  l->waits.emplace_back(e.stream(), e.seq());
  submit(l);
}

bool Event::query() const { return stream_ && stream_->completed() >= seq_; }

void Event::synchronize() const {
  if (!stream_) fail("event", "synchronize on an event that was never recorded");
  int64_t t0 = now_ns();
  stream_->wait_for(seq_);
  if (prof::layers() & prof::kRuntime)
    prof::on_sync(prof::SyncKind::event, stream_->device().index(), stream_->id(), t0, now_ns());
}

double Event::elapsed_ms(const Event& later) const {
  if (!state_ || !later.state_) fail("event", "elapsed_ms needs two recorded events");
  later.synchronize();
  synchronize();
  return double(later.state_->time_ns.load() - state_->time_ns.load()) / 1e6;
}

// ---- current stream ----
namespace {
thread_local Stream* t_current[Device::kMaxDevices] = {};
}

Stream& current_stream(Device& dev) {
  Stream* s = t_current[dev.index()];
  return s ? *s : dev.default_stream();
}

StreamGuard::StreamGuard(Stream& s) : prev_(t_current[s.device().index()]), device_(s.device().index()) {
  t_current[device_] = &s;
}
StreamGuard::~StreamGuard() { t_current[device_] = prev_; }

}  // namespace opscope
