// The caching allocator reuses a block in stream order (allocator.h): a block the host
// dropped while a queued launch still reads it goes at once to the next allocation on the
// same stream, and to other streams and the host only once that launch has run.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "opscope/ops/ops.h"
#include "opscope/runtime/cpu_device.h"
#include "opscope/runtime/runtime.h"

using namespace opscope;

namespace {

// A launch that waits for `gate` (a minute at most: a broken schedule fails, never hangs),
// then reads element 3 of `t` into `seen`.
void launch_gated_reader(Device& dev, const Tensor& t, std::atomic<bool>& gate, std::atomic<float>& seen) {
  LaunchSpec spec;
  spec.name = "gated_reader";
  const float* p = t.data<float>();
  spec.body = [&gate, &seen, p](int64_t, int64_t) {
    auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    while (!gate.load() && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
    seen.store(p[3]);
  };
  runtime::launch(dev, std::move(spec), {&t}, {});
}

// A launch that writes `value` to element 3 of `t`.
void launch_writer(Device& dev, const Tensor& t, float value) {
  LaunchSpec spec;
  spec.name = "writer";
  float* p = t.data<float>();
  spec.body = [p, value](int64_t, int64_t) { p[3] = value; };
  runtime::launch(dev, std::move(spec), {}, {&t});
}

float element3(const Tensor& t) { return t.to_float_vector()[3]; }

// A tensor of 5s read by a gated launch, dropped by the host while the read is queued;
// returns where its block was.
void* drop_while_read(Device& dev, std::atomic<bool>& gate, std::atomic<float>& seen) {
  Tensor t = full({16}, 5.0, DType::f32, &dev);
  launch_gated_reader(dev, t, gate, seen);
  return t.data_ptr();
}

}  // namespace

TEST(StreamOrderedAllocator, ABlockDroppedWhileReadIsReusedOnItsStreamAfterTheReader) {
  CpuDevice dev(1);
  std::atomic<bool> gate{false};
  std::atomic<float> seen{0};
  void* old_ptr = drop_while_read(dev, gate, seen);  // the host drops it; the reader is still queued
  EXPECT_EQ(dev.allocator().stats().allocated, 0) << "the block is cached at once, fenced by the reader";
  int64_t os_allocs = dev.allocator().stats().num_os_allocs;
  Tensor u = runtime::allocate({16}, DType::f32, dev);
  EXPECT_EQ(u.data_ptr(), old_ptr) << "the same stream takes the block at once";
  EXPECT_EQ(dev.allocator().stats().num_os_allocs, os_allocs);
  launch_writer(dev, u, 9.0f);  // queued after the reader: it must not see 9
  gate.store(true);
  dev.synchronize();
  EXPECT_EQ(seen.load(), 5.0f);
  EXPECT_EQ(element3(u), 9.0f);
}

TEST(StreamOrderedAllocator, OtherStreamsAndTheHostWaitForTheFence) {
  CpuDevice dev(1);
  Stream& other = dev.create_stream();
  std::atomic<bool> gate{false};
  std::atomic<float> seen{0};
  void* old_ptr = drop_while_read(dev, gate, seen);
  Block for_host = dev.allocator().allocate(16 * 4);
  EXPECT_NE(for_host.ptr, old_ptr) << "the host would write a block the reader still reads";
  Tensor v;
  {
    StreamGuard g(other);
    v = runtime::allocate({16}, DType::f32, dev);
    EXPECT_NE(v.data_ptr(), old_ptr) << "another stream's launch could run before the reader";
  }
  gate.store(true);
  dev.synchronize();
  EXPECT_EQ(seen.load(), 5.0f);
  Block after = dev.allocator().allocate(16 * 4);
  EXPECT_EQ(after.ptr, old_ptr) << "the fence is passed: the block is idle";
  dev.allocator().free(after);
  dev.allocator().free(for_host);
}

// A block handed out in stream order keeps its fence: a launch on another stream that
// uses the new tensor waits for the previous owner's reader.
TEST(StreamOrderedAllocator, ALaunchOnAnotherStreamWaitsForThePreviousOwner) {
  CpuDevice dev(2);
  Stream& other = dev.create_stream();
  std::atomic<bool> gate{false};
  std::atomic<float> seen{0};
  void* old_ptr = drop_while_read(dev, gate, seen);
  Tensor u = runtime::allocate({16}, DType::f32, dev);
  ASSERT_EQ(u.data_ptr(), old_ptr);
  {
    StreamGuard g(other);
    launch_writer(dev, u, 9.0f);
  }
  gate.store(true);
  dev.synchronize();
  EXPECT_EQ(seen.load(), 5.0f) << "the writer on the other stream ran before the reader";
  EXPECT_EQ(element3(u), 9.0f);
}

// Dropped, then freed without a launch of its own: the block still carries the previous
// owner's fence, so the host does not get it early.
TEST(StreamOrderedAllocator, AnUnusedBlockKeepsThePreviousFence) {
  CpuDevice dev(1);
  std::atomic<bool> gate{false};
  std::atomic<float> seen{0};
  void* old_ptr = drop_while_read(dev, gate, seen);
  { Tensor unused = runtime::allocate({16}, DType::f32, dev); }
  Block for_host = dev.allocator().allocate(16 * 4);
  EXPECT_NE(for_host.ptr, old_ptr);
  gate.store(true);
  dev.synchronize();
  EXPECT_EQ(seen.load(), 5.0f);
  dev.allocator().free(for_host);
}

// empty_cache() gives blocks back to the OS only after the launches that still use them:
// under AddressSanitizer a reader of a returned block would fail the test.
TEST(StreamOrderedAllocator, EmptyCacheWaitsForQueuedReaders) {
  CpuDevice dev(1);
  std::atomic<bool> gate{false};
  std::atomic<float> seen{0};
  {
    Tensor t = full({1 << 20}, 5.0, DType::f32, &dev);  // 4 MiB: a block of its own
    launch_gated_reader(dev, t, gate, seen);
  }
  std::thread opener([&] { gate.store(true); });
  dev.allocator().empty_cache();
  opener.join();
  EXPECT_EQ(seen.load(), 5.0f);
  EXPECT_EQ(dev.allocator().stats().reserved, 0);
}

// The steady state the reuse is for: a burst of queued calls, each dropping the last
// one's output, takes a handful of blocks rather than one per call.
TEST(StreamOrderedAllocator, AQueuedBurstReusesItsOutputs) {
  CpuDevice dev(1);
  std::atomic<bool> gate{false};
  std::atomic<float> seen{0};
  Tensor x = full({1 << 20}, 1.0, DType::f32, &dev);
  launch_gated_reader(dev, x, gate, seen);  // nothing below runs until the burst is queued
  int64_t os_allocs = dev.allocator().stats().num_os_allocs;
  Tensor y;
  for (int i = 0; i < 20; ++i) y = add(x, x);
  EXPECT_LE(dev.allocator().stats().num_os_allocs - os_allocs, 2);
  gate.store(true);
  EXPECT_EQ(element3(y), 2.0f);
}
