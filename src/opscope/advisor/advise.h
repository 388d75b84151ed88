// The fusion advisor: finds op sequences in a profile that one generated kernel could
// run (chains of elementwise ops and reductions between the ops that never fuse —
// matmul, softmax, concat, the built-in norms), and predicts for each the device time
// a fusion would save, from what the profile itself measured:
//
//   saved = Σ device time of the chain's kernels − predicted time of one fused kernel
//   fused = launch cost + max(fused bytes / bandwidth, Σ compute)   (a roofline)
//
// - launch cost: the fixed device time of a launch, fitted from the profile's own small
//   kernels (their span minus their bytes at the probe's bandwidth);
// - bandwidth: the best any op of the chain achieved once its fixed cost is taken off
//   (the level of the memory hierarchy its data lives in), at least the probe's;
// - compute: each op's time past its launch cost that its bytes at that bandwidth do not
//   explain — math such as silu's exp, or a strided access pattern — which a fused
//   kernel still does, overlapped with its streaming as each op overlapped its own;
// - bytes a fused kernel moves: the chain's inputs from outside it, once per op that
//   reads them, and its final output. An op's input is the chain's own intermediate when
//   an earlier op of the chain produced a tensor of that shape and dtype not yet read
//   (the profile holds shapes, not tensor identities); needs record_shapes.
//
// `opscope advise DIR` prints the ranking; `--verify` checks it (advisor/verify.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "opscope/profiler/trace.h"

namespace opscope::advisor {

struct Suggestion {
  std::vector<std::string> ops;  // the chain's op names, in order
  std::string pattern;           // "mul → mean → add → rsqrt → mul → mul"
  std::string kind;              // "norm", "activation", "residual", "elementwise"
  std::string context;           // enclosing ranges, numbers generalized: "prefill/layers.N/mlp"
  int64_t occurrences = 0;
  int64_t launches = 0;          // kernels the chain launched, over all occurrences
  int64_t device_ns = 0;         // their device time
  int64_t bytes = 0;             // moved by them
  int64_t fused_bytes = 0;       // a fused kernel would move
  double bandwidth_gbps = 0;     // the fused kernel streams at: the best its ops reached past their fixed cost
  double predicted_saved_ns = 0;
  std::vector<uint64_t> example_ops;  // op ids of one occurrence, for the explorer
  double saved_bytes = 0, saved_bytes_ns = 0;  // bytes no longer moved, and their time

  double predicted_fused_ns() const { return double(device_ns) - predicted_saved_ns; }
};

struct AdviseOptions {
  int min_ops = 2;  // shortest chain worth a kernel
  // Only this op sequence: every place it occurs inside a chain is one occurrence (what
  // compiling a region that runs exactly these ops would save). Empty: whole chains.
  std::vector<std::string> pattern;
  // Only ops inside a scope (a range, or an op such as a compiled function) of this name;
  // a chain ends where its scope instance does (what compiling that region would save).
  std::string within;
  // The probe's copy bandwidth, GB/s; 0: from the trace's config (device_peaks).
  double peak_gbps = 0;
};

struct Advice {
  std::vector<Suggestion> suggestions;  // ranked by predicted_saved_ns, largest first
  int64_t total_device_ns = 0;          // all launches in the profile
  double launch_cost_ns = 0;
  std::string launch_cost_from;         // how launch_cost_ns was found
  double peak_gbps = 0;                 // the probe's, when the profile carries it
  std::vector<std::string> warnings;

  // limit <= 0: every suggestion.
  std::string table(int limit = 10) const;
  std::string to_json(int limit = 0) const;
};

// Throws "[advise] ..." when the trace has no framework ops or no device time.
Advice advise(const prof::Trace& trace, const AdviseOptions& options = {});

// Ops a generated kernel can absorb (elementwise, casts, reductions).
bool fusable_op(std::string_view name);

}  // namespace opscope::advisor
