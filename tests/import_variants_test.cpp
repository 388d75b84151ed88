// Each generation of torch.profiler's trace format, as the importer reads it: 2022-23
// (External id is the call's own correlation: launches find their op by enclosing span),
// 2021 (old category names, "stream 7" tids, lowercase external id, epoch timestamps,
// [memory] without a category), the legacy bare array of torch without Kineto, an AMD
// (hip) trace, and categories of other accelerators kept as generic events.
#include <gtest/gtest.h>

#include "import_util.h"
#include "opscope/analysis/memory.h"
#include "trace_util.h"

namespace opscope::test {
namespace {

using prof::EventKind;

// Thread 1 runs aten::add (launch, correlation 11) and, later, aten::mul whose own
// External id is 11 too: only the enclosing-span rule puts the kernel on aten::add.
json trace_2022() {
  json ev = json::array();
  ev.push_back(x_event("cpu_op", "aten::add", 1, "1", 1000.0, 50.0, {{"External id", 5}}));
  ev.push_back(x_event("cuda_runtime", "cudaLaunchKernel", 1, "1", 1010.0, 6.0, {{"correlation", 11}, {"External id", 11}}));
  ev.push_back(x_event("cpu_op", "aten::mul", 1, "1", 2000.0, 40.0, {{"External id", 11}}));
  ev.push_back(x_event("cuda_runtime", "cudaLaunchKernel", 1, "1", 2010.0, 6.0, {{"correlation", 12}, {"External id", 12}}));
  ev.push_back(x_event("kernel", "add_kernel", 0, 7, 1020.0, 4.0, {{"correlation", 11}}));
  ev.push_back(x_event("kernel", "mul_kernel", 0, 7, 2020.0, 5.0, {{"correlation", 12}}));
  // A kernel whose launch fell before the window: no launch, no op.
  ev.push_back(x_event("kernel", "orphan_kernel", 0, 7, 990.0, 2.0, {{"correlation", 3}}));
  // A runtime call that launches nothing, with a flow end (newer traces write these).
  ev.push_back(x_event("cuda_runtime", "cudaGetDevice", 1, "1", 2030.0, 1.0, {{"correlation", 13}, {"External id", 13}}));
  return {{"schemaVersion", 1}, {"deviceProperties", {h100()}}, {"traceEvents", ev}};
}

TEST(ImportVariants, Kineto2022LinksLaunchesByTheEnclosingOp) {
  TempDir dir("import_2022");
  importer::ImportResult r = importer::import_traces({dir.write("t.json", trace_2022())});
  EXPECT_EQ(r.format, "kineto-2022");
  EXPECT_EQ(config(r.trace)["imported_from"]["launch_rule"], "enclosing cpu_op");
  analysis::KeyAverages ka = analysis::key_averages(r.trace);
  EXPECT_EQ(row(ka, "aten::add").self_device_ns, 4000);
  EXPECT_EQ(row(ka, "aten::mul").self_device_ns, 5000);
  EXPECT_EQ(row(ka, "orphan_kernel").self_device_ns, 2000);  // owned by no op
  EXPECT_EQ(only(r.trace, EventKind::kernel, "orphan_kernel").parent, 0u);
  EXPECT_EQ(config(r.trace)["imported_from"]["ranks"][0]["gpu_events_without_launch"], 1);
  EXPECT_EQ(only(r.trace, EventKind::api, "cudaGetDevice").parent, only(r.trace, EventKind::op, "aten::mul").id);
  // Epoch-free floats without baseTimeNanoseconds: t = 0 at the first event.
  EXPECT_EQ(only(r.trace, EventKind::kernel, "orphan_kernel").t0, 0);
  EXPECT_EQ(only(r.trace, EventKind::op, "aten::add").t0, 10000);
}

TEST(ImportVariants, Kineto2024LinksByExternalIdNotBySpan) {
  // The same events written as 2024+ traces do: External id is the launching op's.
  json t = trace_2022();
  t["baseTimeNanoseconds"] = 1700000000000000000;
  t["traceEvents"][1]["args"]["External id"] = 11;  // names aten::mul, though aten::add encloses it
  t["traceEvents"][3]["args"]["External id"] = 11;
  t["traceEvents"][7]["args"]["External id"] = 11;
  TempDir dir("import_2024_rule");
  importer::ImportResult r = importer::import_traces({dir.write("t.json", t)});
  EXPECT_EQ(r.format, "kineto-2024");
  analysis::KeyAverages ka = analysis::key_averages(r.trace);
  EXPECT_EQ(row(ka, "aten::add").self_device_ns, 0);
  EXPECT_EQ(row(ka, "aten::mul").self_device_ns, 9000);
  EXPECT_EQ(r.trace.wall_time_ns, 1700000000000000000 + 990000);
}

// 2021: Operator/Runtime/Kernel/Memcpy, string tids, integer µs since the epoch,
// "external id" lowercase, old [memory] events (no cat, no Total Allocated).
json trace_2021() {
  const int64_t t0 = 1620000000000000;  // µs since the epoch
  json ev = json::array();
  ev.push_back({{"ph", "X"}, {"cat", "Operator"}, {"name", "aten::conv2d"}, {"pid", 42}, {"tid", "42"}, {"ts", t0},
                {"dur", 100}, {"args", {{"external id", 1}}}});
  ev.push_back({{"ph", "X"}, {"cat", "Runtime"}, {"name", "cudaLaunchKernel"}, {"pid", 42}, {"tid", "42"},
                {"ts", t0 + 10}, {"dur", 5}, {"args", {{"correlation", 100}, {"external id", 1}}}});
  ev.push_back({{"ph", "X"}, {"cat", "Operator"}, {"name", "aten::relu"}, {"pid", 42}, {"tid", "42"}, {"ts", t0 + 200},
                {"dur", 20}, {"args", {{"external id", 2}}}});
  // Launched from another thread for aten::relu (external id 2).
  ev.push_back({{"ph", "X"}, {"cat", "Runtime"}, {"name", "cudaLaunchKernel"}, {"pid", 42}, {"tid", "43"},
                {"ts", t0 + 205}, {"dur", 5}, {"args", {{"correlation", 101}, {"external id", 2}}}});
  ev.push_back({{"ph", "X"}, {"cat", "Runtime"}, {"name", "cudaMemcpyAsync"}, {"pid", 42}, {"tid", "42"},
                {"ts", t0 + 300}, {"dur", 5}, {"args", {{"correlation", 102}, {"external id", 3}}}});
  ev.push_back({{"ph", "X"}, {"cat", "Kernel"}, {"name", "implicit_gemm"}, {"pid", 0}, {"tid", "stream 7"},
                {"ts", t0 + 20}, {"dur", 60}, {"args", {{"correlation", 100}, {"device", 0}, {"stream", 7}}}});
  ev.push_back({{"ph", "X"}, {"cat", "Kernel"}, {"name", "relu_kernel"}, {"pid", 0}, {"tid", "stream 7"},
                {"ts", t0 + 210}, {"dur", 7}, {"args", {{"correlation", 101}}}});
  ev.push_back({{"ph", "X"}, {"cat", "Memcpy"}, {"name", "Memcpy DtoH (Device -> Pageable)"}, {"pid", 0},
                {"tid", "stream 7"}, {"ts", t0 + 310}, {"dur", 10}, {"args", {{"correlation", 102}, {"bytes", 4000}}}});
  ev.push_back({{"ph", "s"}, {"cat", "async"}, {"id", 100}, {"pid", 42}, {"tid", 42}, {"ts", t0 + 10}, {"name", "launch"}});
  ev.push_back({{"ph", "f"}, {"cat", "async"}, {"id", 100}, {"pid", 0}, {"tid", "stream 7"}, {"ts", t0 + 20},
                {"bp", "e"}, {"name", "launch"}});
  ev.push_back({{"ph", "i"}, {"name", "[memory]"}, {"pid", 42}, {"tid", 42}, {"ts", t0 + 30}, {"s", "t"},
                {"args", {{"Addr", 1000}, {"Bytes", 2048}, {"Device Type", 1}, {"Device Id", 0}}}});
  ev.push_back({{"ph", "i"}, {"name", "[memory]"}, {"pid", 42}, {"tid", 42}, {"ts", t0 + 40}, {"s", "t"},
                {"args", {{"Addr", 2000}, {"Bytes", 512}, {"Device Type", 0}, {"Device Id", -1}}}});
  return {{"schemaVersion", 1}, {"computeProperties", {{{"id", 0}, {"name", "Tesla V100-SXM2-16GB"}}}},
          {"traceEvents", ev}};
}

TEST(ImportVariants, Kineto2021OldNamesStringTidsAndLowercaseExternalId) {
  TempDir dir("import_2021");
  importer::ImportResult r = importer::import_traces({dir.write("t.json", trace_2021())});
  EXPECT_EQ(r.format, "kineto-2021");
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  analysis::KeyAverages ka = analysis::key_averages(r.trace);
  EXPECT_EQ(row(ka, "aten::conv2d").self_device_ns, 60000);
  EXPECT_EQ(row(ka, "aten::relu").self_device_ns, 7000);  // by external id, from thread 43
  EXPECT_EQ(row(ka, "Memcpy DtoH (Device -> Pageable)").bytes, 4000);
  EXPECT_EQ(track_of(r.trace, only(r.trace, EventKind::kernel, "implicit_gemm")).name, "cuda:0 stream 7");
  // Integer µs since the epoch: exact ns.
  EXPECT_EQ(r.trace.wall_time_ns, 1620000000000000000);
  EXPECT_EQ(only(r.trace, EventKind::kernel, "relu_kernel").t0, 210000);
  // The oldest files' computeProperties name the GPU: V100 peaks.
  EXPECT_DOUBLE_EQ(ka.roofline().peak_gbps, 900);
  // Memory with no Total Allocated: a running sum per device; CPU memory on "cpu".
  std::vector<analysis::DeviceMemory> mem = analysis::memory_summary(r.trace);
  ASSERT_EQ(mem.size(), 2u);
  EXPECT_EQ(mem[0].name, "cuda:0");
  EXPECT_EQ(mem[0].peak_bytes, 2048);
  EXPECT_EQ(mem[1].name, "cpu");
  EXPECT_EQ(mem[1].peak_bytes, 512);
}

TEST(ImportVariants, EpochTimestampsBesideABaseTimeCountFromTheEpoch) {
  // Some traces carry baseTimeNanoseconds and still write ts since the epoch.
  json t = trace_2021();
  t["baseTimeNanoseconds"] = 1620000000000000000;
  TempDir dir("import_epoch_base");
  prof::Trace tr = importer::import_traces({dir.write("t.json", t)}).trace;
  EXPECT_EQ(tr.wall_time_ns, 1620000000000000000);
  EXPECT_EQ(only(tr, EventKind::kernel, "relu_kernel").t0, 210000);
}

TEST(ImportVariants, LegacyBareArrayIsFrameworkOpsOnly) {
  json ev = json::array();
  ev.push_back({{"name", "aten::linear"}, {"ph", "X"}, {"ts", 100.5}, {"dur", 30.0}, {"tid", 1}, {"pid", "CPU functions"},
                {"args", json::object()}});
  ev.push_back({{"name", "aten::t"}, {"ph", "X"}, {"ts", 101.0}, {"dur", 4.0}, {"tid", 1}, {"pid", "CPU functions"}});
  ev.push_back({{"name", "aten::addmm"}, {"ph", "X"}, {"ts", 106.0}, {"dur", 20.0}, {"tid", 1}, {"pid", "CPU functions"}});
  ev.push_back({{"name", "aten::relu"}, {"ph", "X"}, {"ts", 140.0}, {"dur", 5.0}, {"tid", 2}, {"pid", "CPU functions"}});
  TempDir dir("import_legacy");
  importer::ImportResult r = importer::import_traces({dir.write("legacy.json", ev)});
  EXPECT_EQ(r.format, "legacy-array");
  EXPECT_TRUE(r.trace.devices.empty());
  analysis::KeyAverages ka = analysis::key_averages(r.trace);
  EXPECT_EQ(row(ka, "aten::linear").cpu_total_ns, 30000);
  EXPECT_EQ(row(ka, "aten::linear").self_cpu_ns, 30000 - 4000 - 20000);
  EXPECT_EQ(only(r.trace, EventKind::op, "aten::addmm").parent, only(r.trace, EventKind::op, "aten::linear").id);
  EXPECT_EQ(only(r.trace, EventKind::op, "aten::relu").parent, 0u);
  EXPECT_EQ(ka.self_device_time_total_ns(), 0);
  EXPECT_EQ(r.trace.tracks.size(), 2u);
}

TEST(ImportVariants, AmdHipTraceReadsLikeCuda) {
  json ev = json::array();
  ev.push_back(x_event("cpu_op", "aten::mm", 7, 7, 10, 30, {{"External id", 1}}));
  ev.push_back(x_event("cuda_runtime", "hipLaunchKernel", 7, 7, 12, 4, {{"correlation", 50}, {"External id", 1}}));
  ev.push_back(x_event("cpu_op", "aten::copy_", 7, 7, 50, 30, {{"External id", 2}}));
  ev.push_back(x_event("cuda_runtime", "hipMemcpyAsync", 7, 7, 52, 4, {{"correlation", 51}, {"External id", 2}}));
  ev.push_back(x_event("cuda_runtime", "hipStreamSynchronize", 7, 7, 60, 15, {{"correlation", 52}, {"External id", 2}}));
  ev.push_back(x_event("kernel", "Cijk_Ailk_Bljk_SB_MT64x64x16", 2, 0, 20, 12.5, {{"correlation", 50}, {"device", 2}}));
  ev.push_back(x_event("gpu_memcpy", "CopyDeviceToHost", 2, 0, 62, 10, {{"correlation", 51}, {"bytes", 2000000}}));
  json t = {{"deviceProperties", {{{"id", 2}, {"name", "AMD Instinct MI250X"}, {"numSms", 110}}}},
            {"traceEvents", ev}, {"baseTimeNanoseconds", 1}};
  TempDir dir("import_hip");
  importer::ImportResult r = importer::import_traces({dir.write("hip.json", t)});
  analysis::KeyAverages ka = analysis::key_averages(r.trace);
  EXPECT_EQ(row(ka, "aten::mm").self_device_ns, 12500);
  EXPECT_EQ(row(ka, "aten::copy_").self_device_ns, 10000);
  EXPECT_NEAR(row(ka, "CopyDeviceToHost").gbps(), 200.0, 1e-9);
  EXPECT_EQ(only(r.trace, EventKind::sync, "hipStreamSynchronize").parent, only(r.trace, EventKind::op, "aten::copy_").id);
  ASSERT_EQ(r.trace.devices.size(), 1u);
  EXPECT_EQ(r.trace.devices[0].name, "cuda:2");
  EXPECT_EQ(track_of(r.trace, only(r.trace, EventKind::kernel, "CopyDeviceToHost")).name, "cuda:2 stream 0");
  EXPECT_DOUBLE_EQ(ka.roofline().peak_gbps, 3276.8);
}

TEST(ImportVariants, UnknownCategoriesAndGpuAnnotationsAreGenericEvents) {
  json t = trace_2022();
  t["traceEvents"].push_back(x_event("mtia_runtime", "mtiaLaunch", 1, "1", 1030.0, 3.0));
  t["traceEvents"].push_back(x_event("gpu_user_annotation", "my_region", 0, 7, 1019.0, 8.0));
  t["traceEvents"].push_back(x_event("python_function", "model.py(12): forward", 1, "1", 999.0, 1100.0));
  TempDir dir("import_generic");
  importer::ImportResult r = importer::import_traces({dir.write("t.json", t)});
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(only(r.trace, EventKind::api, "mtiaLaunch").parent, only(r.trace, EventKind::op, "aten::add").id);
  EXPECT_EQ(track_of(r.trace, only(r.trace, EventKind::api, "my_region")).name, "cuda:0 stream 7");
  analysis::KeyAverages ka = analysis::key_averages(r.trace);
  // No table counts them: the figures are the 2022 trace's.
  EXPECT_EQ(ka.self_device_time_total_ns(), 4000 + 5000 + 2000);
  EXPECT_EQ(ka.self_cpu_time_total_ns(), 50000 + 40000);
  for (const analysis::KeyAverage& k : ka.rows()) EXPECT_NE(k.name, "my_region");
}

TEST(ImportVariants, GraphLaunchKernelsEachCountTheirOwnTime) {
  json ev = json::array();
  ev.push_back(x_event("cpu_op", "graph_replay", 1, 1, 0, 100, {{"External id", 1}}));
  ev.push_back(x_event("cuda_runtime", "cudaGraphLaunch", 1, 1, 5, 10, {{"correlation", 9}, {"External id", 1}}));
  ev.push_back(x_event("kernel", "k1", 0, 7, 20, 3, {{"correlation", 9}}));
  ev.push_back(x_event("kernel", "k2", 0, 7, 40, 5, {{"correlation", 9}}));
  TempDir dir("import_graph");
  prof::Trace t = importer::import_traces({dir.write("g.json", json{{"traceEvents", ev}})}).trace;
  analysis::KeyAverages ka = analysis::key_averages(t);
  EXPECT_EQ(row(ka, "graph_replay").self_device_ns, 8000);  // 3 + 5, not the 25 µs span
  EXPECT_EQ(row(ka, "k1").device_total_ns, 3000);
  EXPECT_EQ(row(ka, "k2").device_total_ns, 5000);
}

}  // namespace
}  // namespace opscope::test
