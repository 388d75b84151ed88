// Sleeping on a 32-bit atomic with Linux futexes, without the waiter-pool indirection
// of std::atomic::wait: the device's cores wake each other on every multi-core launch.
#pragma once
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <ctime>

namespace opscope {

// Sleeps while *a == expected (returns at once if it already differs; may wake spuriously).
inline void futex_wait(std::atomic<uint32_t>& a, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&a), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}
// The same, for at most `timeout_ns`.
inline void futex_wait_for(std::atomic<uint32_t>& a, uint32_t expected, int64_t timeout_ns) {
  timespec ts{time_t(timeout_ns / 1'000'000'000), long(timeout_ns % 1'000'000'000)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&a), FUTEX_WAIT_PRIVATE, expected, &ts, nullptr, 0);
}
inline void futex_wake_all(std::atomic<uint32_t>& a) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&a), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}
inline void futex_wake_one(std::atomic<uint32_t>& a) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&a), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

}  // namespace opscope
