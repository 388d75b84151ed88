// Threads waiting on one stream for different launches: each wakes when its own launch is
// done, whoever else waits for a later one. The stream wakes sleeping waiters only when
// the least launch one of them waits for retires (not at every retirement); a waiter for
// an earlier launch that slept through its retirement would hang here, since the later
// launch waits for it.
#include <gtest/gtest.h>
#include <immintrin.h>

#include <atomic>
#include <thread>

#include "opscope/runtime/cpu_device.h"
#include "opscope/runtime/runtime.h"
#include "opscope/runtime/stream.h"

using namespace opscope;

namespace {

LaunchSpec spec_of(const char* name, KernelBody body) {
  LaunchSpec s;
  s.name = name;
  s.body = std::move(body);
  return s;
}

}  // namespace

TEST(StreamWaiters, AWaiterForAnEarlierLaunchWakesWhileAnotherWaitsForALaterOne) {
  CpuDevice dev(1, false);
  Stream& s = dev.default_stream();
  for (int round = 0; round < 40; ++round) {
    std::atomic<int> phase{0};
    // The first launch runs on until the early waiter has begun waiting, and a while more,
    // so that it is mostly asleep (past its polling) when the launch retires.
    runtime::launch(dev, spec_of("first", [&phase](int64_t, int64_t) {
      while (phase.load() < 1) _mm_pause();
      for (int i = 0; i < 100000; ++i) _mm_pause();
    }), {}, {});
    const uint64_t first = s.submitted();
    runtime::launch(dev, spec_of("second", [&phase](int64_t, int64_t) {
      while (phase.load() < 2) _mm_pause();  // until the early waiter has woken
    }), {}, {});
    const uint64_t second = s.submitted();
    std::thread early([&] {
      phase.store(1);
      s.wait_for(first);
      EXPECT_GE(s.completed(), first);
      phase.store(2);
    });
    s.wait_for(second);
    early.join();
    EXPECT_GE(s.completed(), second);
  }
}
