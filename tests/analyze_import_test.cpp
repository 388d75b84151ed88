// The analyses on imported torch.profiler traces: a folder of per-rank 2023-style
// traces (cuda_runtime calls, ac2g flows) analysed one file at a time, kernel tables
// that hold device kernels and never runtime calls, and GPU variants' peaks.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "import_util.h"
#include "opscope/analysis/analyze.h"
#include "opscope/core/error.h"
#include "opscope/explorer/profile.h"
#include "opscope/explorer/summary.h"
#include "opscope/importer/analyze_traces.h"
#include "opscope/importer/gpu_peaks.h"
#include "opscope/profiler/store.h"
#include "trace_util.h"

namespace opscope::test {
namespace {

// A 2023 Kineto trace of one rank of a DDP step: aten ops each launch one kernel by
// cudaLaunchKernel (External id = the call's own correlation, the 2022-23 form), an
// all-reduce from record_param_comms on stream 20, a cudaDeviceSynchronize, ac2g flows,
// and a flow end whose start fell before the window. Rank 1's gemm runs 50% longer.
json ddp_rank(int rank, const std::string& gpu = "NVIDIA A100-SXM4-40GB", int64_t memory = 42505273344) {
  const double base = 1690000000000000.0;  // epoch µs, as 2023 traces write ts
  json ev = json::array();
  int corr = 100;
  ev.push_back(flow("f", 99, 0, 7, base + 1));  // its start was before the window
  for (int step = 0; step < 2; ++step) {
    double t = base + 10 + step * 1000;
    ev.push_back(x_event("user_annotation", "ProfilerStep#" + std::to_string(step), 1234, 1234, t, 900));
    double gemm = rank == 1 ? 300 : 200;
    struct Op { const char* op; const char* kernel; double dur; int stream; };
    const Op ops[] = {{"aten::addmm", "ampere_sgemm_128x64_tn", gemm, 7},
                      {"aten::mul", "void at::native::vectorized_elementwise_kernel<4, MulFunctor<float>>", 10, 7},
                      {"aten::add", "void at::native::vectorized_elementwise_kernel<4, CUDAFunctor_add<float>>", 10, 7},
                      {"record_param_comms", "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", 100, 20}};
    double host = t + 5, device = t + 20;
    for (const Op& o : ops) {
      ev.push_back(x_event("cpu_op", o.op, 1234, 1234, host, 20, {{"External id", corr + 5000}}));
      ev.push_back(x_event("cuda_runtime", "cudaLaunchKernel", 1234, 1234, host + 5, 8,
                           {{"correlation", corr}, {"External id", corr}, {"cbid", 211}}));
      ev.push_back(flow("s", corr, 1234, 1234, host + 5));
      device = std::max(device, host + 15);
      ev.push_back(x_event("kernel", o.kernel, 0, o.stream, device, o.dur,
                           {{"correlation", corr}, {"External id", corr}, {"device", 0}, {"stream", o.stream}}));
      ev.push_back(flow("f", corr, 0, o.stream, device));
      device += o.dur + 2;
      host += 25;
      ++corr;
    }
    ev.push_back(x_event("cuda_runtime", "cudaDeviceSynchronize", 1234, 1234, host, device - host + 3,
                         {{"correlation", corr++}, {"External id", corr}}));
  }
  return {{"schemaVersion", 1},
          {"deviceProperties", {{{"id", 0}, {"name", gpu}, {"totalGlobalMem", memory}, {"computeMajor", 8},
                                 {"computeMinor", 0}, {"numSms", 108}}}},
          {"distributedInfo", {{"backend", "nccl"}, {"rank", rank}, {"world_size", 2}}},
          {"traceEvents", ev}};
}

TEST(AnalyzeImport, AFolderOfRanksIsReadOneFileAtATime) {
  TempDir dir("analyze_ranks");
  // Written in the opposite order of their ranks: distributedInfo decides.
  dir.write("a.pt.trace.json", ddp_rank(1));
  dir.write("b.pt.trace.json", ddp_rank(0));
  analysis::TraceAnalysis a = importer::analyze_path(dir.path().string());
  ASSERT_EQ(a.ranks.size(), 2u);
  EXPECT_EQ(a.ranks[0].rank, 0);
  EXPECT_EQ(a.ranks[0].source, dir.file("b.pt.trace.json"));
  EXPECT_EQ(a.ranks[1].rank, 1);
  // The kernels: device kernels by their names, each kind as the rules say.
  for (const analysis::RankAnalysis& r : a.ranks) {
    EXPECT_EQ(r.kernels.kernels.size(), 4u);
    for (const analysis::KernelStat& k : r.kernels.kernels) EXPECT_EQ(k.name.rfind("cuda", 0), std::string::npos) << k.name;
    EXPECT_EQ(r.kernels.of(analysis::KernelKind::comm), 2 * 100'000);
    EXPECT_EQ(r.launches.launches, 8);  // every kernel linked to its cudaLaunchKernel
    EXPECT_EQ(r.steps, 2);
    EXPECT_TRUE(r.critical_path.iteration);
  }
  EXPECT_EQ(a.ranks[1].temporal.compute_ns - a.ranks[0].temporal.compute_ns, 2 * 100'000);
  ASSERT_NE(a.slowest(), nullptr);
  EXPECT_EQ(a.slowest()->rank, 1);
  // Kineto's edge-of-window flows: one line for the folder, not one per file.
  int flow_lines = 0;
  for (const std::string& w : a.warnings) flow_lines += w.find("flow") != std::string::npos;
  EXPECT_EQ(flow_lines, 1);
  ASSERT_FALSE(a.warnings.empty());
  EXPECT_NE(a.warnings.back().find("2 flow ends (ph f) whose start lies before the window, in 2 of 2 files"),
            std::string::npos)
      << a.warnings.back();
  // --rank 1: only that rank; --rank 7: an error naming the flag and the ranks there are.
  analysis::AnalyzeOptions o;
  o.rank = 1;
  analysis::TraceAnalysis one = importer::analyze_path(dir.path().string(), o);
  ASSERT_EQ(one.ranks.size(), 1u);
  EXPECT_EQ(one.ranks[0].rank, 1);
  o.rank = 7;
  try {
    importer::analyze_path(dir.path().string(), o);
    FAIL() << "rank 7 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[--rank] rank 7 is in no trace of"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(its ranks: 0, 1)"), std::string::npos) << e.what();
  }
}

TEST(AnalyzeImport, MergedRanksGiveTheSameFiguresAsStreamedOnes) {
  TempDir dir("analyze_merged");
  dir.write("r0.json", ddp_rank(0));
  dir.write("r1.json", ddp_rank(1));
  analysis::TraceAnalysis streamed = importer::analyze_path(dir.path().string());
  prof::Trace merged = importer::import_traces({dir.path().string()}).trace;
  analysis::TraceAnalysis together = analysis::analyze(merged);
  ASSERT_EQ(together.ranks.size(), 2u);
  for (size_t r = 0; r < 2; ++r) {
    EXPECT_EQ(together.ranks[r].rank, streamed.ranks[r].rank);
    EXPECT_EQ(together.ranks[r].temporal.span_ns, streamed.ranks[r].temporal.span_ns);
    EXPECT_EQ(together.ranks[r].temporal.idle_ns, streamed.ranks[r].temporal.idle_ns);
    EXPECT_EQ(together.ranks[r].overlap.exposed_ns, streamed.ranks[r].overlap.exposed_ns);
    EXPECT_EQ(together.ranks[r].idle.device.ns, streamed.ranks[r].idle.device.ns);
    EXPECT_EQ(together.ranks[r].critical_path.length_ns, streamed.ranks[r].critical_path.length_ns);
  }
}

TEST(AnalyzeImport, AJobsRankProfilesAreAnalysedPerRank) {
  // DIR/rank-N saved profiles (what opscope.profiler writes under torch.distributed).
  TempDir dir("analyze_job");
  for (int r = 0; r < 2; ++r)
    prof::export_profile(importer::import_traces({dir.write(fmt::format("t{}.json", r), ddp_rank(r))}).trace,
                         dir.file(fmt::format("job/rank-{}", r)));
  analysis::TraceAnalysis a = importer::analyze_path(dir.file("job"));
  ASSERT_EQ(a.ranks.size(), 2u);
  EXPECT_EQ(a.ranks[0].rank, 0);
  EXPECT_EQ(a.ranks[1].rank, 1);
  ASSERT_NE(a.slowest(), nullptr);
  EXPECT_EQ(a.slowest()->rank, 1);
  EXPECT_EQ(a.ranks[1].temporal.compute_ns - a.ranks[0].temporal.compute_ns, 2 * 100'000);
}

TEST(KernelTables, HoldDeviceKernelsNeverRuntimeCalls) {
  TempDir dir("kernel_tables");
  prof::Trace t = importer::import_traces({dir.write("r0.json", ddp_rank(0))}).trace;
  analysis::KeyAverages ka = analysis::key_averages(t);
  int kernels = 0;
  for (const analysis::KeyAverage& r : ka.rows()) {
    if (r.kind != prof::EventKind::kernel) continue;
    ++kernels;
    EXPECT_EQ(r.name.find("cudaLaunchKernel"), std::string::npos);
    EXPECT_EQ(r.name.find("cudaDeviceSynchronize"), std::string::npos);
  }
  EXPECT_EQ(kernels, 4);
  EXPECT_EQ(row(ka, "ampere_sgemm_128x64_tn").device_total_ns, 2 * 200'000);
  // The explorer's Summary: the same kernels, by name, with their device time.
  explorer::Profile p("r0", "r0.json", t);
  const json& summary = p.summary();
  ASSERT_EQ(summary["kernels"].size(), 4u) << summary["kernels"].dump();
  for (const json& k : summary["kernels"]) {
    std::string name = k["name"].get<std::string>();
    EXPECT_EQ(name.rfind("cuda", 0), std::string::npos) << name;
    if (name == "ampere_sgemm_128x64_tn") {
      EXPECT_EQ(k["launches"], 2);
      EXPECT_EQ(k["device_ns"], 2 * 200'000);
    }
  }
  EXPECT_EQ(summary["peak_gbps"], 1555.0);  // the A100 40 GB's datasheet bandwidth
  EXPECT_EQ(summary["peak_source"], "datasheet: A100 SXM 40GB");
}

TEST(GpuPeaks, VariantsAreToldApartByTheirProperties) {
  auto gbps = [](const char* name, int64_t memory = 0, int64_t sms = 0) {
    auto p = importer::gpu_peaks(name, memory, sms);
    return p ? p->memory_gbps : -1.0;
  };
  auto model = [](const char* name, int64_t memory = 0, int64_t sms = 0) {
    auto p = importer::gpu_peaks(name, memory, sms);
    return p ? p->model : std::string("none");
  };
  const int64_t gb40 = 42'505'273'344, gb80 = 85'198'045'184;
  EXPECT_EQ(model("A100-PG509-200", gb40, 108), "A100 SXM 40GB");
  EXPECT_EQ(gbps("A100-PG509-200", gb40, 108), 1555);
  EXPECT_EQ(gbps("A100-PG509-200"), 1555);  // the board is the 40 GB part even without its memory
  EXPECT_EQ(gbps("NVIDIA A100-SXM4-40GB"), 1555);
  EXPECT_EQ(gbps("NVIDIA A100-SXM4-80GB", gb80, 108), 2039);
  EXPECT_EQ(gbps("NVIDIA A100-SXM4", gb40, 108), 1555);  // by its memory alone
  EXPECT_EQ(model("NVIDIA A100-PCIE-40GB"), "A100 PCIe 40GB");
  EXPECT_EQ(gbps("NVIDIA A100 80GB PCIe", gb80), 1935);
  EXPECT_EQ(model("NVIDIA H100 80GB HBM3", gb80, 132), "H100 SXM");
  EXPECT_EQ(gbps("NVIDIA H100 80GB HBM3", gb80, 132), 3350);
  EXPECT_EQ(gbps("NVIDIA H100 PCIe", gb80, 114), 2000);
  EXPECT_EQ(model("NVIDIA H100", gb80, 114), "H100 PCIe");  // by its SM count
  EXPECT_EQ(model("NVIDIA H100 NVL", 100'000'000'000, 132), "H100 NVL");
  EXPECT_EQ(gbps("NVIDIA H200", 150'000'000'000, 132), 4800);
  EXPECT_EQ(model("NVIDIA H200 NVL"), "H200 NVL");
  EXPECT_EQ(model("NVIDIA L4"), "L4");
  EXPECT_EQ(model("NVIDIA L40S"), "L40S");
  EXPECT_EQ(model("AMD Instinct MI250X"), "MI250X");
  EXPECT_EQ(model("Some Accelerator"), "none");
}

TEST(GpuPeaks, AnImportedTraceCarriesItsVariantsPeaks) {
  TempDir dir("variant_peaks");
  prof::Trace t = importer::import_traces({dir.write("r0.json", ddp_rank(0, "A100-PG509-200", 42'505'273'344))}).trace;
  json peaks = config(t)["device_peaks"];
  EXPECT_EQ(peaks["copy_gbps"], 1555.0);
  EXPECT_EQ(peaks["model"], "A100 SXM 40GB");
  EXPECT_NE(peaks["method"].get<std::string>().find("39.6 GiB"), std::string::npos) << peaks["method"];
}

TEST(ExplorerAnalyses, TheSummaryDrawsEachRanksAnalysesWithTheirTimelineRanges) {
  TempDir dir("explorer_analyses");
  dir.write("r0.json", ddp_rank(0));
  dir.write("r1.json", ddp_rank(1));
  prof::Trace t = importer::import_traces({dir.path().string()}).trace;
  explorer::Profile p("ddp", dir.path().string(), t);
  const json& a = p.summary()["analyses"];
  ASSERT_EQ(a["ranks"].size(), 2u) << a.dump(2);
  EXPECT_EQ(a["slowest_rank"], 1);
  for (const json& r : a["ranks"]) {
    // The breakdown adds up to the span, and the span is a range of the timeline.
    EXPECT_EQ(r["compute_ns"].get<int64_t>() + r["non_compute_ns"].get<int64_t>() + r["idle_ns"].get<int64_t>(),
              r["span_ns"].get<int64_t>());
    EXPECT_EQ(r["t1"].get<int64_t>() - r["t0"].get<int64_t>(), r["span_ns"].get<int64_t>());
    EXPECT_GE(r["t0"].get<int64_t>(), p.timeline().begin());
    EXPECT_LE(r["t1"].get<int64_t>(), p.timeline().end());
    ASSERT_EQ(r["idle"].size(), 3u);
    int64_t idle = 0;
    for (const json& k : r["idle"]) {
      idle += k["ns"].get<int64_t>();
      if (k["gaps"].get<int64_t>() > 0) {
        EXPECT_GT(k["t1"].get<int64_t>(), k["t0"].get<int64_t>()) << k;
      }
    }
    EXPECT_EQ(idle, r["idle_ns"].get<int64_t>());
    EXPECT_EQ(r["overlap"]["comm_ns"], 2 * 100'000);
    int64_t binned = 0;
    for (const json& b : r["launches"]["histogram"]) binned += b["count"].get<int64_t>();
    EXPECT_EQ(binned, r["launches"]["launches"].get<int64_t>());
    EXPECT_EQ(binned, 8);
  }
  // Rank 0 waits for rank 1 in its all-reduce: its exposed stretch is a timeline range.
  const json& o = a["ranks"][0]["overlap"];
  EXPECT_GT(o["exposed_ns"].get<int64_t>(), 0);
  EXPECT_GT(o["t1"].get<int64_t>(), o["t0"].get<int64_t>());
  // The recommendations hold the advisor's findings from the same analyses, each with
  // the range that shows it.
  bool straggler = false;
  for (const json& r : p.summary()["recommendations"])
    if (r["kind"] == "straggler") {
      straggler = true;
      ASSERT_TRUE(r.contains("range")) << r;
      EXPECT_GT(r["range"][1].get<int64_t>(), r["range"][0].get<int64_t>()) << r;
    }
  EXPECT_TRUE(straggler) << p.summary()["recommendations"].dump(2);
}

}  // namespace
}  // namespace opscope::test
