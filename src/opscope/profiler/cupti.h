// CUPTI device tracing: the profiler's GPU side. In every build; without the CUDA
// toolkit (or when no CUPTI session is active) each function is a cheap no-op.
//
// The CUDA device's scheduler thread brackets each enqueue of one of our Launches:
//   prof::cupti_push_launch(launch.id);
//   cudaLaunchKernel(...);          // or cudaMemcpyAsync / cudaMemsetAsync
//   prof::cupti_pop_launch();
// CUPTI then tags the kernel/copy's activity record with our launch id (its external
// correlation id), and collection links it to the launch and through it to the op.
#pragma once
#include <atomic>
#include <cstdint>

namespace opscope::prof {

namespace detail {
// True while a CUPTI session records (set by cupti_start, cleared by cupti_stop).
extern std::atomic<bool> g_cupti_active;
// Ids this thread pushed and has not popped: a pop pairs with a push even when a
// session started or stopped between the two.
inline constinit thread_local int t_cupti_pushed = 0;
void cupti_push_slow(uint64_t launch_id);
void cupti_pop_slow();
}  // namespace detail

// Cost when no CUPTI session records: one relaxed load (push) or a TLS read (pop) and
// a branch.
inline void cupti_push_launch(uint64_t launch_id) {
  if (detail::g_cupti_active.load(std::memory_order_relaxed)) [[unlikely]]
    detail::cupti_push_slow(launch_id);
}
inline void cupti_pop_launch() {
  if (detail::t_cupti_pushed > 0) [[unlikely]]
    detail::cupti_pop_slow();
}

// True when this build links CUPTI (the toolkit was found at configure time).
bool cupti_available();

// Called by the CUDA device when one is made: a recording window that opened before any
// CUDA device existed (an OPSCOPE_PROFILE session opens one before main) starts its GPU
// tracing now.
void cupti_on_device_created();

// At exit, from the CUDA device's handler that runs before the CUDA runtime tears itself
// down (the devices drained): ends CUPTI's collection of the open window, if any, and
// keeps its records, so the session's own (later) handler collects them without calling
// into CUPTI after the runtime has gone.
void cupti_flush_at_exit();

}  // namespace opscope::prof
