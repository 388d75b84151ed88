// A spinlock for the launch path's short critical sections (a few pointer moves).
// Unlocking is a plain release store, where a pthread mutex pays a second atomic
// read-modify-write; each of those waits for the store buffer, and on a VM whose
// cross-core transfers cost ~250 ns that wait dominated a tiny op's launch. Waiters
// yield after a short spin, so a preempted holder is not starved.
#pragma once
#include <immintrin.h>
#include <sched.h>

#include <atomic>

namespace opscope {

class SpinLock {
 public:
  void lock() {
    for (int spins = 0; locked_.exchange(true, std::memory_order_acquire);) {
      do {
        if (++spins < 64) _mm_pause();
        else sched_yield();
      } while (locked_.load(std::memory_order_relaxed));
    }
  }
  bool try_lock() { return !locked_.load(std::memory_order_relaxed) && !locked_.exchange(true, std::memory_order_acquire); }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace opscope
