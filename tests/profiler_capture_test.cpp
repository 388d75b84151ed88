// The capture side of the profiler: config parsing, the schedule, the correlation chain
// framework op → runtime launch → device kernel, drop counting, several recording threads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "opscope/analysis/key_averages.h"
#include "opscope/core/error.h"
#include "opscope/ops/ops.h"
#include "opscope/profiler/auto_profile.h"
#include "opscope/profiler/config.h"
#include "opscope/profiler/record_function.h"
#include "opscope/profiler/session.h"
#include "opscope/runtime/cpu_device.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/runtime.h"
#include "opscope/runtime/tensor.h"
#include "child_process.h"
#include "test_util.h"

using namespace opscope;
using opscope::test_util::error_of;
using opscope::test_util::starts_with;
using namespace opscope::prof;
using namespace opscope::analysis;

namespace {

std::vector<const TraceEvent*> events_of(const Trace& t, EventKind k, const std::string& name = "") {
  std::vector<const TraceEvent*> out;
  for (const auto& e : t.events)
    if (e.kind == k && (name.empty() || e.name == name)) out.push_back(&e);
  return out;
}

int64_t count_named(const Trace& t, EventKind k, const std::string& name) {
  return int64_t(events_of(t, k, name).size());
}

// Sets an environment variable for the scope of one test.
class EnvVar {
 public:
  EnvVar(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~EnvVar() { unsetenv(name_); }

 private:
  const char* name_;
};

}  // namespace

// ---- config ----

TEST(ProfilerConfig, ParsesCoreLists) {
  EXPECT_TRUE(CoreSet::parse("all").is_all());
  EXPECT_EQ(CoreSet::parse("0,1").cores(), (std::vector<int>{0, 1}));
  EXPECT_EQ(CoreSet::parse("0-3").cores(), (std::vector<int>{0, 1, 2, 3}));
  CoreSet s = CoreSet::parse(" 8, 0-2 ,1");
  EXPECT_EQ(s.cores(), (std::vector<int>{0, 1, 2, 8}));
  EXPECT_EQ(s.str(), "0-2,8");
  EXPECT_TRUE(s.contains(8));
  EXPECT_FALSE(s.contains(3));
}

TEST(ProfilerConfig, BadCoreListsNameTheString) {
  for (const char* bad : {"", "x", "1,,2", "3-1", "0-", "-1", "4096", "1.5", "0-3,a"}) {
    std::string msg = error_of([&] { CoreSet::parse(bad); });
    EXPECT_TRUE(starts_with(msg, "[cores] '" + std::string(bad) + "'")) << bad << ": " << msg;
  }
}

TEST(ProfilerConfig, ParsesLayers) {
  EXPECT_EQ(parse_layers("framework,runtime,device"), uint32_t(kFramework | kRuntime | kDevice));
  EXPECT_EQ(parse_layers("device"), uint32_t(kDevice));
  EXPECT_EQ(parse_layers("all"), uint32_t(kFramework | kRuntime | kDevice));
  EXPECT_EQ(layers_str(kFramework | kDevice), "framework,device");
  std::string msg = error_of([] { parse_layers("framework,gpu"); });
  EXPECT_TRUE(starts_with(msg, "[layers] 'framework,gpu'")) << msg;
  EXPECT_NE(msg.find("'gpu'"), std::string::npos) << msg;
}

TEST(ProfilerConfig, FromEnv) {
  EnvVar a("OPSCOPE_PROFILE_DIR", "/tmp/somewhere");
  EnvVar b("OPSCOPE_PROFILE_LAYERS", "framework,device");
  EnvVar c("OPSCOPE_PROFILE_CORES", "0-1");
  EnvVar d("OPSCOPE_PROFILE_MAX_EVENTS", "1000");
  EnvVar e("OPSCOPE_PROFILE_SHAPES", "1");
  EnvVar f("OPSCOPE_PROFILE_STACK", "true");
  ProfilerConfig cfg = ProfilerConfig::from_env();
  EXPECT_EQ(cfg.output_dir, "/tmp/somewhere");
  EXPECT_EQ(cfg.layers, uint32_t(kFramework | kDevice));
  EXPECT_EQ(cfg.cores.cores(), (std::vector<int>{0, 1}));
  EXPECT_EQ(cfg.max_events, 1000);
  EXPECT_TRUE(cfg.record_shapes);
  EXPECT_TRUE(cfg.with_stack);
  EXPECT_FALSE(ProfilerConfig::env_enabled());
}

TEST(ProfilerConfig, BadEnvValuesNameTheVariable) {
  struct Case {
    const char* var;
    const char* value;
  };
  for (Case c : {Case{"OPSCOPE_PROFILE", "2"}, Case{"OPSCOPE_PROFILE_LAYERS", "cpu"},
                 Case{"OPSCOPE_PROFILE_CORES", "0-x"}, Case{"OPSCOPE_PROFILE_MAX_EVENTS", "0"},
                 Case{"OPSCOPE_PROFILE_MAX_EVENTS", "lots"}, Case{"OPSCOPE_PROFILE_MAX_EVENTS", "99999999999"},
                 Case{"OPSCOPE_PROFILE_SHAPES", "maybe"}, Case{"OPSCOPE_PROFILE_STACK", "2"}}) {
    EnvVar v(c.var, c.value);
    std::string msg = error_of([] { ProfilerConfig::from_env(); });
    EXPECT_TRUE(starts_with(msg, std::string("[") + c.var + "] '" + c.value + "'")) << c.var << ": " << msg;
  }
}

TEST(ProfilerConfig, InvalidSettingsAreRejectedAtStart) {
  ProfilerConfig cfg;
  cfg.max_events = 0;
  EXPECT_TRUE(starts_with(error_of([&] { Profiler(cfg).start(); }), "[max_events]"));
  cfg = ProfilerConfig{};
  cfg.schedule = Schedule{0, 0, 0, 0, 0};
  EXPECT_TRUE(starts_with(error_of([&] { Profiler(cfg).start(); }), "[schedule] active must be > 0"));
}

// ---- schedule ----

TEST(ProfilerSchedule, StateMachineMatchesTorch) {
  using A = ProfilerAction;
  Schedule s{/*skip_first=*/1, /*wait=*/1, /*warmup=*/1, /*active=*/2, /*repeat=*/2};
  std::vector<A> expect = {A::none,   A::none,   A::warmup, A::record, A::record_and_save,
                           A::none,   A::warmup, A::record, A::record_and_save,
                           A::none,   A::none,   A::none};
  for (size_t i = 0; i < expect.size(); ++i) EXPECT_EQ(s.action(int64_t(i)), expect[i]) << "step " << i;
  // repeat = 0 cycles forever; active = 1 saves every active step.
  Schedule forever{0, 0, 0, 1, 0};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(forever.action(i), A::record_and_save);
  EXPECT_STREQ(action_name(A::record_and_save), "RECORD_AND_SAVE");
}

TEST(ProfilerSchedule, StepsRecordOnlyActiveWindows) {
  ProfilerConfig cfg;
  cfg.layers = kFramework;
  cfg.schedule = Schedule{1, 1, 1, 2, 2};
  std::vector<std::set<std::string>> windows;
  cfg.on_trace_ready = [&](const Trace& t) {
    std::set<std::string> names;
    for (const auto& e : t.events) names.insert(e.name);
    windows.push_back(names);
  };
  Profiler p(cfg);
  p.start();
  for (int step = 0; step < 12; ++step) {
    {
      RecordFunction r("step" + std::to_string(step));
    }
    p.step();
  }
  p.stop();
  ASSERT_EQ(windows.size(), 2u);
  EXPECT_EQ(windows[0], (std::set<std::string>{"step3", "step4"}));
  EXPECT_EQ(windows[1], (std::set<std::string>{"step7", "step8"}));
  EXPECT_EQ(p.traces_collected(), 2);
}

TEST(ProfilerSchedule, NoScheduleRecordsStartToStopAndCallsBack) {
  ProfilerConfig cfg;
  cfg.layers = kFramework;
  int calls = 0;
  cfg.on_trace_ready = [&](const Trace& t) {
    ++calls;
    EXPECT_EQ(count_named(t, EventKind::range, "r"), 3);
  };
  Profiler p(cfg);
  p.start();
  for (int i = 0; i < 3; ++i) {
    OPSCOPE_RECORD_FUNCTION("r");
    p.step();
  }
  EXPECT_EQ(calls, 0);
  p.stop();
  EXPECT_EQ(calls, 1);
}

// ---- sessions ----

TEST(ProfilerSession, OnlyOneSessionAtATime) {
  Profiler a;
  a.start();
  Profiler b;
  std::string msg = error_of([&] { b.start(); });
  EXPECT_TRUE(starts_with(msg, "[profiler] another profile session")) << msg;
  a.stop();
  b.start();
  b.stop();
}

TEST(ProfilerSession, NothingRecordedOutsideASession) {
  { OPSCOPE_RECORD_FUNCTION("before"); }
  Profiler p(ProfilerConfig{});
  p.start();
  { OPSCOPE_RECORD_FUNCTION("inside"); }
  p.stop();
  { OPSCOPE_RECORD_FUNCTION("after"); }
  EXPECT_EQ(layers(), 0u);
  EXPECT_EQ(count_named(p.trace(), EventKind::range, "inside"), 1);
  EXPECT_EQ(count_named(p.trace(), EventKind::range, "before"), 0);
  EXPECT_EQ(count_named(p.trace(), EventKind::range, "after"), 0);
}

// ---- correlation ----

TEST(ProfilerCapture, CorrelationChainOpToLaunchToKernels) {
  CpuDevice dev(2);
  ProfilerConfig cfg;
  cfg.record_shapes = true;
  Profiler p(cfg);
  p.start();
  std::vector<float> host;
  {
    OPSCOPE_RECORD_FUNCTION("chain");
    Tensor a = full({256, 1024}, 1.5, DType::f32, &dev);  // fill kernel
    Tensor b = a.transpose(0, 1).contiguous();            // a view op, then a strided copy
    Tensor c = b.to(DType::bf16);                         // cast kernel
    Tensor d = c.clone();                                 // copy kernel
    host = d.to_float_vector();                           // device-to-host copy + synchronize
  }
  p.stop();
  const Trace& t = p.trace();
  ASSERT_EQ(host.size(), 256u * 1024u);
  EXPECT_EQ(host[12345], 1.5f);

  auto ranges = events_of(t, EventKind::range, "chain");
  ASSERT_EQ(ranges.size(), 1u);
  uint64_t chain_id = ranges[0]->id;

  std::map<uint64_t, const TraceEvent*> ops;
  for (const auto* e : events_of(t, EventKind::op)) ops[e->id] = e;
  for (const char* name : {"full", "transpose", "contiguous", "to", "clone", "to_host"})
    EXPECT_EQ(count_named(t, EventKind::op, name), 1) << name;
  for (auto& [id, e] : ops) {
    EXPECT_EQ(e->parent, chain_id) << e->name;  // every op ran inside the range
    EXPECT_EQ(t.tracks[size_t(e->track)].name, "main thread");
  }
  EXPECT_EQ(events_of(t, EventKind::op, "clone")[0]->shapes, "[(1024, 256) bf16]");
  EXPECT_EQ(events_of(t, EventKind::op, "full")[0]->shapes, "[]");

  // Each launching op → exactly one launch → kernel slices on device-core tracks.
  std::map<std::string, std::string> kernel_of = {
      {"full", "fill_f32"}, {"contiguous", "copy_f32"}, {"to", "cast_f32_bf16"}, {"clone", "copy_bf16"},
      {"to_host", "memcpy_d2h"}};
  for (auto& [op_name, kernel] : kernel_of) {
    const TraceEvent* op = events_of(t, EventKind::op, op_name)[0];
    std::vector<const TraceEvent*> launches;
    for (const auto* l : events_of(t, EventKind::launch))
      if (l->parent == op->id) launches.push_back(l);
    ASSERT_EQ(launches.size(), 1u) << op_name;
    const TraceEvent* l = launches[0];
    EXPECT_EQ(l->name, kernel);
    EXPECT_EQ(l->device, dev.index());
    EXPECT_EQ(l->stream, 0);
    EXPECT_GE(l->t0, op->t0 - 5000);  // one clock: the launch lies within its op (TSC mapping slack)
    EXPECT_LE(l->t1, op->t1 + 5000);
    auto kernels = events_of(t, EventKind::kernel);
    int slices = 0;
    int64_t bytes = 0;
    for (const auto* k : kernels) {
      if (k->id != l->id) continue;
      ++slices;
      bytes += k->bytes;
      EXPECT_EQ(k->parent, op->id);
      EXPECT_EQ(k->name, kernel);
      EXPECT_GE(k->t0, l->t1);  // queued before it ran (both CLOCK_MONOTONIC)
      const Track& tr = t.tracks[size_t(k->track)];
      EXPECT_EQ(tr.kind, Track::Kind::device_core);
      EXPECT_EQ(tr.name, fmt::format("{} core {}", dev.name(), tr.core));  // (names count CPU devices only)
    }
    EXPECT_GE(slices, 1) << op_name;
    EXPECT_NEAR(double(bytes), double(l->bytes), double(slices)) << op_name;  // slices share the launch's bytes
  }
  // 256K elements (1 MiB): one event per core that ran part of the fill. Which cores
  // depends on the machine: a core on the host thread's CPU sits out launches under
  // 8 MiB, and a core asleep when the fill began may find its slice taken.
  std::set<int> cores;
  auto fills = events_of(t, EventKind::kernel, "fill_f32");
  for (const auto* k : fills) cores.insert(t.tracks[size_t(k->track)].core);
  EXPECT_EQ(cores.size(), fills.size());
  EXPECT_TRUE(cores == std::set<int>{0} || cores == std::set<int>{1} || cores == (std::set<int>{0, 1}));

  // Runtime events carry the op they happened in.
  const TraceEvent* to_host = events_of(t, EventKind::op, "to_host")[0];
  bool synced = false;
  for (const auto* s : events_of(t, EventKind::sync)) synced |= s->parent == to_host->id && s->name == "stream";
  EXPECT_TRUE(synced);
  bool allocated = false;
  for (const auto* a : events_of(t, EventKind::alloc))
    allocated |= a->parent == events_of(t, EventKind::op, "clone")[0]->id && a->bytes >= 256 * 1024 * 2;
  EXPECT_TRUE(allocated);
  EXPECT_EQ(t.dropped, 0);
  ASSERT_FALSE(t.devices.empty());

  // Sorted by time.
  for (size_t i = 1; i < t.events.size(); ++i) EXPECT_LE(t.events[i - 1].t0, t.events[i].t0);

  // key_averages sees the chain: the range's device total holds every kernel.
  KeyAverages ka = key_averages(t);
  int64_t chain_device = 0;
  for (const auto& r : ka.rows())
    if (r.name == "chain") chain_device = r.device_total_ns;
  EXPECT_EQ(chain_device, ka.self_device_time_total_ns());
  EXPECT_GT(chain_device, 0);
}

// The case: naive RMSNorm is six framework ops, each → one launch → its kernel
// slices on the cores; the built-in is one op → one launch.
TEST(ProfilerCapture, NaiveRmsNormChainAndBuiltin) {
  CpuDevice dev(2);
  Tensor x = randn({64, 4096}, 1, DType::f32, &dev);
  Tensor w = randn({4096}, 2, DType::f32, &dev);
  dev.synchronize();
  Profiler p;
  p.start();
  {
    OPSCOPE_RECORD_FUNCTION("naive");
    Tensor y = mul(mul(x, rsqrt(add(mean(mul(x, x), {-1}, true), 1e-6))), w);
  }
  {
    OPSCOPE_RECORD_FUNCTION("builtin");
    Tensor y = rms_norm(x, w, 1e-6);
  }
  dev.synchronize();
  p.stop();
  const Trace& t = p.trace();
  std::map<uint64_t, std::vector<const TraceEvent*>> launches_of, kernels_of;
  for (const auto* l : events_of(t, EventKind::launch)) launches_of[l->parent].push_back(l);
  for (const auto* k : events_of(t, EventKind::kernel)) kernels_of[k->id].push_back(k);
  auto check_range = [&](const char* range, size_t want_ops) {
    auto r = events_of(t, EventKind::range, range);
    ASSERT_EQ(r.size(), 1u) << range;
    std::vector<const TraceEvent*> ops;
    for (const auto* op : events_of(t, EventKind::op))
      if (op->parent == r[0]->id) ops.push_back(op);
    EXPECT_EQ(ops.size(), want_ops) << range;
    for (const auto* op : ops) {
      ASSERT_EQ(launches_of[op->id].size(), 1u) << op->name;
      const TraceEvent* l = launches_of[op->id][0];
      ASSERT_FALSE(kernels_of[l->id].empty()) << l->name;
      for (const auto* k : kernels_of[l->id]) {
        EXPECT_EQ(k->parent, op->id);
        EXPECT_EQ(t.tracks[size_t(k->track)].kind, Track::Kind::device_core);
      }
    }
  };
  check_range("naive", 6);
  check_range("builtin", 1);
  EXPECT_EQ(count_named(t, EventKind::op, "mul"), 3);
  EXPECT_EQ(count_named(t, EventKind::op, "rms_norm"), 1);
}

TEST(ProfilerCapture, OnlyTheConfiguredCoresRecord) {
  CpuDevice dev(2, true, 0, CpuSchedule::static_slices);  // so core 1 surely runs a slice
  ProfilerConfig cfg;
  cfg.cores = CoreSet::parse("1");
  Profiler p(cfg);
  p.start();
  Tensor a = full({512, 1024}, 2.0, DType::f32, &dev);
  dev.synchronize();
  p.stop();
  auto kernels = events_of(p.trace(), EventKind::kernel, "fill_f32");
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(p.trace().tracks[size_t(kernels[0]->track)].core, 1);
  EXPECT_EQ(count_named(p.trace(), EventKind::launch, "fill_f32"), 1);
}

TEST(ProfilerCapture, LayersSelectWhatIsRecorded) {
  CpuDevice dev(2);
  ProfilerConfig cfg;
  cfg.layers = kRuntime;
  Profiler p(cfg);
  p.start();
  Tensor a = full({64}, 2.0, DType::f32, &dev);
  dev.synchronize();
  p.stop();
  const Trace& t = p.trace();
  EXPECT_TRUE(events_of(t, EventKind::op).empty());
  EXPECT_TRUE(events_of(t, EventKind::kernel).empty());
  auto launches = events_of(t, EventKind::launch, "fill_f32");
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0]->parent, 0u);  // no framework layer: no op to correlate with
}

TEST(ProfilerCapture, RangesNestAndParentOps) {
  ProfilerConfig cfg;
  cfg.layers = kFramework;
  Profiler p(cfg);
  p.start();
  {
    OPSCOPE_RECORD_FUNCTION("outer");
    {
      RecordFunction inner(std::string("inner \"quoted\"\n"));
      Tensor x;
      OpScope op("fake_op", {&x}, nullptr);
    }
  }
  p.stop();
  const Trace& t = p.trace();
  auto outer = events_of(t, EventKind::range, "outer");
  auto inner = events_of(t, EventKind::range, "inner \"quoted\"\n");
  auto op = events_of(t, EventKind::op, "fake_op");
  ASSERT_EQ(outer.size(), 1u);
  ASSERT_EQ(inner.size(), 1u);
  ASSERT_EQ(op.size(), 1u);
  EXPECT_EQ(outer[0]->parent, 0u);
  EXPECT_EQ(inner[0]->parent, outer[0]->id);
  EXPECT_EQ(op[0]->parent, inner[0]->id);
  EXPECT_LE(outer[0]->t0, inner[0]->t0);
  EXPECT_LE(inner[0]->t0, op[0]->t0);
  EXPECT_LE(op[0]->t1, inner[0]->t1);
  EXPECT_LE(inner[0]->t1, outer[0]->t1);
  EXPECT_LT(outer[0]->value, inner[0]->value);  // sequence numbers follow the begin order
}

TEST(ProfilerCapture, WithStackResolvesTheCallSite) {
  CpuDevice dev(1);
  ProfilerConfig cfg;
  cfg.layers = kFramework;
  cfg.with_stack = true;
  Profiler p(cfg);
  p.start();
  Tensor a = full({4}, 1.0, DType::f32, &dev);
  p.stop();
  auto ops = events_of(p.trace(), EventKind::op, "full");
  ASSERT_EQ(ops.size(), 1u);
  const std::string& src = ops[0]->source;
  // "file:line (function)" with debug info, else "module+0xoffset (function)".
  EXPECT_NE(src.find("WithStackResolvesTheCallSite"), std::string::npos) << src;
}

// A kernel still running when stop() begins is waited for and recorded. The kernel holds
// until the opener sees stop() begun (the framework layer off, the device layer still on:
// end_window is waiting for the streams), so it ends after stop() began on any machine.
TEST(ProfilerCapture, StopWaitsForKernelsInFlight) {
  CpuDevice dev(1);
  std::atomic<bool> gate{false}, running{false};
  Profiler p;
  p.start();
  LaunchSpec spec;
  spec.name = "gated";
  spec.body = [&](int64_t, int64_t) {
    running.store(true);
    while (!gate.load()) std::this_thread::yield();
  };
  runtime::launch(dev, std::move(spec), {}, {});
  int64_t opened_at = 0;
  bool saw_stop = false;
  std::thread opener([&] {
    while (!running.load()) std::this_thread::yield();
    // A deadlock guard, not a timing: a stop() that does not wait never gets here.
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!(saw_stop = prof::layers() == kDevice) && std::chrono::steady_clock::now() < give_up)
      std::this_thread::yield();
    opened_at = now_ns();
    gate.store(true);
  });
  p.stop();
  opener.join();
  EXPECT_TRUE(saw_stop) << "stop() never reached its wait for the device";
  auto k = events_of(p.trace(), EventKind::kernel, "gated");
  ASSERT_EQ(k.size(), 1u);
  EXPECT_GE(p.trace().base_time_ns + k[0]->t1, opened_at);  // recorded to its end, after stop() began
}

// A kernel error stays for the program's own synchronize: stop() does not swallow it.
TEST(ProfilerCapture, StopKeepsKernelErrors) {
  CpuDevice dev(1);
  Profiler p;
  p.start();
  LaunchSpec spec;
  spec.name = "throws";
  spec.body = [](int64_t, int64_t) { throw Error("[boom] kernel failed"); };
  runtime::launch(dev, std::move(spec), {}, {});
  p.stop();
  EXPECT_EQ(count_named(p.trace(), EventKind::kernel, "throws"), 1);
  EXPECT_TRUE(starts_with(error_of([&] { dev.synchronize(); }), "[boom]"));
}

// ---- bounded buffers ----

TEST(ProfilerCapture, FullBufferDropsAndCounts) {
  ProfilerConfig cfg;
  cfg.layers = kFramework;
  cfg.max_events = 8;
  Profiler p(cfg);
  p.start();
  for (int i = 0; i < 100; ++i) OPSCOPE_RECORD_FUNCTION("tiny");
  p.stop();
  const Trace& t = p.trace();
  EXPECT_EQ(count_named(t, EventKind::range, "tiny"), 8);
  EXPECT_EQ(t.dropped, 92);
  ASSERT_EQ(t.dropped_per_track.size(), t.tracks.size());
  int64_t main_dropped = 0;
  for (size_t i = 0; i < t.tracks.size(); ++i)
    if (t.tracks[i].name == "main thread") main_dropped = t.dropped_per_track[i];
  EXPECT_EQ(main_dropped, 92);
  EXPECT_NE(key_averages(t).table().find("Dropped events: 92"), std::string::npos);

  // The next session starts from an empty buffer and counts its own drops only.
  cfg.max_events = 50;
  Profiler q(cfg);
  q.start();
  for (int i = 0; i < 60; ++i) OPSCOPE_RECORD_FUNCTION("tiny");
  q.stop();
  EXPECT_EQ(count_named(q.trace(), EventKind::range, "tiny"), 50);
  EXPECT_EQ(q.trace().dropped, 10);
}

// ---- several threads ----

TEST(ProfilerCapture, FourThreadsLaunchingWhileProfiling) {
  CpuDevice dev(2);
  constexpr int kThreads = 4, kIters = 150;
  for (int64_t cap : {int64_t(1) << 16, int64_t(100)}) {
    ProfilerConfig cfg;
    cfg.max_events = cap;
    Profiler p(cfg);
    p.start();
    std::vector<std::thread> threads;
    for (int w = 0; w < kThreads; ++w)
      threads.emplace_back([&dev, w] {
        for (int i = 0; i < kIters; ++i) {
          OPSCOPE_RECORD_FUNCTION("iter");
          Tensor a = full({100}, double(w), DType::f32, &dev);
          Tensor b = a.clone();
        }
        current_stream(dev).synchronize();
      });
    for (auto& th : threads) th.join();
    p.stop();
    const Trace& t = p.trace();

    // Per recording thread: every framework scope is recorded or counted as dropped.
    std::map<int32_t, int64_t> scopes;  // host track -> op/range events
    for (const auto& e : t.events)
      if (e.kind == EventKind::op || e.kind == EventKind::range) scopes[e.track]++;
    int64_t worker_tracks = 0;
    for (size_t i = 0; i < t.tracks.size(); ++i) {
      const Track& tr = t.tracks[i];
      if (tr.kind != Track::Kind::host_thread || !starts_with(tr.name, "thread ") ||
          tr.name.find("core") != std::string::npos)
        continue;
      ++worker_tracks;
      if (cap > 1000) EXPECT_EQ(scopes[int32_t(i)], 3 * kIters) << tr.name;
      else EXPECT_LE(scopes[int32_t(i)], cap) << tr.name;
    }
    EXPECT_EQ(worker_tracks, kThreads);

    if (cap > 1000) {
      EXPECT_EQ(t.dropped, 0);
      EXPECT_EQ(count_named(t, EventKind::op, "full"), kThreads * kIters);
      EXPECT_EQ(count_named(t, EventKind::op, "clone"), kThreads * kIters);
      // Every launch points at a recorded op of its own thread; every kernel at a launch.
      std::map<uint64_t, const TraceEvent*> ops, launches;
      for (const auto* e : events_of(t, EventKind::op)) ops[e->id] = e;
      for (const auto* l : events_of(t, EventKind::launch)) {
        launches[l->id] = l;
        ASSERT_TRUE(ops.count(l->parent)) << l->name;
        EXPECT_EQ(ops[l->parent]->track, l->track);
      }
      EXPECT_EQ(launches.size(), size_t(2 * kThreads * kIters));
      for (const auto* k : events_of(t, EventKind::kernel)) EXPECT_TRUE(launches.count(k->id)) << k->name;
      EXPECT_EQ(events_of(t, EventKind::kernel).size(), size_t(2 * kThreads * kIters));  // 100 elements: one core
    } else {
      EXPECT_GT(t.dropped, 0);
      int64_t dropped = 0;
      for (int64_t d : t.dropped_per_track) dropped += d;
      EXPECT_EQ(dropped, t.dropped);
    }
  }
}

// ---- OPSCOPE_PROFILE=1 ----

// The child of EnvProfilesAnUnmodifiedProgram: OPSCOPE_PROFILE=1 opened its window before
// main; the exporter writes what the window saw at exit.
OPSCOPE_CHILD_ENTRY(auto_profile) {
  const char* dir = std::getenv("OPSCOPE_PROFILE_DIR");
  if (!auto_profile_running() || !dir) {
    std::printf("no auto-profile window is open\n");
    return 1;
  }
  std::string out = std::string(dir) + "/auto.txt";
  set_default_exporter([out](const Trace& t, const std::string& d) {
    std::ofstream f(out);
    f << count_named(t, EventKind::op, "full") << " " << count_named(t, EventKind::kernel, "fill_f32") << " " << d;
  });
  CpuDevice dev(1);
  Tensor a = full({8}, 1.0, DType::f32, &dev);
  Tensor b = full({8}, 2.0, DType::f32, &dev);
  dev.synchronize();
  return 0;
}

TEST(ProfilerAutoProfile, EnvProfilesAnUnmodifiedProgram) {
  std::string dir = ::testing::TempDir() + "opscope_auto_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  testutil::ChildResult r = testutil::run_child("auto_profile", {"OPSCOPE_PROFILE=1", "OPSCOPE_PROFILE_DIR=" + dir});
  ASSERT_EQ(r.status, 0) << r.log;
  std::ifstream f(dir + "/auto.txt");
  int ops = 0, kernels = 0;
  std::string d;
  f >> ops >> kernels >> d;
  EXPECT_EQ(ops, 2) << r.log;
  EXPECT_EQ(kernels, 2) << r.log;
  EXPECT_EQ(d, dir);
  std::filesystem::remove_all(dir);
}
