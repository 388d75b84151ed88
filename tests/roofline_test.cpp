// The device probes and the roofline they put into profiles: measured peaks are
// positive and plausible, bad probe options are refused, and a profile collected after
// attach_device_peaks carries them so key_averages reports % of the roof per op.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "opscope/core/error.h"
#include "opscope/ops/ops.h"
#include "opscope/profiler/annotate.h"
#include "opscope/profiler/key_averages.h"
#include "opscope/profiler/roofline.h"
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
  prof::attach_device_peaks(p.to_json());
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
  EXPECT_DOUBLE_EQ(j["peak_gbps"].get<double>(), p.copy_gbps);
  prof::KeyAverages ka = prof::key_averages(t);
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
