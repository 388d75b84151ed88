// The device model: asynchronous launches, stream order, events, errors surfacing at
// synchronization, the caching allocator.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include <sched.h>

#include "opscope/core/clock.h"
#include "opscope/core/error.h"
#include "opscope/ops/ops.h"
#include "opscope/runtime/cpu_device.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/runtime.h"

using namespace opscope;

namespace {

// Waits until `done()` holds: a gate between threads. The deadline only keeps a broken
// schedule from hanging the suite (the test then fails on `false`); no test result
// depends on how long anything takes.
template <class F>
bool wait_until(F done) {
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::yield();
  }
  return true;
}

// Launches a kernel that blocks until `gate` opens, then sets `done`.
void launch_gated(Device& dev, std::atomic<bool>& gate, std::atomic<int>& done, int value) {
  LaunchSpec spec;
  spec.name = "gated";
  spec.body = [&gate, &done, value](int64_t, int64_t) {
    while (!gate.load()) std::this_thread::yield();
    done.store(value);
  };
  runtime::launch(dev, std::move(spec), {}, {});
}

}  // namespace

// A device of another type that takes a slot: names count devices of their own type.
class OtherTypeDevice final : public Device {
 public:
  OtherTypeDevice() : Device(DeviceType::cuda) {}
  int num_cores() const override { return 1; }
  std::string description() const override { return "test device"; }
  void notify_work() override {}
};

TEST(Runtime, DeviceNamesCountDevicesOfTheirOwnType) {
  // Slots are shared by every type (profiles key devices by them); the name's number is
  // the lowest free among devices of the same type. On a GPU machine the check found
  // the process's CPU device named "cpu:1" because cuda(0) had taken slot 0.
  std::set<std::string> cpu_names;
  for (int i = 0; i < Device::kMaxDevices; ++i)
    if (Device* d = Device::by_index(i); d && d->type() == DeviceType::cpu) cpu_names.insert(d->name());
  auto other = std::make_unique<OtherTypeDevice>();
  auto a = std::make_unique<CpuDevice>(1, false);
  auto b = std::make_unique<CpuDevice>(1, false);
  EXPECT_EQ(other->name().rfind("cuda:", 0), 0u) << other->name();
  EXPECT_FALSE(cpu_names.count(a->name())) << a->name() << " repeats a live CPU device's name";
  EXPECT_FALSE(cpu_names.count(b->name())) << b->name();
  EXPECT_NE(a->name(), b->name());
  EXPECT_NE(a->index(), b->index());
  std::string a_name = a->name();
  a.reset();  // its number is free again
  CpuDevice c(1, false);
  EXPECT_EQ(c.name(), a_name);
}

TEST(Runtime, LaunchReturnsBeforeKernelEnds) {
  CpuDevice dev(2);
  std::atomic<bool> gate{false};
  std::atomic<int> done{0};
  launch_gated(dev, gate, done, 7);
  // The launch returned although the kernel cannot finish until we open the gate.
  EXPECT_EQ(done.load(), 0);
  EXPECT_FALSE(dev.default_stream().query());
  gate.store(true);
  dev.default_stream().synchronize();
  EXPECT_EQ(done.load(), 7);
  EXPECT_TRUE(dev.default_stream().query());
}

TEST(Runtime, StreamRunsInOrder) {
  CpuDevice dev(2);
  std::vector<int> order;
  std::mutex m;
  for (int i = 0; i < 100; ++i) {
    LaunchSpec spec;
    spec.name = "append";
    spec.body = [&, i](int64_t, int64_t) {
      std::lock_guard<std::mutex> g(m);
      order.push_back(i);
    };
    runtime::launch(dev, std::move(spec), {}, {});
  }
  dev.synchronize();
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
}

// The device's cores read a launch while the host fills the next one: the two must not
// share a page, whose lines the reading core's prefetcher would take from the host.
TEST(Runtime, LaunchesMadeInARowSitOnDifferentPages) {
  CpuDevice dev(1);
  std::atomic<bool> gate{false};
  std::atomic<int> done{0};
  launch_gated(dev, gate, done, 1);  // nothing retires, so nothing is recycled: each launch is new
  Stream& s = dev.default_stream();
  std::vector<uintptr_t> at;
  for (int i = 0; i < 600; ++i) {  // more than one slab's worth
    Launch* l = s.new_launch();
    l->kind = Launch::Kind::marker;
    at.push_back(reinterpret_cast<uintptr_t>(l));
    s.submit(l);
  }
  gate.store(true);
  s.synchronize();
  EXPECT_EQ(done.load(), 1);
  EXPECT_EQ(std::set<uintptr_t>(at.begin(), at.end()).size(), at.size());
  for (size_t i = 0; i < at.size(); ++i) {
    EXPECT_EQ(at[i] % alignof(Launch), 0u) << i;
    if (i > 0) {
      EXPECT_NE(at[i] / 4096, at[i - 1] / 4096) << "launches " << i - 1 << " and " << i << " share a page";
    }
  }
}

namespace {
// Launches `body` over 1000 work units in grains of 10 (so every core may take part),
// declaring `bytes` moved.
void submit_split(Device& dev, std::function<void(int64_t, int64_t)> body, int64_t bytes = 0) {
  LaunchSpec spec;
  spec.name = "split";
  spec.work = 1000;
  spec.grain = 10;
  spec.bytes = bytes;
  spec.body = [body = std::move(body)](int64_t b, int64_t e) { body(b, e); };
  runtime::launch(dev, std::move(spec), {}, {});
}

// The same, and waits for it.
void launch_split(Device& dev, std::function<void(int64_t, int64_t)> body, int64_t bytes = 0) {
  submit_split(dev, std::move(body), bytes);
  dev.synchronize();
}
}  // namespace

TEST(Runtime, StaticScheduleGivesEachCoreItsSlice) {
  CpuDevice dev(2, /*pin=*/false, 0, CpuSchedule::static_slices);
  std::vector<std::atomic<int>> hits(1000);
  std::map<std::thread::id, std::vector<std::pair<int64_t, int64_t>>> ranges;
  std::mutex m;
  launch_split(dev, [&](int64_t b, int64_t e) {
    {
      std::lock_guard<std::mutex> g(m);
      ranges[std::this_thread::get_id()].push_back({b, e});
    }
    for (int64_t i = b; i < e; ++i) hits[i]++;
  });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);  // every unit exactly once
  ASSERT_EQ(ranges.size(), 2u);                 // both cores took part, one slice each
  std::set<std::pair<int64_t, int64_t>> slices;
  for (auto& [tid, rs] : ranges) {
    ASSERT_EQ(rs.size(), 1u);
    slices.insert(rs[0]);
  }
  EXPECT_EQ(slices, (std::set<std::pair<int64_t, int64_t>>{{0, 500}, {500, 1000}}));
  EXPECT_NE(dev.description().find("static schedule"), std::string::npos) << dev.description();
}

// The default schedule: a core held up in its chunk (here: held until every other unit
// is done; in life, a core that was asleep or preempted when the launch began) does not
// hold up the rest of the launch — the free core runs its own slice, then takes the rest
// of the other's. The static schedule would leave half the units to the held-up core
// (and never release it: the gate's deadline fails the test).
TEST(Runtime, AFreeCoreTakesWhatAHeldUpCoreLeft) {
  CpuDevice dev(2, /*pin=*/false, 0, CpuSchedule::steal);
  std::vector<std::atomic<int>> hits(1000);
  std::atomic<int64_t> units_done{0};
  std::map<std::thread::id, int64_t> units;
  std::thread::id slow;
  std::mutex m;
  bool released = false;
  launch_split(dev, [&](int64_t b, int64_t e) {
    bool first = false;  // the first chunk to run, on whichever core starts first, is held up
    {
      std::lock_guard<std::mutex> g(m);
      units[std::this_thread::get_id()] += e - b;
      if (slow == std::thread::id()) {
        slow = std::this_thread::get_id();
        first = true;
      }
    }
    if (first) released = wait_until([&] { return units_done.load() == 1000 - (e - b); });
    for (int64_t i = b; i < e; ++i) hits[i]++;
    units_done += e - b;
  });
  EXPECT_TRUE(released) << "the free core did not take the held-up core's chunks";
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);  // every unit exactly once
  ASSERT_EQ(units.size(), 2u);
  // 2 cores x kChunksPerCore chunks: the held-up core did only the first one.
  EXPECT_EQ(units[slow], 1000 / (2 * CpuDevice::kChunksPerCore));
}

// On a machine with as many cores as CPUs, the last core shares the host thread's CPU:
// whenever it works while the host submits, the host waits for a time slice, so then it
// joins only launches that move enough bytes to pay for that. A launch the host waits for
// (synchronize) runs while the host sleeps, its CPU free, and that core joins it; one after
// the launch the host waits for does not (the host may be submitting again). Launches
// that declare no cost keep every core, and the static schedule keeps every core too.
// What a launch is cut into shows how many cores it was given: one slice runs whole on
// the scheduler core; two slices are cut into 2 x kChunksPerCore chunks (steal) or 2
// (static). Where two cores are given, the first chunk holds until the second core has
// joined, so both take part on any machine. A gated kernel holds the scheduler until the
// launch under test is queued behind it, so the host is submitting (or waiting) when that
// launch starts, whatever the timing.
TEST(Runtime, ACoreOnTheHostsCpuJoinsSmallLaunchesOnlyWhenTheHostWaitsForThem) {
  cpu_set_t all;
  CPU_ZERO(&all);
  ASSERT_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
  if (CPU_COUNT(&all) < 2) GTEST_SKIP() << "needs 2 CPUs to pin a device's two cores to";
  int host = sched_getcpu();
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(host, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);  // this thread stays on `host`
  struct Restore {
    cpu_set_t s;
    ~Restore() { sched_setaffinity(0, sizeof(s), &s); }
  } restore{all};

  struct Cut {
    size_t chunks = 0, threads = 0;
    bool joined = true;  // where chunks > 1: the second core came
  };
  enum class Host { submits, waits, waits_for_the_launch_before };
  auto cut_of = [&](CpuDevice& dev, int64_t bytes, Host host_does) {
    std::set<std::thread::id> threads;
    std::atomic<int> seen{0}, units{0}, gated{0};
    std::atomic<bool> gate{false};
    size_t chunks = 0;
    bool joined = true;
    std::mutex m;
    launch_gated(dev, gate, gated, 1);
    Stream& s = dev.stream(0);
    if (host_does == Host::waits_for_the_launch_before) submit_split(dev, [](int64_t, int64_t) {}, 1);
    const uint64_t before = s.submitted();
    submit_split(
        dev,
        [&](int64_t b, int64_t e) {
          bool first;
          {
            std::lock_guard<std::mutex> g(m);
            first = chunks++ == 0;
            if (threads.insert(std::this_thread::get_id()).second) ++seen;
          }
          if (first && e - b < 1000) joined = wait_until([&] { return seen.load() == 2; });
          units += int(e - b);
        },
        bytes);
    if (host_does == Host::submits) {
      gate.store(true);  // and keep this thread busy (not in synchronize) until it ran
      EXPECT_TRUE(wait_until([&] { return units.load() == 1000; }));
      dev.synchronize();
    } else {
      const uint64_t until = host_does == Host::waits ? s.submitted() : before;
      std::thread opener([&] {
        EXPECT_TRUE(wait_until([&] { return s.waited() == until; }));
        gate.store(true);
      });
      s.wait_for(until);
      opener.join();
      EXPECT_TRUE(wait_until([&] { return units.load() == 1000; }));
      dev.synchronize();
    }
    return Cut{chunks, threads.size(), joined};
  };
  CpuDevice dev(2, /*pin=*/true, 0, CpuSchedule::steal);
  ASSERT_EQ(dev.cpu_of_core(1), host) << dev.description();
  // The device learns the host's CPU at a submit, and may read it before the first one.
  cut_of(dev, 1, Host::submits);
  const size_t steal_chunks = 2 * CpuDevice::kChunksPerCore;
  Cut small = cut_of(dev, 1 << 20, Host::submits), big = cut_of(dev, 64 << 20, Host::submits),
      unknown = cut_of(dev, 0, Host::submits), small_waited = cut_of(dev, 1 << 20, Host::waits),
      small_after_waited = cut_of(dev, 1 << 20, Host::waits_for_the_launch_before);
  EXPECT_EQ(small.chunks, 1u);  // 1 MiB while the host submits: one slice, the host keeps its CPU
  EXPECT_EQ(small.threads, 1u);
  EXPECT_EQ(big.chunks, steal_chunks);  // 64 MiB: both cores
  EXPECT_TRUE(big.joined);
  EXPECT_EQ(big.threads, 2u);
  EXPECT_EQ(unknown.chunks, steal_chunks);  // cost unknown: both cores
  EXPECT_TRUE(unknown.joined);
  EXPECT_EQ(unknown.threads, 2u);
  EXPECT_EQ(small_waited.chunks, steal_chunks);  // 1 MiB while the host waits: both cores
  EXPECT_TRUE(small_waited.joined);
  EXPECT_EQ(small_waited.threads, 2u);
  EXPECT_EQ(small_after_waited.chunks, 1u);  // after the launch waited for: the host may run
  EXPECT_EQ(small_after_waited.threads, 1u);
  CpuDevice fixed(2, /*pin=*/true, 0, CpuSchedule::static_slices);
  cut_of(fixed, 1, Host::submits);
  Cut fixed_small = cut_of(fixed, 1 << 20, Host::submits);
  EXPECT_EQ(fixed_small.chunks, 2u);  // static: every core, every launch
  EXPECT_TRUE(fixed_small.joined);
  EXPECT_EQ(fixed_small.threads, 2u);
}

TEST(Runtime, ScheduleFromTheEnvironment) {
  setenv("OPSCOPE_CPU_SCHEDULE", "static", 1);
  EXPECT_EQ(CpuDevice(2, false).schedule(), CpuSchedule::static_slices);
  setenv("OPSCOPE_CPU_SCHEDULE", "guided", 1);
  try {
    CpuDevice bad(2, false);
    ADD_FAILURE() << "a bad OPSCOPE_CPU_SCHEDULE was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("OPSCOPE_CPU_SCHEDULE"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'guided'"), std::string::npos) << e.what();
  }
  unsetenv("OPSCOPE_CPU_SCHEDULE");
  EXPECT_EQ(CpuDevice(2, false).schedule(), CpuSchedule::steal);
}

// The scheduler (core 0) runs one launch at a time, looking at the streams in order. A
// gated kernel on the default stream holds it while a writer (on a later stream) and a
// reader waiting for the writer's event (on an earlier one) are queued; once free, it
// finds both queued, and only the event keeps it from running the reader first.
TEST(Runtime, EventsOrderStreams) {
  CpuDevice dev(2);
  Stream& reader = dev.create_stream();
  Stream& writer = dev.create_stream();
  std::atomic<bool> gate{false};
  std::atomic<int> held{0}, done{0};
  launch_gated(dev, gate, held, 1);  // on the default stream
  Event e;
  {
    StreamGuard g(writer);
    LaunchSpec spec;
    spec.name = "write";
    spec.body = [&](int64_t, int64_t) { done.store(1); };
    runtime::launch(dev, std::move(spec), {}, {});
    e = writer.record();
  }
  reader.wait(e);
  std::atomic<int> seen{-1};
  {
    StreamGuard g(reader);
    LaunchSpec spec;
    spec.name = "after";
    spec.body = [&](int64_t, int64_t) { seen.store(done.load()); };
    runtime::launch(dev, std::move(spec), {}, {});
  }
  EXPECT_EQ(seen.load(), -1);  // the gate holds everything
  EXPECT_FALSE(e.query());
  gate.store(true);
  reader.synchronize();
  EXPECT_EQ(seen.load(), 1);  // the reader ran after the writer
  EXPECT_TRUE(e.query());
}

// The events around a kernel bracket it: their elapsed time is at least the kernel's own
// (read by the kernel) and at most the host's wait for both.
TEST(Runtime, EventElapsedTime) {
  CpuDevice dev(1);
  int64_t host0 = now_ns();
  Event a = dev.default_stream().record();
  std::atomic<int64_t> k0{0}, k1{0};
  LaunchSpec spec;
  spec.name = "spin";
  spec.body = [&](int64_t, int64_t) {
    k0.store(now_ns());
    while (now_ns() - k0.load() < 1'000'000) {  // 1 ms of work
    }
    k1.store(now_ns());
  };
  runtime::launch(dev, std::move(spec), {}, {});
  Event b = dev.default_stream().record();
  double ms = a.elapsed_ms(b);
  int64_t host1 = now_ns();
  EXPECT_GE(ms * 1e6, double(k1.load() - k0.load()));
  EXPECT_LE(ms * 1e6, double(host1 - host0));
}

TEST(Runtime, KernelErrorSurfacesAtSyncNamingTheOp) {
  CpuDevice dev(2);
  std::atomic<int> ran_after{0};
  {
    OpScope op("my_op", {}, nullptr);
    LaunchSpec spec;
    spec.name = "my_kernel";
    spec.body = [](int64_t, int64_t) { throw std::runtime_error("boom"); };
    runtime::launch(dev, std::move(spec), {}, {});  // returns: the error is not known yet
  }
  LaunchSpec next;
  next.name = "next";
  next.body = [&](int64_t, int64_t) { ran_after++; };
  runtime::launch(dev, std::move(next), {}, {});
  try {
    dev.default_stream().synchronize();
    FAIL() << "expected the kernel's error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[my_op]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("boom"), std::string::npos) << e.what();
  }
  EXPECT_EQ(ran_after.load(), 0);  // work after a failed kernel is skipped
  // The error was reported once; the stream works again.
  LaunchSpec again;
  again.name = "again";
  again.body = [&](int64_t, int64_t) { ran_after++; };
  runtime::launch(dev, std::move(again), {}, {});
  EXPECT_NO_THROW(dev.default_stream().synchronize());
  EXPECT_EQ(ran_after.load(), 1);
}

TEST(Runtime, ErrorOnHelperCoreSurfaces) {
  CpuDevice dev(2);
  LaunchSpec spec;
  spec.name = "half_fails";
  spec.work = 100;
  spec.grain = 1;
  spec.body = [](int64_t b, int64_t) {
    if (b > 0) throw Error("[half] second slice failed");
  };
  runtime::launch(dev, std::move(spec), {}, {});
  EXPECT_THROW(dev.synchronize(), Error);
}

TEST(Runtime, ReadingATensorSynchronizes) {
  CpuDevice dev(2);
  Tensor t = full({1000}, 3.0, DType::f32, &dev);
  auto v = t.to_float_vector();
  ASSERT_EQ(v.size(), 1000u);
  for (float x : v) EXPECT_EQ(x, 3.0f);
}

// A read on one stream of what another stream writes waits for the write. As in
// EventsOrderStreams, a gated kernel holds the scheduler until the write (on a later
// stream) and the read (on an earlier one) are both queued; then only the dependency
// keeps the scheduler from running the read first.
TEST(Runtime, CrossStreamReadWaitsForWriter) {
  CpuDevice dev(2);
  Stream& reads = dev.create_stream();
  Stream& writes = dev.create_stream();
  std::atomic<bool> gate{false};
  std::atomic<int> held{0};
  launch_gated(dev, gate, held, 1);  // on the default stream
  Tensor t = empty({4}, DType::f32, &dev);
  {
    StreamGuard g(writes);
    LaunchSpec spec;
    spec.name = "write";
    float* p = t.data<float>();
    spec.body = [p](int64_t, int64_t) {
      for (int i = 0; i < 4; ++i) p[i] = 42;
    };
    runtime::launch(dev, std::move(spec), {}, {&t});
  }
  const uint64_t before = reads.submitted();
  bool queued = false;
  std::thread opener([&] {  // opens the gate once the read is queued on its stream
    queued = wait_until([&] { return reads.submitted() > before; });
    gate.store(true);
  });
  std::vector<float> v;
  {
    StreamGuard g(reads);
    v = t.to_float_vector();
  }
  opener.join();
  EXPECT_TRUE(queued);
  for (float x : v) EXPECT_EQ(x, 42.0f);
}

TEST(Allocator, FreedBlocksAreReused) {
  CpuDevice dev(1);
  auto before = dev.allocator().stats();
  for (int i = 0; i < 50; ++i) {
    Tensor t = empty({1024, 1024}, DType::f32, &dev);
  }
  auto after = dev.allocator().stats();
  EXPECT_EQ(after.num_allocs - before.num_allocs, 50);
  EXPECT_EQ(after.num_os_allocs - before.num_os_allocs, 1);  // one OS allocation, reused 49 times
  EXPECT_EQ(after.allocated, before.allocated);
  EXPECT_GE(after.peak_allocated, 4 << 20);
  EXPECT_GE(after.reserved, 4 << 20);
  dev.allocator().empty_cache();
  EXPECT_EQ(dev.allocator().stats().reserved, 0);
}

TEST(Allocator, SizesRound) {
  EXPECT_EQ(CachingAllocator::round_size(1), 512u);
  EXPECT_EQ(CachingAllocator::round_size(513), 1024u);
  EXPECT_EQ(CachingAllocator::round_size((1 << 20) + 1), size_t(2 << 20));
  // From 64 KiB, eighths of the next power of two: a growing KV cache's steps share blocks.
  EXPECT_EQ(CachingAllocator::round_size(65536), 65536u);
  EXPECT_EQ(CachingAllocator::round_size(65537), 65536u + 16384u);
  EXPECT_EQ(CachingAllocator::round_size(327680), 327680u);          // 5 x 64 KiB
  EXPECT_EQ(CachingAllocator::round_size(327680 + 8192), 393216u);   // the next step: 6 x 64 KiB
  EXPECT_EQ(CachingAllocator::round_size(393216 - 8192), 393216u);   // shares that block
}

// Blocks under 1 MiB are cut from 2 MiB chunks (one OS allocation for many; fresh pages
// fault in a huge page at a time), and the chunks go back to the OS only when none of
// their blocks is in use. Under AddressSanitizer each block is its own allocation.
TEST(Allocator, SmallBlocksShareChunksThatGoBackWhenAllAreFree) {
  CpuDevice dev(1);
  CachingAllocator& a = dev.allocator();
  a.empty_cache();
  auto before = a.stats();
  std::vector<Block> blocks;
  for (int i = 0; i < 12; ++i) blocks.push_back(a.allocate(size_t(100 + i) << 10));  // 100-111 KiB: 112 KiB each
  auto st = a.stats();
  if (!CachingAllocator::kChunkedSmallBlocks) {  // ASan: every block an allocation of its own
    EXPECT_EQ(st.num_os_allocs - before.num_os_allocs, 12);
    for (Block& b : blocks) a.free(b);
    a.empty_cache();
    EXPECT_EQ(a.stats().reserved, before.reserved);
    return;
  }
  EXPECT_EQ(st.num_os_allocs - before.num_os_allocs, 1) << "12 x 112 KiB fit one 2 MiB chunk";
  EXPECT_EQ(st.reserved - before.reserved, 2 << 20);
  for (size_t i = 1; i < blocks.size(); ++i)  // cut in order, none overlapping
    EXPECT_EQ(static_cast<char*>(blocks[i].ptr) - static_cast<char*>(blocks[i - 1].ptr), 112 << 10);
  Block last = blocks.back();
  blocks.pop_back();
  for (Block& b : blocks) a.free(b);
  a.empty_cache();  // one block still in use: the chunk stays
  EXPECT_EQ(a.stats().reserved - before.reserved, 2 << 20);
  a.free(last);
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved, before.reserved);
  Block again = a.allocate(100 << 10);  // a fresh chunk after the old one went back
  EXPECT_EQ(a.stats().num_os_allocs - before.num_os_allocs, 2);
  a.free(again);
}

// A launch on a stream other than the tensor's own keeps its storage until it has run
// (on its own stream, the allocator's stream order covers it: stream_allocator_test.cpp).
TEST(Allocator, TensorKeptAliveByPendingKernelOnAnotherStream) {
  CpuDevice dev(1);
  Stream& other = dev.create_stream();
  std::atomic<bool> gate{false};
  std::atomic<float> seen{0};
  {
    Tensor t = full({16}, 5.0, DType::f32, &dev);
    StreamGuard g(other);
    LaunchSpec spec;
    spec.name = "late_reader";
    const float* p = t.data<float>();
    spec.body = [&, p](int64_t, int64_t) {
      while (!gate.load()) std::this_thread::yield();
      seen.store(p[3]);
    };
    runtime::launch(dev, std::move(spec), {&t}, {});
  }  // the user's handle is gone; the launch still holds the storage
  EXPECT_GT(dev.allocator().stats().allocated, 0);
  gate.store(true);
  dev.synchronize();
  EXPECT_EQ(seen.load(), 5.0f);
  EXPECT_EQ(dev.allocator().stats().allocated, 0);
}

TEST(CpuDevice, SchedulerCoreAvoidsTheHostCpu) {
  CpuDevice dev(2);
  std::set<int> cpus;
  for (int c = 0; c < dev.num_cores(); ++c) cpus.insert(dev.cpu_of_core(c));
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  if (CPU_COUNT(&set) < 2) GTEST_SKIP() << "one CPU allowed: every core shares it";
  EXPECT_EQ(cpus.size(), 2u) << "two cores on two allowed CPUs should not share one";
  EXPECT_NE(dev.cpu_of_core(0), dev.host_cpu());
  EXPECT_TRUE(CPU_ISSET(dev.cpu_of_core(0), &set));
}

// Launches are recycled by the submitting thread; what they kept alive must go back
// to the allocator once they have run, however many were queued.
TEST(Runtime, RecycledLaunchesReleaseTheirTensors) {
  CpuDevice dev(2);
  Tensor a = full({8}, 1.0, DType::f32, &dev), b = full({8}, 2.0, DType::f32, &dev);
  dev.synchronize();
  int64_t base = dev.allocator().stats().allocated;
  for (int round = 0; round < 3; ++round) {
    std::vector<Tensor> keep;
    for (int i = 0; i < 5000; ++i) {
      Tensor c = add(a, b);
      if (i % 1000 == 0) keep.push_back(c);
    }
    dev.synchronize();
    EXPECT_EQ(dev.allocator().stats().allocated, base + int64_t(keep.size()) * 512);
    for (const Tensor& t : keep) EXPECT_EQ(t.to_float_vector()[7], 3.0f);
  }
  dev.synchronize();
  EXPECT_EQ(dev.allocator().stats().allocated, base);
}

TEST(Runtime, ManyThreadsSubmitToOneStream) {
  CpuDevice dev(2);
  Tensor one = full({4}, 1.0, DType::f32, &dev);
  std::vector<std::thread> threads;
  std::vector<Tensor> sums(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      Tensor s = full({4}, 0.0, DType::f32, &dev);
      for (int i = 0; i < 2000; ++i) s = add(s, one);
      sums[t] = s;
    });
  for (auto& th : threads) th.join();
  for (const Tensor& s : sums) EXPECT_EQ(s.to_float_vector(), std::vector<float>(4, 2000.0f));
}
