// The advisor's trace findings (analysis/advisor/findings.h) on hand-built GPU traces
// whose answer is known by construction: each finding fires on the evidence it names
// (rank, stream, step, time range) and stays quiet on a trace without it.
#include <gtest/gtest.h>

#include <algorithm>

#include "gpu_trace.h"
#include "opscope/analysis/advisor/findings.h"
#include "opscope/analysis/analyze.h"

namespace opscope::analysis {
namespace {

using advisor::Finding;

const Finding* find(const std::vector<Finding>& fs, const std::string& kind) {
  auto it = std::find_if(fs.begin(), fs.end(), [&](const Finding& f) { return f.kind == kind; });
  return it == fs.end() ? nullptr : &*it;
}

std::string evidence(const Finding& f, const std::string& label) {
  for (auto& [l, text] : f.evidence)
    if (l == label) return text;
  return "";
}

// 60 kernels of 1 µs, each launched by a 4 µs call the host starts 5 µs after the
// previous one: the device idles ~4 µs before every kernel waiting for its launch.
GpuTrace launch_bound_rank() {
  GpuTrace g;
  int32_t h = g.host(0), s = g.stream(7, 0);
  g.step(h, 0, 0, 310'000);
  for (int i = 0; i < 60; ++i) {
    int64_t c0 = 1'000 + int64_t(i) * 5'000;
    g.launch(h, c0, c0 + 4'000, s, c0 + 4'500, c0 + 5'500, "vectorized_elementwise_kernel");
  }
  return g;
}

TEST(Findings, HostBoundLaunchBoundAndSmallKernelsNameTheirEvidence) {
  AnalyzeOptions o;
  o.per_step = true;
  TraceAnalysis a = analyze(launch_bound_rank().t, o);
  std::vector<Finding> fs = advisor::trace_findings(a);

  const Finding* host = find(fs, "host_bound");
  ASSERT_NE(host, nullptr);
  // 59 gaps of 4 µs between the kernels: the span is 59 × 5 µs + 1 µs.
  EXPECT_DOUBLE_EQ(host->impact_ns, 59 * 4'000);
  EXPECT_EQ(host->rank, 0);
  EXPECT_EQ(evidence(*host, "rank"), "0");
  EXPECT_NE(evidence(*host, "host wait").find("in 59 gaps"), std::string::npos) << evidence(*host, "host wait");
  EXPECT_NE(evidence(*host, "stream").find("stream 7: 236.0 µs waiting for the host in 59 gaps"), std::string::npos)
      << evidence(*host, "stream");
  EXPECT_NE(evidence(*host, "step").find("ProfilerStep#0"), std::string::npos) << evidence(*host, "step");
  EXPECT_EQ(host->t1 - host->t0, 4'000);  // the longest gap, to show on the timeline
  EXPECT_NE(host->fix.find("CUDA graph"), std::string::npos) << host->fix;

  const Finding* launch = find(fs, "launch_bound");
  ASSERT_NE(launch, nullptr);
  EXPECT_NE(launch->detail.find("60 of rank 0's 60 kernels (100%)"), std::string::npos) << launch->detail;
  // What shorter kernels lose: their calls' time past their own, at most the idle time.
  EXPECT_DOUBLE_EQ(launch->impact_ns, 60 * (4'000 - 1'000));
  EXPECT_LT(launch->t0, launch->t1);

  const Finding* small = find(fs, "small_kernels");
  ASSERT_NE(small, nullptr);
  EXPECT_NE(small->detail.find("60 of rank 0's 60 kernels (100%)"), std::string::npos) << small->detail;
  EXPECT_NE(evidence(*small, "most launched").find("vectorized_elementwise_kernel ×60"), std::string::npos);
  EXPECT_NE(small->fix.find("larger batch"), std::string::npos);

  EXPECT_EQ(find(fs, "comm_exposed"), nullptr);  // no communication
  EXPECT_EQ(find(fs, "straggler"), nullptr);     // one rank
  for (size_t i = 1; i < fs.size(); ++i) EXPECT_GE(fs[i - 1].impact_ns, fs[i].impact_ns);
}

TEST(Findings, ExposedCommunicationAndTheStragglerRank) {
  // two_ranks: rank 1's gemm takes 600 ns to rank 0's 400, so rank 0 waits in its
  // all-reduce (390 ns a step with nothing running beside it).
  TraceAnalysis a = analyze(two_ranks().t);
  std::vector<Finding> fs = advisor::trace_findings(a);

  const Finding* comm = find(fs, "comm_exposed");
  ASSERT_NE(comm, nullptr);
  EXPECT_EQ(comm->rank, 0);
  EXPECT_DOUBLE_EQ(comm->impact_ns, 2 * 390);
  EXPECT_NE(evidence(*comm, "overlap").find("(0%)"), std::string::npos) << evidence(*comm, "overlap");
  EXPECT_EQ(comm->t1 - comm->t0, 390);  // the longest exposed stretch
  EXPECT_NE(comm->fix.find("bucket_cap_mb"), std::string::npos);

  const Finding* slow = find(fs, "straggler");
  ASSERT_NE(slow, nullptr);
  EXPECT_EQ(slow->rank, 1);
  EXPECT_NE(slow->title.find("rank 1"), std::string::npos) << slow->title;
  EXPECT_NE(slow->detail.find("rank 0 waits"), std::string::npos) << slow->detail;
  EXPECT_NE(evidence(*slow, "kernel").find("gemm"), std::string::npos) << evidence(*slow, "kernel");
  EXPECT_LT(slow->t0, slow->t1);
}

TEST(Findings, NoneOnABusyDevice) {
  // Long kernels queued ahead of time, back to back: nothing to find.
  GpuTrace g;
  int32_t h = g.host(), s = g.stream(7);
  for (int i = 0; i < 30; ++i)
    g.launch(h, int64_t(i) * 1'000, int64_t(i) * 1'000 + 500, s, 100'000 + int64_t(i) * 200'000,
             100'000 + int64_t(i + 1) * 200'000, "gemm");
  std::vector<Finding> fs = advisor::trace_findings(analyze(g.t));
  EXPECT_TRUE(fs.empty()) << fs.front().kind << ": " << fs.front().detail;
}

}  // namespace
}  // namespace opscope::analysis
