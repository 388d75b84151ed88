// KernelFn (the launch's closure holder: inline up to kInline bytes, heap beyond) and
// the pool allocator behind each tensor's Storage.
#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <memory>
#include <stdexcept>
#include <thread>

#include "opscope/core/pool_allocator.h"
#include "opscope/runtime/kernel_fn.h"

using namespace opscope;

TEST(KernelFn, SmallClosuresLiveInline) {
  int64_t sum = 0;
  KernelFn f = [&sum](int64_t b, int64_t e) { sum += e - b; };
  EXPECT_TRUE(f.is_inline());
  f(2, 10);
  EXPECT_EQ(sum, 8);
}

TEST(KernelFn, LargeClosuresGoToTheHeapAndStillWork) {
  std::array<int64_t, 64> big{};
  big[63] = 7;
  int64_t got = 0;
  KernelFn f = [big, &got](int64_t b, int64_t) { got = big[63] + b; };
  EXPECT_FALSE(f.is_inline());
  KernelFn g = f;  // copies the heap closure
  f = nullptr;
  EXPECT_FALSE(bool(f));
  g(1, 2);
  EXPECT_EQ(got, 8);
}

TEST(KernelFn, MoveTransfersAndDestroysExactlyOnce) {
  auto token = std::make_shared<int>(5);
  {
    KernelFn a = [token](int64_t, int64_t) {};
    EXPECT_EQ(token.use_count(), 2);
    KernelFn b = std::move(a);
    EXPECT_FALSE(bool(a));
    EXPECT_EQ(token.use_count(), 2);
    KernelFn c;
    c = b;
    EXPECT_EQ(token.use_count(), 3);
    c = std::move(b);  // c's old closure is destroyed, b's moves in
    EXPECT_EQ(token.use_count(), 2);
  }
  EXPECT_EQ(token.use_count(), 1);
}

TEST(KernelFn, MutableClosuresKeepState) {
  KernelFn f = [n = 0](int64_t, int64_t) mutable {
    if (++n == 3) throw std::runtime_error("third call");
  };
  f(0, 1);
  f(0, 1);
  EXPECT_THROW(f(0, 1), std::runtime_error);
}

TEST(KernelFn, CopyingAMoveOnlyClosureThrows) {
  auto p = std::make_unique<int>(1);
  KernelFn f = [p = std::move(p)](int64_t, int64_t) {};
  EXPECT_THROW(KernelFn g(f), std::bad_function_call);
  KernelFn h = std::move(f);  // moving is fine
  EXPECT_TRUE(bool(h));
}

TEST(PoolAllocator, ReusesBlocksAndSurvivesCrossThreadFrees) {
  PoolAllocator<std::array<char, 40>> a;
  auto* p = a.allocate(1);
  a.deallocate(p, 1);
  EXPECT_EQ(a.allocate(1), p);  // the freed block comes back first
  std::shared_ptr<int> s = std::allocate_shared<int>(PoolAllocator<int>(), 42);
  std::thread([s = std::move(s)]() mutable { s.reset(); }).join();  // freed on another thread
  auto t = std::allocate_shared<int>(PoolAllocator<int>(), 7);
  EXPECT_EQ(*t, 7);
  a.deallocate(p, 1);
}
