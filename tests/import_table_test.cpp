// An imported 2024+ torch.profiler trace (relative float timestamps, External id links,
// an H100): exact key_averages figures, links, tracks, memory and the config it records.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "import_util.h"
#include "opscope/analysis/memory.h"
#include "opscope/profiler/chrome_trace.h"
#include "opscope/profiler/store.h"
#include "trace_util.h"

namespace opscope::test {
namespace {

using prof::EventKind;

// Host thread 100 runs a step with linear > addmm (one GEMM), add (one kernel), copy_
// (an H2D memcpy); thread 200 launches a kernel for aten::add (External id 3) though no
// op of its own encloses the call. Stream 7 and stream 20.
json trace_2024() {
  json ev = json::array();
  ev.push_back(x_event("user_annotation", "ProfilerStep#0", 100, 100, 0, 100, {{"External id", 9}}));
  ev.push_back(x_event("cpu_op", "aten::linear", 100, 100, 10, 40,
                       {{"External id", 1}, {"Input Dims", {{8, 64}, {64, 64}}}, {"Input type", {"float", "float"}}}));
  ev.push_back(x_event("cpu_op", "aten::addmm", 100, 100, 15, 30, {{"External id", 2}}));
  ev.push_back(x_event("cuda_runtime", "cudaLaunchKernel", 100, 100, 20, 5, {{"correlation", 10}, {"External id", 2}}));
  ev.push_back(flow("s", 10, 100, 100, 20));
  ev.push_back(x_event("cpu_op", "aten::add", 100, 100, 60, 20, {{"External id", 3}}));
  ev.push_back(x_event("cuda_runtime", "cudaLaunchKernel", 100, 200, 65, 4, {{"correlation", 11}, {"External id", 3}}));
  ev.push_back(x_event("cpu_op", "aten::copy_", 100, 100, 82, 12, {{"External id", 4}}));
  ev.push_back(x_event("cuda_runtime", "cudaMemcpyAsync", 100, 100, 85, 6, {{"correlation", 12}, {"External id", 4}}));
  ev.push_back(x_event("cuda_runtime", "cudaStreamSynchronize", 100, 100, 92, 1.5, {{"correlation", 13}, {"External id", 4}}));
  ev.push_back(x_event("kernel", "sm90_xmma_gemm_f32f32", 0, 7, 30, 20.5,
                       {{"correlation", 10}, {"device", 0}, {"stream", 7}, {"grid", {132, 1, 1}}, {"block", {384, 1, 1}},
                        {"registers per thread", 168}, {"shared memory", 213000}, {"est. achieved occupancy %", 12}}));
  ev.push_back(flow("f", 10, 0, 7, 30));
  ev.push_back(x_event("kernel", "vectorized_elementwise_kernel", 0, 20, 70, 3.25, {{"correlation", 11}, {"stream", 20}}));
  ev.push_back(x_event("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 0, 7, 95, 8,
                       {{"correlation", 12}, {"bytes", 1048576}, {"memory bandwidth (GB/s)", 131.072}}));
  ev.push_back(x_event("cuda_sync", "Stream Sync", 0, 7, 93, 10, {{"correlation", 13}}));
  ev.push_back(memory_event(100, 100, 16, 0x7f0000, 4096, 4096, 1, 0));
  ev.push_back(memory_event(100, 100, 61, 0x7f1000, 1024, 5120, 1, 0));
  ev.push_back(memory_event(100, 100, 90, 0x7f0000, -4096, 1024, 1, 0));
  ev.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 100}, {"tid", 100}, {"args", {{"name", "python main"}}}});
  ev.push_back(x_event("Trace", "PyTorch Profiler (0)", "Spans", "PyTorch Profiler", 0, 110));
  return {{"schemaVersion", 1},
          {"deviceProperties", {h100()}},
          {"distributedInfo", {{"backend", "nccl"}, {"rank", 0}, {"world_size", 1}}},
          {"traceEvents", ev},
          {"traceName", "run.pt.trace.json"},
          {"displayTimeUnit", "ms"},
          {"baseTimeNanoseconds", 1700000000000000000}};
}

class ImportTable : public ::testing::Test {
 protected:
  TempDir dir{"import_table"};
  prof::Trace trace = importer::import_traces({dir.write("run.pt.trace.json", trace_2024())}).trace;
};

TEST_F(ImportTable, SelfDeviceTimeComesFromEachOpsKernels) {
  analysis::KeyAverages ka = analysis::key_averages(trace);
  EXPECT_EQ(row(ka, "aten::addmm").self_device_ns, 20500);
  EXPECT_EQ(row(ka, "aten::linear").self_device_ns, 0);
  EXPECT_EQ(row(ka, "aten::linear").device_total_ns, 20500);
  EXPECT_EQ(row(ka, "aten::add").self_device_ns, 3250);  // launched from thread 200, by External id
  EXPECT_EQ(row(ka, "aten::copy_").self_device_ns, 8000);
  EXPECT_EQ(row(ka, "ProfilerStep#0").device_total_ns, 20500 + 3250 + 8000);
  EXPECT_EQ(ka.self_device_time_total_ns(), 31750);
  // CPU: self = total minus the direct children.
  EXPECT_EQ(row(ka, "aten::linear").cpu_total_ns, 40000);
  EXPECT_EQ(row(ka, "aten::linear").self_cpu_ns, 10000);
  EXPECT_EQ(row(ka, "ProfilerStep#0").self_cpu_ns, 100000 - 40000 - 20000 - 12000);
  // Per-kernel rows: their launches' device time, owned by the ops.
  const analysis::KeyAverage& gemm = row(ka, "sm90_xmma_gemm_f32f32");
  EXPECT_EQ(gemm.kind, EventKind::kernel);
  EXPECT_EQ(gemm.count, 1);
  EXPECT_EQ(gemm.device_total_ns, 20500);
  EXPECT_EQ(gemm.self_device_ns, 0);
  // Memcpy bandwidth: 1 MiB in 8 µs.
  const analysis::KeyAverage& copy = row(ka, "Memcpy HtoD (Pageable -> Device)");
  EXPECT_EQ(copy.bytes, 1048576);
  EXPECT_NEAR(copy.gbps(), 131.072, 1e-9);
  // The table names the columns and has the H100's roofline from its name.
  std::string table = ka.table("self_device_time_total");
  EXPECT_NE(table.find("% Roofline"), std::string::npos) << table;
  EXPECT_NE(table.find("131.07"), std::string::npos) << table;
  EXPECT_NE(table.find("Self Device time total: 31.750us"), std::string::npos) << table;
  EXPECT_DOUBLE_EQ(ka.roofline().peak_gbps, 3350);
  EXPECT_DOUBLE_EQ(ka.roofline().peak_gflops, 989400);
  // 131.072 / 3350 of the memory roof.
  EXPECT_NE(table.find(fmt::format("{:.1f}%", 100 * 131.072 / 3350)), std::string::npos) << table;
}

// The trace's "memory bandwidth (GB/s)" of a memcpy: kept on the event (MB/s in value),
// saved, and written back to trace.json; events without one carry none.
TEST_F(ImportTable, MemcpyKeepsTheBandwidthTheTraceReports) {
  const prof::TraceEvent& copy = only(trace, EventKind::kernel, "Memcpy HtoD (Pageable -> Device)");
  EXPECT_EQ(copy.value, 131072);
  EXPECT_EQ(only(trace, EventKind::kernel, "sm90_xmma_gemm_f32f32").value, 0);
  std::string out = dir.file("profile");
  prof::export_profile(trace, out);
  EXPECT_EQ(only(prof::load_profile(out), EventKind::kernel, "Memcpy HtoD (Pageable -> Device)").value, 131072);
  json doc = json::parse(prof::chrome_trace_json(trace));
  int kernels = 0;
  for (const json& e : doc.at("traceEvents")) {
    if (e.value("cat", "") != "kernel") continue;
    ++kernels;
    bool is_copy = e.at("name") == "Memcpy HtoD (Pageable -> Device)";
    EXPECT_EQ(e.at("args").contains("memory bandwidth (GB/s)"), is_copy) << e;
    if (is_copy) {
      EXPECT_DOUBLE_EQ(e.at("args").at("memory bandwidth (GB/s)").get<double>(), 131.072);
    }
  }
  EXPECT_EQ(kernels, 3);
}

// Traces before 2024 round dur to whole µs: a 1.41 µs copy reads as 1 µs, so bytes / dur
// overstates its bandwidth by 41%; the trace's own figure (from the exact duration) is kept.
TEST(ImportMemcpy, BandwidthOfARoundedDurationComesFromTheTrace) {
  TempDir dir("import_memcpy_bw");
  json ev = json::array();
  ev.push_back(x_event("cpu_op", "aten::copy_", 1, 1, 1700000000000000, 10, {{"External id", 1}}));
  ev.push_back(x_event("cuda_runtime", "cudaMemcpyAsync", 1, 1, 1700000000000001, 3,
                       {{"correlation", 5}, {"External id", 1}}));
  ev.push_back(x_event("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 0, 7, 1700000000000005, 1,
                       {{"correlation", 5}, {"bytes", 1048576}, {"memory bandwidth (GB/s)", 743.672}}));
  ev.push_back(x_event("gpu_memset", "Memset (Device)", 0, 7, 1700000000000007, 1, {{"correlation", 6}, {"bytes", 4096}}));
  prof::Trace t = importer::import_traces({dir.write("old.json", json{{"traceEvents", ev}})}).trace;
  const prof::TraceEvent& copy = only(t, EventKind::kernel, "Memcpy HtoD (Pinned -> Device)");
  EXPECT_EQ(copy.t1 - copy.t0, 1000);
  EXPECT_EQ(copy.value, 743672);
  EXPECT_EQ(only(t, EventKind::kernel, "Memset (Device)").value, 0);  // none reported
}

TEST_F(ImportTable, LinksTracksAndTimes) {
  const prof::TraceEvent& gemm = only(trace, EventKind::kernel, "sm90_xmma_gemm_f32f32");
  const prof::TraceEvent& addmm = only(trace, EventKind::op, "aten::addmm");
  const prof::TraceEvent& linear = only(trace, EventKind::op, "aten::linear");
  EXPECT_EQ(gemm.parent, addmm.id);
  EXPECT_EQ(addmm.parent, linear.id);
  EXPECT_EQ(linear.parent, only(trace, EventKind::range, "ProfilerStep#0").id);
  // The launch and its kernel share the launch id.
  int launches = 0;
  for (const prof::TraceEvent& e : trace.events)
    if (e.kind == EventKind::launch && e.id == gemm.id) {
      ++launches;
      EXPECT_EQ(e.parent, addmm.id);
    }
  EXPECT_EQ(launches, 1);
  EXPECT_EQ(track_of(trace, gemm).name, "cuda:0 stream 7");
  EXPECT_EQ(track_of(trace, gemm).kind, prof::Track::Kind::device_core);
  EXPECT_EQ(track_of(trace, only(trace, EventKind::kernel, "vectorized_elementwise_kernel")).name, "cuda:0 stream 20");
  EXPECT_EQ(track_of(trace, addmm).name, "python main");
  EXPECT_EQ(gemm.shapes, "grid [132,1,1] block [384,1,1] 168 registers/thread 213000 B shared 12% occupancy");
  EXPECT_EQ(linear.shapes, "[(8, 64) f32, (64, 64) f32]");
  // Times: ns from the first event; the Unix time of t = 0 from baseTimeNanoseconds.
  EXPECT_EQ(trace.wall_time_ns, 1700000000000000000);
  EXPECT_EQ(gemm.t0, 30000);
  EXPECT_EQ(gemm.t1, 50500);
  // Syncs: the host call and the GPU's wait, neither counted as device time.
  EXPECT_EQ(only(trace, EventKind::sync, "cudaStreamSynchronize").parent, only(trace, EventKind::op, "aten::copy_").id);
  EXPECT_EQ(track_of(trace, only(trace, EventKind::sync, "Stream Sync")).name, "cuda:0 stream 7");
  ASSERT_EQ(trace.devices.size(), 1u);
  EXPECT_EQ(trace.devices[0].name, "cuda:0");
  EXPECT_EQ(trace.devices[0].description, "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.2 GiB)");
  EXPECT_EQ(trace.devices[0].num_cores, 132);
}

TEST_F(ImportTable, MemoryEventsBecomeTheDevicesAllocatorTrack) {
  std::vector<analysis::DeviceMemory> mem = analysis::memory_summary(trace);
  ASSERT_EQ(mem.size(), 1u);
  EXPECT_EQ(mem[0].name, "cuda:0");
  EXPECT_EQ(mem[0].peak_bytes, 5120);
  EXPECT_EQ(mem[0].allocs, 2);
  EXPECT_EQ(mem[0].frees, 1);
  analysis::KeyAverages ka = analysis::key_averages(trace);
  EXPECT_EQ(row(ka, "aten::addmm").self_device_memory, 4096);
  EXPECT_EQ(row(ka, "aten::add").self_device_memory, 1024);
  EXPECT_EQ(row(ka, "aten::copy_").self_device_memory, -4096);
}

TEST_F(ImportTable, ConfigRecordsTheOriginAndPeaks) {
  json c = config(trace);
  EXPECT_EQ(c["imported_from"]["format"], "kineto-2024");
  EXPECT_EQ(c["imported_from"]["files"].size(), 1u);
  EXPECT_EQ(c["imported_from"]["launch_rule"], "External id");
  EXPECT_EQ(c["imported_from"]["ranks"][0]["backend"], "nccl");
  EXPECT_TRUE(c["imported_from"]["warnings"].empty()) << c.dump();
  EXPECT_EQ(c["device_peaks"]["copy_gbps"], 3350.0);
  EXPECT_NE(c["device_peaks"]["method"].get<std::string>().find("datasheet"), std::string::npos);
  // Given peaks win over the table's.
  importer::ImportOptions o;
  o.peak_gbps = 1000;
  prof::Trace t = importer::import_traces({dir.file("run.pt.trace.json")}, o).trace;
  EXPECT_DOUBLE_EQ(analysis::key_averages(t).roofline().peak_gbps, 1000);
  EXPECT_DOUBLE_EQ(analysis::key_averages(t).roofline().peak_gflops, 989400);
}

TEST_F(ImportTable, AnUnknownGpuHasNoRoofline) {
  json t = trace_2024();
  t["deviceProperties"][0]["name"] = "Mystery Accelerator 9000";
  prof::Trace tr = importer::import_traces({dir.write("unknown.json", t)}).trace;
  analysis::KeyAverages ka = analysis::key_averages(tr);
  EXPECT_FALSE(ka.roofline().known());
  EXPECT_EQ(ka.table().find("% Roofline"), std::string::npos);
  EXPECT_EQ(ka.self_device_time_total_ns(), 31750);
}

}  // namespace
}  // namespace opscope::test
