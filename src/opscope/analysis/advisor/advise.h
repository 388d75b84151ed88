// The advisor: what to change in a profiled program and what it will save, from what
// the profile itself measured. It serves `opscope advise`, the explorer's summary and
// (through them) Python. Its findings, each a small analysis of its own file:
//
// 1. Fusable chains (chains.h, chain_price.h): op sequences one kernel could run
//    (elementwise ops, casts and reductions between ops that never fuse — matmul,
//    softmax, concat, the built-in norms; on a GPU a matmul's bias and activation too, as
//    its epilogue). A chain also ends where its range does (each call's record_function,
//    each ProfilerStep#N, each module), so a chain repeated is one suggestion with its
//    count ("6 ops × 5 calls"). A chain that computes a known op names it and its fix
//    (the six-op RMSNorm → rms_norm); otherwise the fix is compiling its scope.
//
//      saved = Σ device time of the chain's kernels (+ on a GPU the gaps between them)
//              − predicted time of one fused kernel
//      fused = launch cost + max(fused bytes / rate, Σ compute)   (a roofline)
//
//    - launch cost: the fixed device time of a launch, fitted from the profile's own
//      small kernels (launch_cost.h), apart for launches fanned out over several cores;
//    - rate: the peaks' streaming rate at the fused kernel's working set (its bytes:
//      beyond the last-level cache, the DRAM rate; within it, the cache's; ordinary
//      stores, pricing.h) — the probe's for opscope's devices, the GPU's datasheet
//      bandwidth for an imported trace (importer/gpu_peaks.h). Without peaks: the best
//      rate any op of the chain reached past its fixed cost. Never faster than the
//      slowest streaming op over the chain's whole domain moved its bytes: the fused
//      kernel walks that domain the same way;
//    - compute: what each math op (exp, silu, div, ...) costs in the generated kernel
//      (compiler/math_probe.h, carried by the peaks); without that, the eager op's time
//      past its launch cost that its bytes at the rate for its own working set do not
//      explain. Either way overlapped with the streaming;
//    - fused bytes: the chain's inputs from outside it, once per op that reads them (a
//      known norm or softmax reads its input once), and its final output, from the
//      recorded shapes (record_shapes). A GPU kernel's own bytes come from its op's shapes
//      (profile_ops.h).
//
// 2. Trace findings (findings.h), from the trace analyses (analysis/analyze.h), each
//    naming its evidence (rank, stream, step, time range) and its fix: host-bound,
//    launch-bound, communication exposed, a straggler rank, small kernels.
//
// `opscope advise DIR` prints it; `--verify` checks the predictions (advisor/verify.h).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "opscope/analysis/analyze.h"
#include "opscope/analysis/peaks.h"
#include "opscope/analysis/trace.h"

namespace opscope::advisor {

struct Suggestion {
  std::vector<std::string> ops;  // the chain's op names, in order
  std::string pattern;           // "mul → mean → add → rsqrt → mul → mul"
  std::string kind;              // "norm", "activation", "residual+norm", "elementwise"
  std::string context;           // enclosing ranges, numbers generalized: "prefill/layers.N/mlp"
  std::string scope;             // the innermost enclosing range of one occurrence: what to compile
  std::string known_op;          // "RMSNorm", "softmax", ...; empty: none
  std::string fix;               // what to do, named
  int64_t occurrences = 0;
  int64_t launches = 0;          // kernels the chain launched, over all occurrences
  int64_t device_ns = 0;         // their device time
  int64_t gaps_ns = 0;           // on a GPU: the idle time between them fusing removes
  int64_t bytes = 0;             // moved by them
  int64_t fused_bytes = 0;       // a fused kernel would move
  double bandwidth_gbps = 0;     // the fused kernel's streaming rate
  std::string rate_from;         // "probe at 128 MiB (beyond the caches)", ...
  double compute_ns = 0;         // the fused kernels' math, over all occurrences
  std::string math_from;         // how it was priced; empty: the eager ops' own compute
  double predicted_saved_ns = 0;
  std::vector<uint64_t> example_ops;  // op ids of one occurrence, for the explorer

  double predicted_fused_ns() const { return double(device_ns + gaps_ns) - predicted_saved_ns; }
  // "Replace the six-op RMSNorm with rms_norm", "Compile 'mlp': 2 ops × 22 calls".
  std::string title() const;
  // "6 ops × 5 calls"
  std::string count_text() const;
};

// A finding about the whole trace, from its analyses: what was seen, where, and the fix.
struct Finding {
  std::string kind;   // "host_bound", "launch_bound", "comm_exposed", "straggler", "small_kernels"
  std::string title;  // "Host-bound: rank 0's device waits for launches 64% of its span"
  std::string detail;
  std::string fix;
  double impact_ns = 0;  // the time at stake
  std::vector<std::pair<std::string, std::string>> evidence;  // (label, text): rank, stream, step, time
  int64_t rank = -1;
  int64_t t0 = 0, t1 = 0;  // the timeline range that shows it (t1 > t0)
};

// A fused kernel of a compiled profile (advisor/compiled.h).
struct CompiledKernel {
  std::string name;
  std::string origins;  // "aten::mul, aten::add in h.0.attn" (kernel_origins.h)
  int64_t launches = 0;
  int64_t device_ns = 0;
};

// Device time lost waiting for the host to launch the next kernel.
struct HostWait {
  int64_t idle_ns = 0;  // gaps with no kernel running whose next launch came from the host after the gap began
  int64_t gaps = 0;
  int64_t span_ns = 0;  // first kernel's start to the last one's end
  double fraction() const { return span_ns > 0 ? double(idle_ns) / double(span_ns) : 0; }
  bool significant() const { return gaps >= 2 && fraction() >= 0.1; }
};

struct AdviseOptions {
  int min_ops = 2;  // shortest chain worth a kernel
  // Only this op sequence: every place it occurs inside a chain is one occurrence (what
  // compiling a region that runs exactly these ops would save). Empty: whole chains.
  std::vector<std::string> pattern;
  // Only ops inside a scope (a range, or an op such as a compiled function) of this name;
  // a chain ends where its scope instance does (what compiling that region would save).
  std::string within;
  // A memory roof, GB/s, instead of the profile's device_peaks (0: the profile's).
  double peak_gbps = 0;
  // Peaks instead of the profile's (a saved `opscope probe`, or the eager run's for a
  // re-run that probed on a busy machine); none: the profile's own (analysis/peaks.h).
  std::optional<analysis::Peaks> peaks;
  // The kernel-wait threshold (analysis/idle_time.h): the most one gap between a chain's
  // GPU kernels saves, and what the findings call launch overhead.
  int64_t kernel_wait_ns = analysis::kDefaultKernelWaitNs;
  // The trace's analyses, when the caller has them (the explorer); else computed.
  const analysis::TraceAnalysis* analyses = nullptr;
};

struct Advice {
  std::vector<Suggestion> suggestions;  // ranked by predicted_saved_ns, largest first
  std::vector<Finding> findings;        // by impact, largest first
  std::vector<CompiledKernel> compiled; // a compiled profile's fused kernels, most device time first
  HostWait host_wait;                   // of the rank whose device waits the most
  int64_t total_device_ns = 0;          // all launches in the profile
  int64_t kernels = 0;                  // launches with device time
  double launch_cost_ns = 0;             // a launch on one core
  double fanout_cost_ns = 0;             // a launch fanned out over several cores
  std::string launch_cost_from;         // how launch_cost_ns was found
  double peak_gbps = 0;                 // the probe's memory roof, when the profile carries it
  std::vector<std::string> warnings;

  // limit <= 0: every suggestion.
  std::string table(int limit = 10) const;
  std::string to_json(int limit = 0) const;
  // One line per figure of a suggestion, as the CLI prints and the explorer shows them.
  std::vector<std::pair<std::string, std::string>> figures(const Suggestion& s) const;
  std::string host_wait_text() const;  // empty when the device does not wait on the host
  // The findings, each its title, detail, fix and evidence (empty without findings).
  std::string findings_text() const;
};

// Throws "[advise] ..." when the trace has no framework ops, no device time, or a
// single kernel.
Advice advise(const prof::Trace& trace, const AdviseOptions& options = {});

// "640.1 MiB", "8.0 KiB", "2.50 GiB": sizes in the advice's text.
std::string format_bytes(double bytes);

// Ops a generated kernel can absorb (elementwise, casts, reductions).
bool fusable_op(std::string_view name);

}  // namespace opscope::advisor
