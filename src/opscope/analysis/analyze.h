// `opscope analyze`: every trace analysis on every rank of a profile, with the
// cross-rank spread (min, median, max and the ranks at the ends) and the slowest rank.
//
// The analyses, each in its own file with its definition beside it:
//   temporal       temporal.h          idle, compute and non-compute time of the span
//   idle           idle_time.h         host wait, kernel wait, other
//   kernels        kernel_breakdown.h  COMM / COMP / MEM (kernel_kind.h) and top kernels
//   overlap        overlap.h           communication hidden under computation
//   launches       launch_stats.h      launch delay, kernels shorter than their launch
//   queues         queue_length.h      per-stream queue length
//   critical_path  critical_path.h     one iteration's critical path
//   host           host_time.h         host threads' busy time (no device events needed)
// A rank's span runs from its first to its last device event; with per_step, each
// ProfilerStep is analysed on its own too (the work it launched).
//
// The slowest rank is the one whose device spent the longest on its own work: its span
// less its idle time and its exposed communication. In a step that ends in a collective
// the other ranks wait for it there, so their spans match its own; its own work does not.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "opscope/analysis/critical_path.h"
#include "opscope/analysis/host_time.h"
#include "opscope/analysis/idle_time.h"
#include "opscope/analysis/kernel_breakdown.h"
#include "opscope/analysis/launch_stats.h"
#include "opscope/analysis/overlap.h"
#include "opscope/analysis/queue_length.h"
#include "opscope/analysis/rank_view.h"
#include "opscope/analysis/temporal.h"

namespace opscope::analysis {

constexpr int64_t kAllRanks = INT64_MIN;

struct AnalyzeOptions {
  int64_t kernel_wait_ns = kDefaultKernelWaitNs;  // idle_time.h's threshold
  int64_t rank = kAllRanks;                       // only this rank
  bool per_step = false;                          // each ProfilerStep on its own too
  int top_kernels = 10;                           // kernels listed per rank
};

struct StepAnalysis {
  std::string name;
  int64_t t0 = 0, t1 = 0;  // the step's host range
  Temporal temporal;
  IdleBreakdown idle;
  KernelBreakdown kernels;
  Overlap overlap;
  LaunchStats launches;
};

struct RankAnalysis {
  int64_t rank = -1;
  std::string source;  // the file it came from, when streamed from a folder
  bool has_device = false, gpu = false;
  std::vector<std::string> queues;  // stream names, by RankView::queues index
  int64_t steps = 0;
  Temporal temporal;
  IdleBreakdown idle;
  KernelBreakdown kernels;
  Overlap overlap;
  LaunchStats launches;
  QueueLengths queue_lengths;
  CriticalPath critical_path;
  HostTime host;
  std::vector<StepAnalysis> per_step;

  // Device time on the rank's own work: span − idle − exposed communication.
  int64_t work_ns() const { return temporal.span_ns - temporal.idle_ns - overlap.exposed_ns; }
};

struct TraceAnalysis {
  AnalyzeOptions options;
  std::string source;
  std::vector<RankAnalysis> ranks;    // ascending rank
  std::vector<std::string> warnings;  // mismatched steps, no device events, import notes

  bool has_device() const;
  // The rank with the most work_ns(), when there are two ranks or more with device
  // work; else nullptr.
  const RankAnalysis* slowest() const;
  // The median work_ns() over the ranks with device work.
  int64_t median_work_ns() const;

  std::string text() const;
  std::string to_json() const;
};

// Every analysis of one rank.
RankAnalysis analyze_rank(const RankView& view, const AnalyzeOptions& options = {});

// Every rank of a loaded trace (a saved profile, or traces imported together).
// Throws "[--rank] ..." when options.rank names a rank the trace does not have.
TraceAnalysis analyze(const Trace& trace, const AnalyzeOptions& options = {});

// The warnings that compare ranks (different ProfilerStep counts; ranks, or a whole
// trace, without device events), added to `a.warnings`. analyze() calls it; a caller
// that gathers ranks itself (one file at a time) calls it once all are in.
void add_rank_warnings(TraceAnalysis& a);

// Options checked before any file is read: "[--kernel-wait-ns] ...", "[--top] ...".
void check_analyze_options(const AnalyzeOptions& options);

}  // namespace opscope::analysis
