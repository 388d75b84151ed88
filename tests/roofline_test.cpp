// The device probes and the roofline they put into profiles: measured peaks are
// positive and plausible, bad probe options are refused, and a profile collected after
// attach_device_peaks carries them so key_averages reports % of the roof per op.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "opscope/analysis/key_averages.h"
#include "opscope/analysis/roofline.h"
#include "opscope/core/error.h"
#include "opscope/ops/ops.h"
#include "opscope/profiler/annotate.h"
#include "opscope/profiler/session.h"
#include "opscope/runtime/probe.h"

using namespace opscope;

namespace {

runtime::ProbeOptions small() {
  runtime::ProbeOptions o;
  o.copy_bytes = int64_t(4) << 20;
  o.matmul_n = 128;
  o.repeats = 2;
  return o;
}

}  // namespace

TEST(Probe, MeasuresPositivePeaks) {
  runtime::DevicePeaks p = runtime::measure_peaks(cpu(), small());
  EXPECT_GT(p.copy_gbps, 0.1);
  EXPECT_GT(p.triad_gbps, 0.1);
  EXPECT_GT(p.matmul_gflops, 0.1);
  EXPECT_EQ(p.matmul_n, 128);
  EXPECT_GT(p.launch_ns, 0);
  EXPECT_LT(p.launch_ns, 1e6) << "a tiny launch taking a millisecond means the probe timed something else";
  // The description names the device (its pinned CPUs may swap between calls).
  EXPECT_EQ(p.device.rfind("CPU device " + cpu().name() + " with", 0), 0u) << p.device;
  auto j = nlohmann::json::parse(p.to_json());
  EXPECT_DOUBLE_EQ(j["copy_gbps"].get<double>(), p.copy_gbps);
  EXPECT_NE(j["method"].get<std::string>().find("STREAM"), std::string::npos);
}

TEST(Probe, RejectsBadOptions) {
  auto msg = [](runtime::ProbeOptions o) {
    try {
      runtime::measure_peaks(cpu(), o);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  runtime::ProbeOptions o = small();
  o.copy_bytes = 100;
  EXPECT_EQ(msg(o).rfind("[probe] copy_bytes 100 out of range", 0), 0u) << msg(o);
  o = small();
  o.matmul_n = 0;
  EXPECT_EQ(msg(o).rfind("[probe] matmul_n 0", 0), 0u) << msg(o);
  o = small();
  o.repeats = 0;
  EXPECT_EQ(msg(o).rfind("[probe] repeats 0", 0), 0u) << msg(o);
}

TEST(Roofline, ProfilesCarryTheAttachedPeaks) {
  runtime::DevicePeaks p = runtime::measure_peaks(cpu(), small());
  analysis::attach_device_peaks(p.to_json());
  Tensor x = randn({256, 256}, 0);
  cpu().synchronize();
  prof::ProfilerConfig cfg;
  prof::Profiler session(cfg);
  session.start();
  Tensor y = matmul(x, x) + 1.0;
  cpu().synchronize();
  session.stop();
  prof::set_trace_annotator("device_peaks", nullptr);  // later tests see plain traces
  const prof::Trace& t = session.trace();
  auto j = nlohmann::json::parse(t.config_json);
  ASSERT_TRUE(j.contains("device_peaks")) << t.config_json;
  // The profile records how steady the probe was, so a reader sees a busy machine's roof.
  EXPECT_DOUBLE_EQ(j["device_peaks"]["spread"].get<double>(), p.spread);
  EXPECT_EQ(j["device_peaks"]["levels"].size(), p.levels.size());
  EXPECT_DOUBLE_EQ(j["peak_gbps"].get<double>(), p.stream_gbps);  // the best streaming rate is the roof
  analysis::KeyAverages ka = analysis::key_averages(t);
  ASSERT_TRUE(ka.roofline().known());
  EXPECT_DOUBLE_EQ(ka.roofline().peak_gflops, p.matmul_gflops);
  bool saw_matmul = false;
  for (const auto& r : ka.rows())
    if (r.name == "matmul") {
      saw_matmul = true;
      EXPECT_EQ(r.flops, 2 * 256 * 256 * 256);
      EXPECT_GT(r.gflops(), 0);
      EXPECT_GT(r.bytes, 0);
    }
  EXPECT_TRUE(saw_matmul);
  EXPECT_NE(ka.table().find("% Roofline"), std::string::npos);
}

// The probe keeps the best streaming rate per working set over several kernels (read,
// copy, triad, with and without non-temporal stores) and the spread of its repetitions.
TEST(Probe, KeepsTheBestStreamingRatePerLevelAndItsSpread) {
  runtime::DevicePeaks p = runtime::measure_peaks(cpu(), small());
  ASSERT_EQ(p.levels.size(), 2u);  // 512 KiB and 4 MiB
  EXPECT_EQ(p.levels[0].working_set_bytes, int64_t(512) << 10);
  EXPECT_EQ(p.levels[1].working_set_bytes, int64_t(4) << 20);
  for (const auto& l : p.levels) {
    EXPECT_GT(l.gbps, 0);
    EXPECT_GE(l.gbps, l.store_gbps);  // the best of all kernels, ordinary stores among them
    EXPECT_GE(l.spread, 0);
  }
  EXPECT_DOUBLE_EQ(p.stream_gbps, p.levels.back().gbps);
  EXPECT_GE(p.stream_gbps, p.copy_gbps);  // copy is one of the kernels
  EXPECT_GE(p.stream_gbps, p.triad_gbps);
  EXPECT_DOUBLE_EQ(p.spread, p.levels.back().spread);
  auto j = nlohmann::json::parse(p.to_json());
  EXPECT_DOUBLE_EQ(j["stream_gbps"].get<double>(), p.stream_gbps);
  EXPECT_EQ(j["levels"].size(), 2u);
  EXPECT_TRUE(j.contains("spread"));
  EXPECT_EQ(j["busy"].get<bool>(), p.busy());
  // A profile carrying these peaks reads them back: roof, levels and spread.
  analysis::Roofline r = analysis::roofline_from_config(analysis::with_device_peaks("{}", p.to_json()));
  EXPECT_DOUBLE_EQ(r.peak_gbps, p.stream_gbps);
  ASSERT_EQ(r.levels.size(), 2u);
  EXPECT_DOUBLE_EQ(r.spread, p.spread);
  EXPECT_NE(p.summary().find("spread"), std::string::npos);
}

// The memory roof for a working set: log-interpolated between the probe's levels, the
// largest's beyond them; a point above the roof is flagged, not printed as 128%.
TEST(Roofline, RoofDependsOnTheWorkingSetAndPointsAboveItAreFlagged) {
  analysis::Roofline r = analysis::roofline_from_config(R"({"device_peaks": {"stream_gbps": 30, "matmul_gflops": 100,
      "spread": 0.4, "levels": [{"working_set_bytes": 4194304, "gbps": 120, "store_gbps": 100},
                                {"working_set_bytes": 1048576, "gbps": 200, "store_gbps": 150},
                                {"working_set_bytes": 134217728, "gbps": 30, "store_gbps": 25}]}})");
  ASSERT_EQ(r.levels.size(), 3u);
  EXPECT_EQ(r.levels[0].working_set, 1048576);  // sorted
  EXPECT_DOUBLE_EQ(r.spread, 0.4);
  EXPECT_DOUBLE_EQ(r.gbps_at(512 << 10), 200);
  EXPECT_DOUBLE_EQ(r.gbps_at(2 << 20), 160);  // halfway in log between 1 and 4 MiB
  EXPECT_DOUBLE_EQ(r.gbps_at(1e9), 30);
  EXPECT_DOUBLE_EQ(r.gbps_at(0), 30);  // unknown size: the memory roof
  EXPECT_DOUBLE_EQ(r.store_gbps_at(2 << 20), 125);
  EXPECT_DOUBLE_EQ(r.store_gbps_at(1e9), 25);
  EXPECT_DOUBLE_EQ(r.fraction(15, 0), 0.5);
  EXPECT_DOUBLE_EQ(r.fraction(100, 0, 1 << 20), 0.5);  // against the cache's roof
  EXPECT_EQ(analysis::Roofline::format_fraction(0.873), "87.3%");
  EXPECT_EQ(analysis::Roofline::format_fraction(1.04), "104.0%");  // noise
  EXPECT_EQ(analysis::Roofline::format_fraction(1.28), "above roof");
  // Older profiles: copy_gbps is the roof, no levels.
  analysis::Roofline old = analysis::roofline_from_config(R"({"device_peaks": {"copy_gbps": 22.6, "matmul_gflops": 100}})");
  EXPECT_DOUBLE_EQ(old.peak_gbps, 22.6);
  EXPECT_DOUBLE_EQ(old.gbps_at(1 << 20), 22.6);
  EXPECT_DOUBLE_EQ(old.store_gbps_at(1 << 20), 22.6);
  EXPECT_THROW(analysis::with_device_peaks("{}", "[1, 2]"), Error);
  std::string hand = analysis::with_peak_gbps(R"({"device_peaks": {"copy_gbps": 5, "matmul_gflops": 100}})", 40);
  analysis::Roofline h = analysis::roofline_from_config(hand);
  EXPECT_DOUBLE_EQ(h.peak_gbps, 40);
  EXPECT_DOUBLE_EQ(h.peak_gflops, 100);
}

// The README: peaks are measured "with the spread of the repetitions, so a busy machine
// says so". Above DevicePeaks::kBusySpread the probe warns, with the spread and the way to
// a quiet measurement; at or below it, not.
TEST(Probe, ABusyMachinesProbeSaysSo) {
  const std::string warning =
      "warning: the probe's repetitions differ by 50%: the machine was busy, its peaks read low\n"
      "  (save a quiet probe with `opscope probe --save FILE` and pass --peaks FILE)\n";
  runtime::DevicePeaks p;
  p.stream_gbps = 10;
  p.spread = 0.5;
  EXPECT_TRUE(p.busy());
  EXPECT_NE(p.summary().find(warning), std::string::npos) << p.summary();
  EXPECT_TRUE(nlohmann::json::parse(p.to_json())["busy"].get<bool>());
  EXPECT_EQ(runtime::busy_warning(0.5), warning);
  for (double quiet : {runtime::DevicePeaks::kBusySpread, 0.02, 0.0}) {
    p.spread = quiet;
    EXPECT_FALSE(p.busy()) << quiet;
    EXPECT_EQ(p.summary().find("warning"), std::string::npos) << p.summary();
    EXPECT_FALSE(nlohmann::json::parse(p.to_json())["busy"].get<bool>());
  }
}

// A saved probe read back (--peaks FILE) says so too when it was taken on a busy machine.
TEST(Probe, ASavedBusyProbeSaysSoWhenUsed) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("opscope_busy_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "busy.json") << R"({"stream_gbps": 20, "matmul_gflops": 50, "spread": 0.4})";
  std::ofstream(dir / "quiet.json") << R"({"stream_gbps": 20, "matmul_gflops": 50, "spread": 0.05})";
  for (const char* which : {"busy", "quiet"}) {
    testutil::CliResult r = testutil::run_opscope({"profile", "rmsnorm", "--impl", "builtin", "--shape", "8x64",
                                                   "--iters", "1", "--peaks", (dir / (std::string(which) + ".json")).string(),
                                                   "--out", (dir / which).string()});
    ASSERT_EQ(r.status, 0) << r.out;
    bool warned = r.out.find("warning: the probe's repetitions differ by 40%: the machine was busy") != std::string::npos;
    EXPECT_EQ(warned, std::string(which) == "busy") << r.out;
  }
  std::filesystem::remove_all(dir);
}
