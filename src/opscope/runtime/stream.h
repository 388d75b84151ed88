// A stream: an in-order queue of launches on one device. Submitting returns at once;
// synchronize() waits. A kernel's error is kept and rethrown by the next
// synchronize() (or tensor read) on that stream; launches after a failed one are
// skipped until then, so no result is computed from a failed kernel's output.
//
// The queue is a linked list with one consumer (the device's scheduler) that never
// locks, frees or allocates: it follows `next` links and publishes `completed`.
// Submitters (any host thread, under a mutex) recycle the launches the device has
// passed, so every malloc and free of the launch path happens on the host thread —
// a free on the scheduler thread contended with the host's malloc for glibc's arena
// lock and cost microseconds per op.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "opscope/core/spinlock.h"
#include "opscope/runtime/launch.h"

namespace opscope {

class Device;
class Stream;

// What runs a stream's launches when not the device's cores: a host engine of its own
// (the communication engine of a process group blocks on the network for as long as a
// collective takes, which would stall every stream if a core ran it). The device's
// scheduler skips such a stream; the engine drains it with head / ready_head /
// retire_head on its own thread and is woken by notify() at every submit.
class StreamEngine {
 public:
  virtual ~StreamEngine() = default;
  virtual void notify() = 0;  // a launch was queued (called by the submitting thread)
};

struct EventState {
  std::atomic<int64_t> time_ns{0};  // when the device reached the event
};

// A point in a stream's queue.
class Event {
 public:
  Event() = default;
  Event(Stream* s, uint64_t seq, std::shared_ptr<EventState> st) : stream_(s), seq_(seq), state_(std::move(st)) {}
  bool query() const;      // reached?
  void synchronize() const;
  // Milliseconds from this event to `later`, both reached (synchronizes on `later`).
  double elapsed_ms(const Event& later) const;
  Stream* stream() const { return stream_; }
  uint64_t seq() const { return seq_; }

 private:
  Stream* stream_ = nullptr;
  uint64_t seq_ = 0;
  std::shared_ptr<EventState> state_;
};

class Stream {
 public:
  Stream(Device& dev, int id, StreamEngine* engine = nullptr);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  Device& device() const { return device_; }
  int id() const { return id_; }
  // The host engine that runs this stream's launches, or null (the device's cores).
  StreamEngine* engine() const { return engine_.load(std::memory_order_relaxed); }
  // The engine is going away: the stream, drained, falls back to the device's cores.
  void detach_engine() { engine_.store(nullptr, std::memory_order_relaxed); }

  // A blank launch to fill and submit (recycled from those the device has passed).
  Launch* new_launch();
  // Queues a launch from new_launch(); returns its sequence number. Never blocks on
  // the device.
  uint64_t submit(Launch* l);
  // Waits for all work queued so far; rethrows the first kernel error since the last sync.
  void synchronize();
  // True when all queued work is done.
  bool query() const { return completed_.load(std::memory_order_acquire) >= submitted_.load(std::memory_order_acquire); }
  Event record();
  // Later work on this stream waits for `e` (which may be on another stream).
  void wait(const Event& e);

  uint64_t submitted() const { return submitted_.load(std::memory_order_acquire); }
  uint64_t completed() const { return completed_.load(std::memory_order_acquire); }
  // The furthest launch a thread in wait_for (synchronize, a copy to the host) has waited
  // for: until the launches up to it have run, that thread sleeps and submits nothing.
  uint64_t waited() const { return waited_.load(std::memory_order_relaxed); }
  // Blocks until `seq` has completed (no error check), then releases what the
  // finished launches kept alive.
  void wait_for(uint64_t seq);
  // Rethrows and clears a pending kernel error.
  void check_error();

  // ---- for the device's scheduler or the stream's engine (one thread) ----
  // The launch at the head if it may run now (its waits are met), else null.
  Launch* ready_head();
  // The launch at the head, ready or not (an engine blocks on its waits), else null.
  Launch* head() const { return head_->next.load(std::memory_order_acquire); }
  // Retires the head launch (executed or skipped). Frees nothing.
  void retire_head();
  // A launch is queued (ready or waiting on another stream).
  bool has_queued() const { return head_->next.load(std::memory_order_acquire) != nullptr; }
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  void set_error(std::string msg);

 private:
  Launch* new_marker(const char* name);
  Launch* allocate_launch();  // needs m_ (or the constructor)
  // Recycles launches up to `completed`; needs m_.
  void reclaim_locked();

  Device& device_;
  int id_;
  std::atomic<StreamEngine*> engine_;
  // Submitter side and scheduler side live on separate cache lines: the scheduler
  // writes its line at every retirement, and sharing it with the mutex made every
  // submit miss.
  alignas(64) SpinLock m_;  // submitters, the recycling lists and error_
  Launch* tail_;              // last submitted (or the initial sentinel); needs m_
  Launch* oldest_;            // oldest launch not yet recycled; needs m_
  uint64_t released_ = 0;     // payloads dropped up to this seq; needs m_
  Launch* free_ = nullptr;    // recycled launches, oldest first, linked by `next`; needs m_
  Launch* free_tail_ = nullptr;
  uint64_t reclaimed_at_ = 0;  // `submitted` at the last batch recycling; needs m_
  std::vector<void*> slabs_;   // where the launches live (see allocate_launch); needs m_
  size_t slab_used_ = 0;       // launches taken from the newest slab; needs m_
  static constexpr uint64_t kReclaimBatch = 64;
  std::atomic<uint64_t> submitted_{0};
  alignas(64) Launch* head_;  // scheduler only: the last retired launch (or the sentinel)
  std::atomic<uint64_t> completed_{0};
  std::atomic<int> waiters_{0};  // read at every retirement, written only by waiters
  std::atomic<uint64_t> waited_{0};  // the largest seq wait_for was called for
  std::atomic<uint32_t> retire_epoch_{0};  // futex word: bumped at every retirement
  std::atomic<uint64_t> wake_at_{UINT64_MAX};  // the least seq a sleeping waiter waits for
  alignas(64) std::atomic<bool> failed_{false};
  std::string error_;  // guarded by m_
};

// The stream ops on `dev` launch onto from this thread (the device's default stream
// unless a StreamGuard is active).
Stream& current_stream(Device& dev);

class StreamGuard {
 public:
  explicit StreamGuard(Stream& s);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Stream* prev_;
  int device_;
};

}  // namespace opscope
