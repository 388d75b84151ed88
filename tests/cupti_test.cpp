// CUPTI device tracing. The conversion (cupti_convert.h) on fabricated activity records:
// linking to our launches and ops, copies' bytes, one track per (GPU, stream), the clock
// fit and its bound, drops, the exports and the explorer's lanes; the config's CUPTI
// fields. Last, GPU tests (skip without a GPU): a real kernel, and an OPSCOPE_PROFILE
// session whose window opened before the CUDA device.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "opscope/analysis/key_averages.h"
#include "opscope/core/error.h"
#include "opscope/explorer/timeline_index.h"
#include "opscope/ops/ops.h"
#include "opscope/profiler/auto_profile.h"
#include "opscope/profiler/chrome_trace.h"
#include "opscope/profiler/config.h"
#include "opscope/profiler/cupti.h"
#include "opscope/profiler/cupti_convert.h"
#include "opscope/profiler/session.h"
#include "opscope/profiler/store.h"
#include "opscope/runtime/cuda.h"
#include "opscope/runtime/device.h"
#include "opscope/runtime/tensor.h"
#include "child_process.h"
#include "test_util.h"

using namespace opscope;
using opscope::test_util::error_of;
using opscope::test_util::starts_with;
using namespace opscope::prof;
using namespace opscope::analysis;

namespace {

constexpr int64_t kBase = 1'000'000'000;  // the trace's CLOCK_MONOTONIC at t = 0

// A host-side trace as collect() makes it: op 7 launched launch 100 (and op 8 launch
// 101) from the main thread; the CUDA device is our device 1 ("cuda:0").
Trace host_trace() {
  Trace t;
  t.base_time_ns = kBase;
  t.devices.push_back({0, "cpu:0", "cpu", 4});
  t.devices.push_back({1, "cuda:0", "NVIDIA H200", 132});
  Track main;
  main.name = "main thread";
  main.os_tid = 4242;
  t.tracks.push_back(main);
  t.dropped_per_track.assign(1, 0);
  auto add = [&](EventKind k, int64_t t0, int64_t t1, uint64_t id, uint64_t parent, std::string name) {
    TraceEvent e;
    e.kind = k;
    e.t0 = t0, e.t1 = t1, e.id = id, e.parent = parent;
    e.name = std::move(name);
    e.track = 0;
    if (k == EventKind::launch) e.device = 1, e.stream = 0, e.bytes = 4096, e.flops = 1024;
    t.events.push_back(e);
  };
  add(EventKind::op, 0, 500, 7, 0, "add");
  add(EventKind::launch, 100, 200, 100, 7, "add_f32");
  add(EventKind::op, 600, 900, 8, 0, "to");
  add(EventKind::launch, 700, 800, 101, 8, "copy_d2h");
  return t;
}

// An identity clock: CUPTI ns == host ns.
ClockFit identity() {
  ClockFit f;
  f.error_ns = 1;
  return f;
}

const TraceEvent* find(const Trace& t, EventKind k, const std::string& name) {
  for (const TraceEvent& e : t.events)
    if (e.kind == k && e.name == name) return &e;
  return nullptr;
}

DeviceActivity two_launches() {
  DeviceActivity a;
  a.clock = identity();
  // correlation 11 = cudaLaunchKernel of launch 100; 12 = cudaMemcpyAsync of launch 101.
  a.api_calls.push_back({11, 5151, kBase + 120, kBase + 150, "cudaLaunchKernel_v7000"});
  a.api_calls.push_back({12, 5151, kBase + 720, kBase + 760, "cudaMemcpyAsync_v3020"});
  a.external.push_back({11, 100});
  a.external.push_back({12, 101});
  a.kernels.push_back({11, 0, 7, kBase + 300, kBase + 400, "_Z7add_f32PKfS0_Pfl"});
  a.copies.push_back({12, 0, 7, kBase + 820, kBase + 1820, 1 << 20, CopyKind::d2h});
  return a;
}

}  // namespace

TEST(CuptiConvert, KernelWithExternalCorrelationLinksToItsLaunchAndOp) {
  Trace t = host_trace();
  merge_device_activity(t, two_launches());
  // Named as its launch (as on the CPU device); the device function CUPTI saw is its source.
  const TraceEvent* k = find(t, EventKind::kernel, "add_f32");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->source, "add_f32(float const*, float const*, float*, long)");
  EXPECT_EQ(k->id, 100u);     // our launch id, from the external correlation
  EXPECT_EQ(k->parent, 7u);   // the op that made the launch
  EXPECT_EQ(k->t0, 300);      // relative to the trace's base
  EXPECT_EQ(k->t1, 400);
  EXPECT_EQ(k->device, 1);    // cuda:0 is our device 1
  EXPECT_EQ(k->stream, 7);
  EXPECT_EQ(k->bytes, 4096);  // the whole launch's
  EXPECT_EQ(k->flops, 1024);
  // The runtime call is a runtime-layer api event on its host thread, linked too.
  const TraceEvent* api = find(t, EventKind::api, "cudaLaunchKernel");
  ASSERT_NE(api, nullptr);
  EXPECT_EQ(api->id, 100u);
  EXPECT_EQ(api->parent, 7u);
  EXPECT_EQ(t.tracks[size_t(api->track)].os_tid, 5151);
  EXPECT_EQ(t.tracks[size_t(api->track)].kind, Track::Kind::host_thread);
  // Events stay sorted by time.
  for (size_t i = 1; i < t.events.size(); ++i) EXPECT_LE(t.events[i - 1].t0, t.events[i].t0);

  // key_averages: the kernel's device time is the launching op's.
  KeyAverages ka = key_averages(t);
  bool found = false;
  for (const KeyAverage& r : ka.rows())
    if (r.kind == EventKind::op && r.name == "add") {
      EXPECT_EQ(r.self_device_ns, 100);
      found = true;
    }
  EXPECT_TRUE(found);
}

TEST(CuptiConvert, UncorrelatedKernelKeepsNoLaunch) {
  Trace t = host_trace();
  DeviceActivity a;
  a.clock = identity();
  a.kernels.push_back({99, 0, 7, kBase + 10, kBase + 20, "library_kernel"});
  merge_device_activity(t, a);
  const TraceEvent* k = find(t, EventKind::kernel, "library_kernel");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->id, 0u);
  EXPECT_EQ(k->parent, 0u);
}

TEST(CuptiConvert, CopiesCarryBytesForBandwidth) {
  Trace t = host_trace();
  DeviceActivity a = two_launches();
  a.copies.push_back({0, 0, 3, kBase + 50, kBase + 550, 1 << 19, CopyKind::h2d});
  a.copies.push_back({0, 0, 3, kBase + 600, kBase + 610, 256, CopyKind::memset});
  merge_device_activity(t, a);
  const TraceEvent* d2h = find(t, EventKind::kernel, "Memcpy DtoH");
  const TraceEvent* h2d = find(t, EventKind::kernel, "Memcpy HtoD");
  const TraceEvent* set = find(t, EventKind::kernel, "Memset");
  ASSERT_TRUE(d2h && h2d && set);
  EXPECT_EQ(d2h->bytes, 1 << 20);
  EXPECT_EQ(d2h->t1 - d2h->t0, 1000);  // 1 MiB in 1 us: ~1049 GB/s
  EXPECT_NEAR(double(d2h->bytes) / double(d2h->t1 - d2h->t0), 1048.576, 1e-9);
  EXPECT_EQ(d2h->id, 101u);
  EXPECT_EQ(d2h->parent, 8u);
  EXPECT_EQ(h2d->bytes, 1 << 19);
  EXPECT_EQ(h2d->t1 - h2d->t0, 500);
  EXPECT_EQ(set->bytes, 256);
  // key_averages' GB/s for the launching op uses them.
  int64_t to_device_ns = -1;
  KeyAverages ka = key_averages(t);
  for (const KeyAverage& r : ka.rows())
    if (r.kind == EventKind::op && r.name == "to") to_device_ns = r.device_total_ns;
  EXPECT_EQ(to_device_ns, 1000);
}

TEST(CuptiConvert, OverlappingKernelsOnTwoStreamsMakeTwoTracks) {
  Trace t = host_trace();
  DeviceActivity a;
  a.clock = identity();
  a.kernels.push_back({1, 0, 3, kBase + 100, kBase + 500, "k_a"});
  a.kernels.push_back({2, 0, 4, kBase + 200, kBase + 600, "k_b"});
  a.kernels.push_back({3, 0, 3, kBase + 700, kBase + 800, "k_c"});
  a.kernels.push_back({4, 1, 3, kBase + 100, kBase + 200, "k_other_gpu"});
  merge_device_activity(t, a);
  const TraceEvent* ka = find(t, EventKind::kernel, "k_a");
  const TraceEvent* kb = find(t, EventKind::kernel, "k_b");
  const TraceEvent* kc = find(t, EventKind::kernel, "k_c");
  const TraceEvent* ko = find(t, EventKind::kernel, "k_other_gpu");
  ASSERT_TRUE(ka && kb && kc && ko);
  EXPECT_NE(ka->track, kb->track);
  EXPECT_EQ(ka->track, kc->track);
  EXPECT_EQ(t.tracks[size_t(ka->track)].name, "cuda:0 stream 3");
  EXPECT_EQ(t.tracks[size_t(kb->track)].name, "cuda:0 stream 4");
  EXPECT_EQ(t.tracks[size_t(ko->track)].name, "cuda:1 stream 3");
  EXPECT_EQ(t.tracks[size_t(ka->track)].kind, Track::Kind::device_core);
  EXPECT_EQ(t.tracks[size_t(ka->track)].device, 1);
  EXPECT_EQ(t.tracks[size_t(ka->track)].core, 3);
  // cuda:1 was not in the trace: added as a device of its own.
  ASSERT_EQ(t.devices.size(), 3u);
  EXPECT_EQ(t.devices[2].name, "cuda:1");
  EXPECT_EQ(ko->device, t.devices[2].index);
  EXPECT_EQ(t.dropped_per_track.size(), t.tracks.size());

  // The explorer shows each stream as a device-layer lane named for the GPU and stream.
  explorer::TimelineIndex tl(t);
  std::set<std::string> device_lanes;
  for (const auto& l : tl.lanes())
    if (l.layer == explorer::Layer::device) device_lanes.insert(l.name);
  EXPECT_TRUE(device_lanes.count("cuda:0 stream 3")) << ::testing::PrintToString(device_lanes);
  EXPECT_TRUE(device_lanes.count("cuda:0 stream 4"));
  EXPECT_TRUE(device_lanes.count("cuda:1 stream 3"));
}

TEST(CuptiConvert, RecordsBeforeTheWindowAreLeftOut) {
  Trace t = host_trace();
  DeviceActivity a;
  a.clock = identity();
  a.kernels.push_back({1, 0, 3, kBase - 100, kBase - 50, "early"});
  a.kernels.push_back({2, 0, 3, kBase + 5, kBase + 6, "inside"});
  merge_device_activity(t, a);
  EXPECT_EQ(find(t, EventKind::kernel, "early"), nullptr);
  EXPECT_NE(find(t, EventKind::kernel, "inside"), nullptr);
}

TEST(CuptiConvert, Names) {
  EXPECT_EQ(api_name("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
  EXPECT_EQ(api_name("cudaMemcpy"), "cudaMemcpy");
  EXPECT_EQ(api_name("cuda_vx"), "cuda_vx");
  EXPECT_EQ(kernel_name("_Z3fooi"), "foo(int)");
  EXPECT_EQ(kernel_name("rms_norm_f32"), "rms_norm_f32");
  EXPECT_EQ(kernel_name("_Znot a name"), "_Znot a name");
}

// CUPTI's clock runs `drift` faster than the host's and is `offset` behind.
TEST(CuptiClock, FitRecoversOffsetAndDriftWithinTheBound) {
  const double drift = 20e-6;  // 20 ppm
  const int64_t offset = 123'456'789;
  auto cupti_at = [&](int64_t host) { return int64_t(double(host - offset) * (1 + drift)); };
  // Samples with brackets of 40..400 ns; the true CUPTI read is anywhere inside.
  auto samples = [&](int64_t around, int seed) {
    std::vector<ClockSample> s;
    for (int i = 0; i < 6; ++i) {
      int64_t bracket = 40 + ((i * 7 + seed) % 6) * 72;
      int64_t before = around + i * 1000;
      int64_t read = before + (bracket * ((i + seed) % 4)) / 3;  // somewhere in [before, after]
      s.push_back({before, cupti_at(read), before + bracket});
    }
    return s;
  };
  auto start = samples(5'000'000'000, 1), stop = samples(7'000'000'000, 2);
  ClockFit f = fit_clock(start, stop);
  EXPECT_TRUE(f.drift_measured);
  EXPECT_LE(f.error_ns, 40 / 2 + 2);  // the smallest brackets were kept
  for (int64_t host = 5'000'000'000; host <= 7'000'000'000; host += 97'000'003) {
    int64_t got = f.to_host(cupti_at(host));
    EXPECT_LE(std::abs(got - host), f.error_ns) << "at host " << host;
  }
  EXPECT_NEAR(f.rate, 1 / (1 + drift), 1e-7);

  // Without the drift correction the far end is off by ~40 us: the fit is what saves it.
  ClockFit start_only = fit_clock(start, {});
  EXPECT_FALSE(start_only.drift_measured);
  EXPECT_GT(std::abs(start_only.to_host(cupti_at(7'000'000'000)) - 7'000'000'000), 30'000);
}

TEST(CuptiClock, ImplausibleOrUnmeasurableDriftIsIgnored) {
  std::vector<ClockSample> a{{1000, 5000, 1010}};
  std::vector<ClockSample> near{{2000, 6000, 2010}};  // 1 us later: too close
  EXPECT_FALSE(fit_clock(a, near).drift_measured);
  std::vector<ClockSample> wild{{1000 + 10'000'000, 5000 + 20'000'000, 1010 + 10'000'000}};  // 2x
  ClockFit f = fit_clock(a, wild);
  EXPECT_FALSE(f.drift_measured);
  EXPECT_EQ(f.rate, 1.0);
  EXPECT_EQ(f.to_host(5000), 1005);
  EXPECT_TRUE(starts_with(error_of([] { fit_clock({}, {}); }), "[cupti]"));
  std::vector<ClockSample> backwards{{10, 5, 9}};
  EXPECT_TRUE(starts_with(error_of([&] { fit_clock(backwards, {}); }), "[cupti]"));
}

TEST(CuptiConvert, DroppedRecordsAreCountedAndReported) {
  Trace t = host_trace();
  t.dropped = 3;  // the CPU side's
  DeviceActivity a = two_launches();
  a.dropped_records = 17;
  a.buffers_refused = 2;
  a.buffers_used = 64;
  a.buffer_kb = 4096;
  a.clock.error_ns = 250;
  merge_device_activity(t, a);
  EXPECT_EQ(t.dropped, 20);
  EXPECT_EQ(key_averages(t).dropped(), 20);
  auto meta = nlohmann::json::parse(t.device_tracing_json);
  EXPECT_EQ(meta["dropped_records"], 17);
  EXPECT_EQ(meta["buffers_refused"], 2);
  EXPECT_EQ(meta["clock"]["error_bound_ns"], 250);

  // trace.json: the metadata, the api event and the GPU kernel's stream survive.
  auto doc = nlohmann::json::parse(chrome_trace_json(t));
  EXPECT_EQ(doc["otherData"]["dropped"], 20);
  EXPECT_EQ(doc["otherData"]["device_tracing"]["clock"]["error_bound_ns"], 250);
  int apis = 0, kernels_on_stream = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e.value("cat", "") == "api") {
      ++apis;
      EXPECT_EQ(e["args"]["launch_id"].get<uint64_t>() == 100 || e["args"]["launch_id"].get<uint64_t>() == 101, true);
    }
    if (e.value("cat", "") == "kernel" && e["args"].contains("stream")) ++kernels_on_stream;
  }
  EXPECT_EQ(apis, 2);
  EXPECT_EQ(kernels_on_stream, 2);
}

TEST(CuptiConvert, StoreRoundTripKeepsApiEventsAndMetadata) {
  Trace t = host_trace();
  merge_device_activity(t, two_launches());
  std::string dir = ::testing::TempDir() + "opscope_cupti_store";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::string path = dir + "/profile.db";
  save_profile_db(t, path);
  Trace back = load_profile(path);
  EXPECT_EQ(back.device_tracing_json, t.device_tracing_json);
  ASSERT_EQ(back.events.size(), t.events.size());
  const TraceEvent* api = find(back, EventKind::api, "cudaMemcpyAsync");
  ASSERT_NE(api, nullptr);
  EXPECT_EQ(api->id, 101u);
  std::filesystem::remove_all(dir);
}

// ---- config ----

TEST(CuptiConfig, Validates) {
  ProfilerConfig c;
  EXPECT_NO_THROW(c.validate());
  c.cupti_buffer_kb = 8;
  EXPECT_TRUE(starts_with(error_of([&] { c.validate(); }), "[profiler] cupti_buffer_kb must be"));
  c.cupti_buffer_kb = ProfilerConfig::kMaxCuptiBufferKb + 1;
  EXPECT_TRUE(starts_with(error_of([&] { c.validate(); }), "[profiler] cupti_buffer_kb must be"));
  c.cupti_buffer_kb = 64;
  c.cupti_max_buffers = 0;
  EXPECT_TRUE(starts_with(error_of([&] { c.validate(); }), "[profiler] cupti_max_buffers must be"));
  c.cupti_max_buffers = 3;
  EXPECT_NO_THROW(c.validate());
  auto j = nlohmann::json::parse(c.to_json());
  EXPECT_EQ(j["cupti_buffer_kb"], 64);
  EXPECT_EQ(j["cupti_max_buffers"], 3);
  // A session refuses to start with a bad one.
  c.cupti_max_buffers = -1;
  EXPECT_TRUE(starts_with(error_of([&] { Profiler(c).start(); }), "[profiler] cupti_max_buffers"));
}

TEST(CuptiConfig, FromEnvironment) {
  ::setenv("OPSCOPE_PROFILE_CUPTI_BUFFER_KB", "1024", 1);
  ::setenv("OPSCOPE_PROFILE_CUPTI_MAX_BUFFERS", "8", 1);
  ProfilerConfig c = ProfilerConfig::from_env();
  EXPECT_EQ(c.cupti_buffer_kb, 1024);
  EXPECT_EQ(c.cupti_max_buffers, 8);
  ::setenv("OPSCOPE_PROFILE_CUPTI_BUFFER_KB", "lots", 1);
  EXPECT_TRUE(starts_with(error_of([] { ProfilerConfig::from_env(); }), "[OPSCOPE_PROFILE_CUPTI_BUFFER_KB] 'lots'"));
  ::unsetenv("OPSCOPE_PROFILE_CUPTI_BUFFER_KB");
  ::setenv("OPSCOPE_PROFILE_CUPTI_MAX_BUFFERS", "0", 1);
  EXPECT_TRUE(starts_with(error_of([] { ProfilerConfig::from_env(); }), "[OPSCOPE_PROFILE_CUPTI_MAX_BUFFERS] '0'"));
  ::unsetenv("OPSCOPE_PROFILE_CUPTI_MAX_BUFFERS");
}

// Pushes and pops outside a CUPTI window are no-ops that stay balanced.
TEST(CuptiHooks, NoOpsWithoutAWindow) {
  cupti_push_launch(5);
  cupti_pop_launch();
  cupti_pop_launch();  // an unpaired pop is ignored
  EXPECT_EQ(prof::detail::t_cupti_pushed, 0);
}

// A CPU-only profile records no GPU tracing (nothing CUDA here).
TEST(CuptiHooks, CpuProfileHasNoDeviceTracing) {
  ProfilerConfig c;
  Profiler p(c);
  p.start();
  Tensor a = ones({64});
  Tensor b = add(a, a);
  b.to_vector<float>();
  p.stop();
  bool any_cuda = false;
  for (int i = 0; i < Device::kMaxDevices; ++i)
    if (Device* d = Device::by_index(i); d && d->type() == DeviceType::cuda) any_cuda = true;
  if (!any_cuda) {
    EXPECT_TRUE(p.trace().device_tracing_json.empty());
  }
  for (const TraceEvent& e : p.trace().events) EXPECT_NE(e.kind, EventKind::api);
}

// ---- GPU ----

TEST(CuptiGpu, ProfilesARealKernel) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA GPU: " << cuda_unavailable_reason();
  if (!cupti_available()) GTEST_SKIP() << "no CUDA toolkit: this build has no CUPTI";
  Device& g = cuda(0);
  Tensor a = full({1024, 1024}, 1.0, DType::f32, &g);
  Tensor b = full({1024, 1024}, 2.0, DType::f32, &g);
  add(a, b);  // warm up
  g.synchronize();
  ProfilerConfig c;
  Profiler p(c);
  p.start();
  Tensor out = add(a, b);
  g.synchronize();
  p.stop();
  const Trace& t = p.trace();
  ASSERT_FALSE(t.device_tracing_json.empty());
  auto meta = nlohmann::json::parse(t.device_tracing_json);
  EXPECT_LT(meta["clock"]["error_bound_ns"].get<int64_t>(), 100'000);
  const TraceEvent* op = find(t, EventKind::op, "add");
  ASSERT_NE(op, nullptr);
  int linked = 0;
  for (const TraceEvent& e : t.events) {
    if (e.kind != EventKind::kernel || e.device != g.index()) continue;
    EXPECT_TRUE(starts_with(t.tracks[size_t(e.track)].name, "cuda:0 stream ")) << t.tracks[size_t(e.track)].name;
    EXPECT_GE(e.t0, op->t0);  // the GPU ran it after the op began (clocks aligned)
    EXPECT_GT(e.t1, e.t0);
    if (e.parent == op->id && e.id != 0) ++linked;
  }
  EXPECT_GE(linked, 1) << "no GPU kernel linked to the add op's launch";
}

// OPSCOPE_PROFILE=1 opens its window before main, before any CUDA device exists; the
// first device made starts GPU tracing in it, and at exit the device's handler (before
// the CUDA runtime goes) flushes CUPTI's records for the session's own handler to
// collect. The child of AnAutoProfileOpenedBeforeTheDeviceHasItsKernels.
OPSCOPE_CHILD_ENTRY(cupti_auto_profile) {
  const char* dir = std::getenv("OPSCOPE_PROFILE_DIR");
  if (!dir) return 1;
  std::string out = std::string(dir) + "/gpu.txt";
  set_default_exporter([out](const Trace& t, const std::string&) {
    int kernels = 0, linked = 0;
    for (const TraceEvent& e : t.events)
      if (e.kind == EventKind::kernel && !e.source.empty()) {  // recorded by CUPTI on the GPU
        ++kernels;
        linked += e.parent != 0;
      }
    std::ofstream(out) << (t.device_tracing_json.empty() ? 0 : 1) << " " << kernels << " " << linked;
  });
  Device& g = cuda(0);
  Tensor a = full({1 << 20}, 1.0, DType::f32, &g);
  Tensor b = a;
  for (int i = 0; i < 20; ++i) b = add(b, a);
  return 0;  // No synchronize: the process exits with the adds queued.
}

TEST(CuptiGpu, AnAutoProfileOpenedBeforeTheDeviceHasItsKernels) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA GPU: " << cuda_unavailable_reason();
  if (!cupti_available()) GTEST_SKIP() << "no CUDA toolkit: this build has no CUPTI";
  std::string dir = ::testing::TempDir() + "opscope_cupti_auto_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  testutil::ChildResult r =
      testutil::run_child("cupti_auto_profile", {"OPSCOPE_PROFILE=1", "OPSCOPE_PROFILE_DIR=" + dir});
  ASSERT_EQ(r.status, 0) << "the child failed or crashed at exit:\n" << r.log;
  std::ifstream f(dir + "/gpu.txt");
  int traced = -1, kernels = -1, linked = -1;
  f >> traced >> kernels >> linked;
  EXPECT_EQ(traced, 1) << "no GPU tracing in a window opened before the device\n" << r.log;
  EXPECT_GE(kernels, 21) << "the fill and the 20 adds";
  EXPECT_GE(linked, 21);
  std::filesystem::remove_all(dir);
}
