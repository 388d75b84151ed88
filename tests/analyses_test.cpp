// The trace analyses (analysis/analyze.h) on small hand-built traces whose answers are
// known by construction: kinds by name, the temporal and idle-time breakdowns, overlap,
// launch statistics, queue lengths, the critical path, a straggler rank, per-step
// views, and traces without device events.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "opscope/analysis/analyze.h"
#include "opscope/analysis/intervals.h"
#include "opscope/analysis/kernel_kind.h"
#include "opscope/core/error.h"

namespace opscope::analysis {
namespace {

// A trace with a host thread and GPU streams per rank, built event by event. Times in ns.
struct GpuTrace {
  Trace t;
  uint64_t next_id = 1;

  int32_t host(int32_t rank = -1) {
    t.tracks.push_back({Track::Kind::host_thread, "main thread", 1, -1, -1, rank});
    return int32_t(t.tracks.size() - 1);
  }
  int32_t stream(int32_t s, int32_t rank = -1) {
    t.tracks.push_back({Track::Kind::device_core, fmt::format("cuda:0 stream {}", s), 0, 0, s, rank});
    return int32_t(t.tracks.size() - 1);
  }
  TraceEvent& add(EventKind k, int32_t track, int64_t t0, int64_t t1, std::string name = "") {
    TraceEvent e;
    e.kind = k;
    e.track = track;
    e.t0 = t0;
    e.t1 = t1;
    e.name = std::move(name);
    t.events.push_back(std::move(e));
    return t.events.back();
  }
  // A launch call on `host` over [c0, c1] and its kernel on `stream` over [k0, k1].
  void launch(int32_t host, int64_t c0, int64_t c1, int32_t stream, int64_t k0, int64_t k1, const std::string& kernel) {
    uint64_t id = next_id++;
    add(EventKind::launch, host, c0, c1, "cudaLaunchKernel").id = id;
    TraceEvent& k = add(EventKind::kernel, stream, k0, k1, kernel);
    k.id = id;
    k.stream = t.tracks[size_t(stream)].core;
    k.device = 0;
  }
  // Work whose launch fell outside the window.
  void kernel(int32_t stream, int64_t k0, int64_t k1, const std::string& name) {
    TraceEvent& k = add(EventKind::kernel, stream, k0, k1, name);
    k.id = next_id++;
    k.stream = t.tracks[size_t(stream)].core;
  }
  void step(int32_t host, int n, int64_t t0, int64_t t1) {
    add(EventKind::range, host, t0, t1, fmt::format("ProfilerStep#{}", n)).id = next_id++;
  }
  RankView view(int64_t rank = -1) const { return rank_view(t, rank); }
};

TEST(KernelKind, RulesReadTheName) {
  EXPECT_EQ(kernel_kind("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"), KernelKind::comm);
  EXPECT_EQ(kernel_kind("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)"), KernelKind::comm);
  EXPECT_EQ(kernel_kind("void ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)"), KernelKind::comm);
  EXPECT_EQ(kernel_kind("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t"), KernelKind::comm);
  EXPECT_EQ(kernel_kind("void rccl_main_kernel<(int)8>(ncclDevComm*)"), KernelKind::comm);
  EXPECT_EQ(kernel_kind("void c10d::symmetric_memory::one_shot_all_reduce_kernel<float>"), KernelKind::comm);
  EXPECT_EQ(kernel_kind("Memcpy HtoD (Pinned -> Device)"), KernelKind::mem);
  EXPECT_EQ(kernel_kind("Memset (Device)"), KernelKind::mem);
  EXPECT_EQ(kernel_kind("Memcpy PtoP (Device -> Device)"), KernelKind::mem);  // copies before collectives
  EXPECT_EQ(kernel_kind("sm90_xmma_gemm_f32f32_f32f32_f32_tn_n"), KernelKind::comp);
  EXPECT_EQ(kernel_kind("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>"),
            KernelKind::comp);
  EXPECT_EQ(kernel_kind("cancel_pending_kernel"), KernelKind::comp);  // "ncel" is no "nccl"
  EXPECT_EQ(kernel_kind(""), KernelKind::comp);
  // One table: every rule is listed and matches what it names.
  int comm = 0, mem = 0;
  for (const KindRule& r : kernel_kind_rules()) {
    EXPECT_EQ(kernel_kind(std::string(r.text) + "_x"), r.kind) << r.text;
    comm += r.kind == KernelKind::comm, mem += r.kind == KernelKind::mem;
  }
  EXPECT_GT(comm, 0);
  EXPECT_GT(mem, 0);
}

TEST(Intervals, MergeIntersectSubtract) {
  std::vector<Interval> a = merge_intervals({{10, 20}, {0, 5}, {15, 30}, {30, 31}});
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(total_length(a), 5 + 21);
  std::vector<Interval> b = merge_intervals({{3, 12}, {25, 40}});
  EXPECT_EQ(total_length(intersect(a, b)), 2 + 2 + 6);
  EXPECT_EQ(total_length(subtract(a, b)), 3 + 13);
}

// Compute on stream 7 [0, 100]; NCCL on stream 8 [50, 150]; a memcpy [200, 220].
GpuTrace overlapping() {
  GpuTrace g;
  int32_t h = g.host(), s7 = g.stream(7), s8 = g.stream(8);
  g.launch(h, 0, 0, s7, 0, 100, "gemm");
  g.launch(h, 0, 0, s8, 50, 150, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL");
  g.launch(h, 0, 0, s7, 200, 220, "Memcpy DtoH (Device -> Pinned)");
  return g;
}

TEST(Temporal, PartsAddUpToTheSpan) {
  Temporal t = temporal_breakdown(overlapping().view());
  EXPECT_EQ(t.t0, 0);
  EXPECT_EQ(t.t1, 220);
  EXPECT_EQ(t.span_ns, 220);
  EXPECT_EQ(t.idle_ns, 50);           // [150, 200]
  EXPECT_EQ(t.compute_ns, 100);
  EXPECT_EQ(t.non_compute_ns, 70);    // comm past compute [100, 150] and the memcpy
}

TEST(Overlap, CommunicationUnderComputation) {
  GpuTrace g;
  int32_t h = g.host(), s7 = g.stream(7), s8 = g.stream(8);
  g.launch(h, 0, 0, s8, 0, 100, "ncclKernel_AllReduce");
  g.launch(h, 0, 0, s7, 50, 80, "gemm");
  g.launch(h, 0, 0, s7, 90, 120, "gemm");
  Overlap o = comm_comp_overlap(g.view());
  EXPECT_EQ(o.comm_ns, 100);
  EXPECT_EQ(o.compute_ns, 60);
  EXPECT_EQ(o.overlap_ns, 40);
  EXPECT_DOUBLE_EQ(o.ratio(), 0.4);
  EXPECT_EQ(o.exposed_ns, 60);
  EXPECT_EQ(o.exposed_t0, 0);  // the longest exposed stretch: before the first gemm
  EXPECT_EQ(o.exposed_t1, 50);
  // Half of the all-reduce [50, 150] runs beside the gemm [0, 100].
  EXPECT_EQ(comm_comp_overlap(overlapping().view()).ratio(), 0.5);
}

// One gap of each kind, with a kernel-wait threshold of 5 ns.
GpuTrace idle_gaps() {
  GpuTrace g;
  int32_t h = g.host(), s = g.stream(7);
  g.launch(h, 0, 2, s, 10, 20, "k1");
  g.launch(h, 25, 27, s, 30, 40, "k2");  // called after k1 ended: host wait [20, 30]
  g.launch(h, 28, 29, s, 43, 50, "k3");  // queued, gap 3: kernel wait [40, 43]
  g.launch(h, 30, 31, s, 60, 70, "k4");  // queued, gap 10: other [50, 60]
  return g;
}

TEST(IdleTime, EachGapByWhatEndsIt) {
  RankView v = idle_gaps().view();
  IdleBreakdown i = idle_time_breakdown(v, 5);
  EXPECT_EQ(i.device.of(IdleKind::host_wait), 10);
  EXPECT_EQ(i.device.of(IdleKind::kernel_wait), 3);
  EXPECT_EQ(i.device.of(IdleKind::other), 10);
  EXPECT_EQ(i.device.gaps[0] + i.device.gaps[1] + i.device.gaps[2], 3);
  EXPECT_EQ(i.device.longest_t0[size_t(IdleKind::host_wait)], 20);
  EXPECT_EQ(i.device.longest_t1[size_t(IdleKind::host_wait)], 30);
  // The split is of the temporal breakdown's idle time.
  EXPECT_EQ(i.device.total_ns(), temporal_breakdown(v).idle_ns);
  ASSERT_EQ(i.streams.size(), 1u);
  EXPECT_EQ(i.streams[0].split.total_ns(), 23);
  // The threshold is the flag: at 2 ns the 3 ns gap is "other".
  IdleBreakdown tight = idle_time_breakdown(v, 2);
  EXPECT_EQ(tight.device.of(IdleKind::kernel_wait), 0);
  EXPECT_EQ(tight.device.of(IdleKind::other), 13);
}

TEST(IdleTime, PerStreamGapsAreEachStreamsOwn) {
  GpuTrace g;
  int32_t h = g.host(), s7 = g.stream(7), s8 = g.stream(8);
  g.launch(h, 0, 1, s7, 10, 20, "a");
  g.launch(h, 0, 1, s8, 15, 50, "b");  // covers stream 7's gap: the device is not idle
  g.launch(h, 0, 1, s7, 40, 60, "c");
  IdleBreakdown i = idle_time_breakdown(g.view(), 5);
  EXPECT_EQ(i.device.total_ns(), 0);
  ASSERT_EQ(i.streams.size(), 2u);
  EXPECT_EQ(i.streams[0].split.of(IdleKind::other), 20);  // stream 7: [20, 40], queued, long
  EXPECT_EQ(i.streams[1].split.total_ns(), 0);
}

TEST(Idle, WorkWithoutLaunchIsOther) {
  GpuTrace g;
  g.host();
  int32_t s = g.stream(7);
  g.kernel(s, 0, 10, "a");
  g.kernel(s, 12, 20, "b");
  EXPECT_EQ(idle_time_breakdown(g.view(), 100).device.of(IdleKind::other), 2);
}

TEST(LaunchStats, DelaysShortKernelsAndOutliers) {
  GpuTrace g;
  int32_t h = g.host(), s = g.stream(7);
  g.launch(h, 0, 4'000, s, 4'500, 5'500, "tiny");         // delay 0.5 µs, shorter than its 4 µs call
  g.launch(h, 5'000, 8'000, s, 8'000, 108'000, "big");     // delay 0
  g.launch(h, 9'000, 70'000, s, 250'000, 251'000, "late");  // a 61 µs call, a 180 µs delay, shorter
  LaunchStats l = launch_stats(g.view());
  EXPECT_EQ(l.launches, 3);
  EXPECT_EQ(l.delay_p50_ns, 500);
  EXPECT_EQ(l.delay_max_ns, 180'000);
  EXPECT_EQ(l.delay_total_ns, 180'500);
  EXPECT_EQ(l.shorter_than_launch, 2);
  EXPECT_EQ(l.shorter_gpu_ns, 2'000);
  EXPECT_EQ(l.runtime_outliers, 1);
  EXPECT_EQ(l.delay_outliers, 1);
  EXPECT_EQ(l.cpu_p50_ns, 4'000);
  // Histogram: 0 and 500 ns in [0, 1 µs), 180 µs in [100, 200 µs), with its example.
  int64_t counted = 0;
  for (const DelayBin& b : l.histogram) counted += b.count;
  EXPECT_EQ(counted, 3);
  EXPECT_EQ(l.histogram[0].count, 2);
  EXPECT_EQ(l.histogram[0].example_delay_ns, 500);
  const DelayBin& slow = l.histogram[7];
  EXPECT_EQ(slow.lo_ns, 100'000);
  EXPECT_EQ(slow.count, 1);
  EXPECT_EQ(slow.example_t0, 9'000);
  EXPECT_EQ(slow.example_t1, 250'000);
  EXPECT_EQ(l.histogram.back().hi_ns, -1);
}

TEST(QueueLength, LaunchedNotStartedPerStream) {
  GpuTrace g;
  int32_t h = g.host(), s = g.stream(7), s8 = g.stream(8);
  g.launch(h, 0, 1, s, 10, 15, "a");
  g.launch(h, 1, 2, s, 20, 25, "b");
  g.launch(h, 2, 3, s, 30, 35, "c");
  g.launch(h, 40, 41, s8, 45, 50, "d");
  QueueLengths q = queue_lengths(g.view());
  ASSERT_EQ(q.streams.size(), 2u);
  const StreamQueue& x = q.streams[0];  // the busiest first
  EXPECT_EQ(x.launches, 3);
  EXPECT_EQ(x.max_length, 3);
  EXPECT_EQ(x.span_ns, 30);
  EXPECT_DOUBLE_EQ(x.mean_length, (1 * 1 + 2 * 1 + 3 * 8 + 2 * 10 + 1 * 10) / 30.0);
  EXPECT_EQ(x.max_t0, 2);
  EXPECT_EQ(x.max_t1, 10);
  EXPECT_EQ(x.full_ns, 0);
  EXPECT_EQ(q.streams[1].max_length, 1);
  EXPECT_EQ(q.max_length(), 3);
}

TEST(CriticalPath, OneStepThroughLaunchStreamAndSync) {
  GpuTrace g;
  int32_t h = g.host(), s = g.stream(7);
  g.step(h, 0, 0, 100);
  g.launch(h, 10, 12, s, 20, 60, "gemm");
  g.launch(h, 14, 16, s, 62, 90, "add");  // queued behind gemm: a 2 ns kernel gap
  g.add(EventKind::sync, h, 20, 92, "cudaDeviceSynchronize");
  CriticalPath c = critical_path(g.view(), 5);
  EXPECT_TRUE(c.iteration);
  EXPECT_EQ(c.step, "ProfilerStep#0");
  EXPECT_EQ(c.length_ns, 100);
  EXPECT_EQ(c.of(PathKind::cpu), 12 + 8);           // [0, 10] + the call [10, 12], then [92, 100]
  EXPECT_EQ(c.of(PathKind::launch_delay), 8);      // [12, 20]
  EXPECT_EQ(c.of(PathKind::compute), 40 + 28);
  EXPECT_EQ(c.of(PathKind::kernel_gap), 2);
  EXPECT_EQ(c.of(PathKind::sync), 2);              // the sync returned 2 ns after add ended
  int64_t sum = 0;
  for (int64_t ns : c.ns) sum += ns;
  EXPECT_EQ(sum, c.length_ns);
  EXPECT_EQ(c.bound(), "gpu_compute_bound");
  // In time order, contiguous.
  ASSERT_FALSE(c.segments.empty());
  EXPECT_EQ(c.segments.front().t0, 0);
  EXPECT_EQ(c.segments.back().t1, 100);
  for (size_t i = 1; i < c.segments.size(); ++i) EXPECT_EQ(c.segments[i].t0, c.segments[i - 1].t1);
}

TEST(CriticalPath, WaitsFollowAnotherStreamAndTheMedianStepIsShown) {
  GpuTrace g;
  int32_t h = g.host(), s7 = g.stream(7), s8 = g.stream(8);
  g.step(h, 0, 0, 50);
  g.step(h, 1, 1000, 1100);  // the median of three lengths 50, 100, 300
  g.step(h, 2, 2000, 2300);
  g.launch(h, 1000, 1005, s8, 1010, 1070, "ncclDevKernel_AllReduce");
  g.launch(h, 1006, 1008, s7, 1008, 1020, "gemm");
  g.launch(h, 1009, 1011, s7, 1075, 1150, "add");  // waits on the all-reduce (an event)
  CriticalPath c = critical_path(g.view(), 5);
  EXPECT_EQ(c.step, "ProfilerStep#1");
  EXPECT_EQ(c.steps, 3);
  EXPECT_EQ(c.t1, 1150);  // the step's last work ends after its host range
  EXPECT_EQ(c.of(PathKind::compute), 75);
  EXPECT_EQ(c.of(PathKind::wait), 5);
  EXPECT_EQ(c.of(PathKind::communication), 60);
  EXPECT_EQ(c.of(PathKind::launch_delay), 5);  // [1005, 1010]
  EXPECT_EQ(c.of(PathKind::cpu), 5);
  EXPECT_EQ(c.bound(), "gpu_compute_bound");
}

TEST(CriticalPath, NoStepIsTheWholeSpanMarkedSo) {
  CriticalPath c = critical_path(idle_gaps().view(), 5);
  EXPECT_FALSE(c.iteration);
  EXPECT_EQ(c.t0, 10);
  EXPECT_EQ(c.t1, 70);
  int64_t sum = 0;
  for (int64_t ns : c.ns) sum += ns;
  EXPECT_EQ(sum, c.length_ns);
}

TEST(KernelBreakdown, KindsAndTopKernels) {
  KernelBreakdown k = kernel_breakdown(overlapping().view());
  EXPECT_EQ(k.of(KernelKind::comp), 100);
  EXPECT_EQ(k.of(KernelKind::comm), 100);
  EXPECT_EQ(k.of(KernelKind::mem), 20);
  ASSERT_EQ(k.kernels.size(), 3u);
  EXPECT_EQ(k.kernels.back().name, "Memcpy DtoH (Device -> Pinned)");
  for (const KernelStat& s : k.kernels) EXPECT_EQ(s.name.find("cudaLaunch"), std::string::npos);
}

// Two ranks, each computing and then all-reducing; rank 1 computes 50% longer, so rank 0
// waits in the collective.
GpuTrace two_ranks() {
  GpuTrace g;
  for (int r = 0; r < 2; ++r) {
    int32_t h = g.host(r), s7 = g.stream(7, r), s8 = g.stream(8, r);
    for (int step = 0; step < 2; ++step) {
      int64_t t = step * 1000;
      g.step(h, step, t, t + 900);
      int64_t compute = r == 1 ? 600 : 400;
      g.launch(h, t, t + 5, s7, t + 10, t + 10 + compute, "gemm");
      g.launch(h, t + 6, t + 8, s8, t + 10 + compute, t + 800, "ncclDevKernel_AllReduce");
    }
  }
  return g;
}

TEST(Analyze, StragglerRankAndSpreadAcrossRanks) {
  Trace t = two_ranks().t;
  TraceAnalysis a = analyze(t);
  ASSERT_EQ(a.ranks.size(), 2u);
  EXPECT_EQ(a.ranks[0].rank, 0);
  EXPECT_EQ(a.ranks[0].temporal.compute_ns, 800);
  EXPECT_EQ(a.ranks[1].temporal.compute_ns, 1200);
  EXPECT_EQ(a.ranks[0].overlap.exposed_ns, 2 * 390);
  const RankAnalysis* slow = a.slowest();
  ASSERT_NE(slow, nullptr);
  EXPECT_EQ(slow->rank, 1);
  EXPECT_EQ(slow->work_ns(), 1200);
  EXPECT_TRUE(a.warnings.empty());
  auto j = nlohmann::json::parse(a.to_json());
  for (const char* key : {"temporal", "idle", "kernels", "overlap", "launches", "queues", "critical_path", "host"}) {
    ASSERT_TRUE(j.contains(key)) << key;
    EXPECT_TRUE(j[key]["available"].get<bool>()) << key;
    EXPECT_EQ(j[key]["per_rank"].size(), 2u) << key;
    EXPECT_FALSE(j[key]["definition"].get<std::string>().empty());
  }
  EXPECT_EQ(j["slowest_rank"]["rank"], 1);
  const auto& compute = j["temporal"]["across_ranks"]["compute_ns"];
  EXPECT_EQ(compute["min"], 800);
  EXPECT_EQ(compute["max"], 1200);
  EXPECT_EQ(compute["max_rank"], 1);
  EXPECT_EQ(j["overlap"]["across_ranks"]["exposed_ns"]["max_rank"], 0);
  EXPECT_EQ(j["temporal"]["per_rank"][1]["span_ns"], 1790);
  EXPECT_TRUE(j["critical_path"]["per_rank"][0]["iteration"].get<bool>());
  EXPECT_EQ(j["kernels"]["top_across_ranks"][0]["name"], "gemm");  // 1.2 µs on rank 1
  EXPECT_EQ(j["kernels"]["top_across_ranks"][0]["slowest_rank"], 1);
  EXPECT_EQ(j["kernels"]["top_across_ranks"][1]["slowest_rank"], 0);  // rank 0 waits in the all-reduce
  std::string text = a.text();
  EXPECT_NE(text.find("slowest rank: 1"), std::string::npos) << text;
  // --rank: one rank; a rank the trace lacks is an error naming the flag.
  AnalyzeOptions one;
  one.rank = 1;
  EXPECT_EQ(analyze(t, one).ranks.size(), 1u);
  one.rank = 5;
  try {
    analyze(t, one);
    FAIL() << "rank 5 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[--rank] rank 5 is not in the profile (its ranks: 0, 1)"), std::string::npos)
        << e.what();
  }
}

TEST(Analyze, PerStepViewsTakeTheWorkEachStepLaunched) {
  AnalyzeOptions o;
  o.per_step = true;
  TraceAnalysis a = analyze(two_ranks().t, o);
  const RankAnalysis& r = a.ranks[1];
  ASSERT_EQ(r.per_step.size(), 2u);
  EXPECT_EQ(r.per_step[1].name, "ProfilerStep#1");
  EXPECT_EQ(r.per_step[1].temporal.t0, 1010);
  EXPECT_EQ(r.per_step[1].temporal.span_ns, 790);
  EXPECT_EQ(r.per_step[1].kernels.of(KernelKind::comp), 600);
  EXPECT_EQ(r.per_step[1].launches.launches, 2);
  auto j = nlohmann::json::parse(a.to_json());
  EXPECT_EQ(j["temporal"]["per_rank"][1]["per_step"].size(), 2u);
}

TEST(Analyze, MismatchedStepCountsWarn) {
  GpuTrace g = two_ranks();
  g.step(0, 2, 3000, 3100);  // rank 0 has a third step
  TraceAnalysis a = analyze(g.t);
  ASSERT_EQ(a.warnings.size(), 1u);
  EXPECT_NE(a.warnings[0].find("rank 0: 3, rank 1: 2"), std::string::npos) << a.warnings[0];
  EXPECT_EQ(a.ranks[0].steps, 3);
}

TEST(Analyze, NoDeviceEventsGetsTheHostAnalysisAndSaysWhy) {
  GpuTrace g;
  int32_t h = g.host();
  g.add(EventKind::op, h, 0, 40, "aten::mul").id = 1;
  g.add(EventKind::op, h, 10, 20, "aten::empty").id = 2;  // nested: counted once
  g.add(EventKind::op, h, 60, 100, "aten::add").id = 3;
  TraceAnalysis a = analyze(g.t);
  ASSERT_EQ(a.ranks.size(), 1u);
  EXPECT_FALSE(a.has_device());
  EXPECT_EQ(a.ranks[0].host.span_ns, 100);
  EXPECT_EQ(a.ranks[0].host.busy_ns, 80);
  EXPECT_EQ(a.ranks[0].host.idle_ns, 20);
  ASSERT_EQ(a.warnings.size(), 1u);
  EXPECT_NE(a.warnings[0].find("need GPU events"), std::string::npos);
  auto j = nlohmann::json::parse(a.to_json());
  EXPECT_FALSE(j["temporal"]["available"].get<bool>());
  EXPECT_NE(j["temporal"]["why"].get<std::string>().find("no device events"), std::string::npos);
  EXPECT_TRUE(j["host"]["available"].get<bool>());
  EXPECT_EQ(j["host"]["per_rank"][0]["busy_ns"], 80);
  std::string text = a.text();
  EXPECT_EQ(text.find("Temporal breakdown"), std::string::npos);
  EXPECT_NE(text.find("Host"), std::string::npos);
}

TEST(Analyze, BadOptionsNameTheFlag) {
  AnalyzeOptions o;
  o.kernel_wait_ns = -1;
  EXPECT_THROW(check_analyze_options(o), Error);
  try {
    analyze(Trace{}, o);
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[--kernel-wait-ns]", 0), 0u) << e.what();
  }
}

TEST(RankView, TheCpuDevicesSlicesAreOneLaunchOnItsStream) {
  Trace t;
  t.devices.push_back({0, "cpu:0", "", 2});
  t.tracks.push_back({Track::Kind::host_thread, "main thread", 1, -1, -1, -1});
  t.tracks.push_back({Track::Kind::device_core, "cpu:0 core 0", 0, 0, 0, -1});
  t.tracks.push_back({Track::Kind::device_core, "cpu:0 core 1", 0, 0, 1, -1});
  TraceEvent l;
  l.kind = EventKind::launch, l.id = 9, l.t0 = 0, l.t1 = 2, l.track = 0, l.stream = 0, l.device = 0, l.name = "mul_f32";
  t.events.push_back(l);
  for (int core = 0; core < 2; ++core) {
    TraceEvent k;
    k.kind = EventKind::kernel, k.id = 9, k.t0 = 5 + core, k.t1 = 20 + core, k.track = 1 + core, k.device = 0;
    k.name = "mul_f32";
    t.events.push_back(k);
  }
  RankView v = rank_view(t, -1);
  ASSERT_EQ(v.work.size(), 1u);
  EXPECT_EQ(v.work[0].t0, 5);
  EXPECT_EQ(v.work[0].t1, 21);
  EXPECT_EQ(v.work[0].launch, 0);
  EXPECT_EQ(v.queues[size_t(v.work[0].queue)].name, "cpu:0 stream 0");
  EXPECT_FALSE(v.gpu);
}

}  // namespace
}  // namespace opscope::analysis
