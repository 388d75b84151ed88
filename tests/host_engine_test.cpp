// A host engine runs its stream on a thread of its own: the device's cores keep computing
// while it blocks, its launches are ordered with the other streams both ways, its errors
// surface like a kernel's, and each launch is a device event on the stream's own track.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "opscope/core/error.h"
#include "opscope/ops/ops.h"
#include "opscope/profiler/session.h"
#include "opscope/runtime/cpu_device.h"
#include "opscope/runtime/host_engine.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/runtime.h"

using namespace opscope;

namespace {

LaunchSpec spec_of(std::string name, KernelBody body, int64_t bytes = 0) {
  LaunchSpec s;
  s.name = std::move(name);
  s.body = std::move(body);
  s.bytes = bytes;
  return s;
}

}  // namespace

// The engine's launch blocks (as a collective waits for its peers) while a kernel on the
// device's only core runs to completion: the core was never held up by it.
TEST(HostEngine, CoresComputeWhileTheEngineBlocks) {
  CpuDevice dev(1, false);
  HostEngine engine(dev);
  std::atomic<bool> gate{false};
  engine.launch(spec_of("blocked", [&gate](int64_t, int64_t) {
    while (!gate.load()) std::this_thread::yield();
  }), {}, {});
  Tensor x = full({1024}, 2.0, DType::f32, &dev);
  Tensor y = mul(x, x);  // on the default stream, run by core 0
  EXPECT_EQ(y.to_float_vector()[0], 4.0f);
  EXPECT_FALSE(engine.stream().query());
  gate.store(true);
  engine.stream().synchronize();
  EXPECT_TRUE(engine.stream().query());
}

// A launch on the engine runs after the kernel that wrote its input (another stream's);
// a kernel that reads what the engine wrote runs after the engine's launch.
TEST(HostEngine, OrderedAfterItsProducerAndBeforeItsConsumer) {
  CpuDevice dev(2, false);
  HostEngine engine(dev);
  std::atomic<bool> gate{false};
  Tensor a = empty({4}, DType::f32, &dev);
  float* pa = a.data<float>();
  runtime::launch(dev, spec_of("slow_write", [&gate, pa](int64_t, int64_t) {
    while (!gate.load()) std::this_thread::yield();
    for (int i = 0; i < 4; ++i) pa[i] = 7;
  }), {}, {&a});
  Tensor b = empty({4}, DType::f32, &dev);
  float* pb = b.data<float>();
  engine.launch(spec_of("copy_on_engine", [pa, pb](int64_t, int64_t) {
    for (int i = 0; i < 4; ++i) pb[i] = pa[i] + 1;
  }), {&a}, {&b});
  Tensor c = add(b, b);  // default stream: waits for the engine's write of b
  gate.store(true);
  for (float v : c.to_float_vector()) EXPECT_EQ(v, 16.0f);
}

// A kernel that waits for a long engine launch (a consumer of a collective) does not keep
// the scheduler polling, taking a CPU from the engine's transfer: it sleeps until the
// engine's launch retires, then runs the kernel.
TEST(HostEngine, SchedulerSleepsWhileAKernelWaitsForTheEngine) {
  CpuDevice dev(2, false);
  HostEngine engine(dev);
  std::atomic<bool> gate{false};
  Tensor b = empty({4}, DType::f32, &dev);
  float* pb = b.data<float>();
  engine.launch(spec_of("collective", [&gate, pb](int64_t, int64_t) {
    while (!gate.load()) std::this_thread::yield();
    for (int i = 0; i < 4; ++i) pb[i] = 3;
  }), {}, {&b});
  Tensor c = add(b, b);  // queued on the default stream, waiting for the engine
  // Its submit woke the scheduler. A scheduler that polls while its only launch waits
  // sleeps at most once more (it may have been on its way to sleep at the submit); this
  // one sleeps, and is woken again whenever a collective would end. A condition wait: the
  // bound only turns a hang into a failure.
  uint64_t n0 = dev.scheduler_sleeps();
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (dev.scheduler_sleeps() < n0 + 2 && std::chrono::steady_clock::now() < give_up) {
    engine.stream().device().notify_progress();  // as the end of another collective would
    std::this_thread::yield();
  }
  EXPECT_GE(dev.scheduler_sleeps(), n0 + 2) << "the scheduler kept polling while its only kernel waited for the engine";
  EXPECT_FALSE(dev.default_stream().query());
  gate.store(true);
  for (float v : c.to_float_vector()) EXPECT_EQ(v, 6.0f);
}

// Stream::wait orders the engine after everything the caller's stream queued so far.
TEST(HostEngine, WaitsForAnEventOfAnotherStream) {
  CpuDevice dev(2, false);
  HostEngine engine(dev);
  std::atomic<bool> gate{false};
  std::atomic<int> order{0};
  runtime::launch(dev, spec_of("first", [&](int64_t, int64_t) {
    while (!gate.load()) std::this_thread::yield();
    int expected = 0;
    order.compare_exchange_strong(expected, 1);
  }), {}, {});
  engine.stream().wait(dev.default_stream().record());
  int seen = -1;
  engine.launch(spec_of("second", [&](int64_t, int64_t) { seen = order.load(); }), {}, {});
  gate.store(true);
  engine.stream().synchronize();
  EXPECT_EQ(seen, 1);
}

// A body that throws: the error is the stream's, named by the op, at its next
// synchronization; the launches after it on the stream are skipped.
TEST(HostEngine, ErrorSurfacesNamedByTheOpAndSkipsLaterLaunches) {
  CpuDevice dev(1, false);
  HostEngine engine(dev);
  bool later_ran = false;
  {
    OpScope op("c10d::allreduce_", {}, nullptr);
    engine.launch(spec_of("all_reduce_f32", [](int64_t, int64_t) { throw std::runtime_error("peer went away"); }),
                  {}, {});
  }
  engine.launch(spec_of("after", [&](int64_t, int64_t) { later_ran = true; }), {}, {});
  try {
    engine.stream().synchronize();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "[c10d::allreduce_] kernel all_reduce_f32 failed: peer went away");
  }
  EXPECT_FALSE(later_ran);
  // Reported once: the stream works again.
  engine.launch(spec_of("again", [&](int64_t, int64_t) { later_ran = true; }), {}, {});
  engine.stream().synchronize();
  EXPECT_TRUE(later_ran);
}

// Each engine launch is one device event on "cpu:N stream S" with the body's detail,
// linked to its launch like a core's kernel.
TEST(HostEngine, ProfiledOnTheStreamsOwnTrack) {
  CpuDevice dev(1, false);
  HostEngine engine(dev);
  prof::Profiler p;
  p.start();
  {
    OpScope op("c10d::allreduce_", {}, nullptr);
    engine.launch(spec_of("all_reduce_f32", [](int64_t, int64_t) {
      HostEngine::describe("collective all_reduce, in 256 elements, out 256 elements, f32, group of 2");
    }, 1024), {}, {});
  }
  engine.stream().synchronize();
  p.stop();
  const prof::Trace& t = p.trace();
  const prof::TraceEvent* kernel = nullptr;
  const prof::TraceEvent* launch = nullptr;
  for (const prof::TraceEvent& e : t.events) {
    if (e.kind == prof::EventKind::kernel && e.name == "all_reduce_f32") kernel = &e;
    if (e.kind == prof::EventKind::launch && e.name == "all_reduce_f32") launch = &e;
  }
  ASSERT_TRUE(kernel && launch);
  EXPECT_EQ(kernel->id, launch->id);
  EXPECT_EQ(launch->stream, engine.stream().id());
  EXPECT_EQ(kernel->stream, engine.stream().id());
  EXPECT_EQ(kernel->bytes, 1024);
  EXPECT_EQ(kernel->shapes, "collective all_reduce, in 256 elements, out 256 elements, f32, group of 2");
  const prof::Track& track = t.tracks[size_t(kernel->track)];
  EXPECT_EQ(track.kind, prof::Track::Kind::device_core);
  EXPECT_EQ(track.name, fmt::format("{} stream {}", dev.name(), engine.stream().id()));
  EXPECT_EQ(track.core, engine.stream().id());
}

// Gone engine: its stream is drained and falls back to the device's cores.
TEST(HostEngine, DestroyedEngineLeavesADrainedStreamToTheCores) {
  CpuDevice dev(1, false);
  Stream* s = nullptr;
  std::atomic<int> ran{0};
  {
    HostEngine engine(dev);
    s = &engine.stream();
    for (int i = 0; i < 8; ++i) engine.launch(spec_of("n", [&](int64_t, int64_t) { ran.fetch_add(1); }), {}, {});
  }
  EXPECT_EQ(ran.load(), 8);
  EXPECT_EQ(s->engine(), nullptr);
  {
    StreamGuard on(*s);
    runtime::launch(dev, spec_of("on_cores", [&](int64_t, int64_t) { ran.fetch_add(1); }), {}, {});
  }
  s->synchronize();
  EXPECT_EQ(ran.load(), 9);
}
