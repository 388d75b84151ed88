// The advisor's trace findings: each a small rule over the trace analyses
// (analysis/analyze.h) that names what it saw, where (rank, stream, step, time range)
// and the fix. The rules, in kRules's order (findings.cpp):
//   host_bound     the device idles waiting for the host to launch: ≥ 10% of a rank's
//                  span in host-wait gaps (idle_time.h)
//   launch_bound   most kernels run shorter than the call that launches them, and the
//                  device idles between them (launch_stats.h)
//   comm_exposed   communication no computation hides: ≥ 10% of the span, under half
//                  of it overlapped (overlap.h)
//   straggler      one rank's own work ≥ 10% over the median rank's: the others wait for
//                  it in their collectives (analyze.h's slowest rank)
//   small_kernels  most kernels average under 10 µs: each pays its fixed cost for
//                  little work (kernel_breakdown.h)
// The fixes name a GPU's remedies (CUDA graphs, bucket sizes) only where the work ran on
// a GPU.
#pragma once
#include <vector>

#include "opscope/analysis/advisor/advise.h"

namespace opscope::advisor {

// Every rule's finding, by impact (largest first).
std::vector<Finding> trace_findings(const analysis::TraceAnalysis& a);

// The host wait of the rank whose device waits the most for its host (share of span).
HostWait worst_host_wait(const analysis::TraceAnalysis& a);

constexpr double kSignificantShare = 0.10;  // of a rank's span
constexpr int64_t kSmallKernelNs = 10'000;

}  // namespace opscope::advisor
