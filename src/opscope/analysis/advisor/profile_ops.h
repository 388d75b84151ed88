// The advisor's view of a profile: every launch as the span of its kernels, and each
// launching op (the unit a user wrote: the outermost op above a launch, autograd's
// backward wrappers aside) with the device time, bytes and
// launches of its kernels. The chains, the launch cost and the pricing all read it.
//
// A GPU trace records no bytes for kernels (only copies have them): a kernel whose op
// launched it alone moves what its op's recorded shapes say (inputs, and the output of
// an elementwise op), so small kernels still fit the launch cost and chains still price
// their traffic. Without record_shapes they stay at 0.
#pragma once
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "opscope/analysis/trace.h"

namespace opscope::advisor {

using analysis::Trace;
using analysis::TraceEvent;

// One launch: its kernels' span on the device (all slices, all cores).
struct LaunchSpan {
  int64_t t0 = INT64_MAX, t1 = INT64_MIN;
  int64_t bytes = 0;        // the launch's (or, without a launch event, its slices')
  int64_t slice_bytes = 0;
  int64_t flops = 0;
  int64_t submit = INT64_MIN;  // when the launch call returned
  int64_t slices = 0;
  int32_t stream = -1;         // the GPU stream it ran on (-1: the CPU device)
  uint64_t op = 0;             // the op that launched it
  bool has_launch = false;
  bool ran() const { return t1 >= t0; }
};

struct Op {
  const TraceEvent* ev = nullptr;
  int64_t device_ns = 0, bytes = 0, launches = 0, out_bytes = 0;
  int64_t fanned = 0;  // launches that ran on more than one core
  int64_t slices = 0;  // their slices: one per core a launch ran on
  uint64_t range = 0;  // the innermost enclosing range instance: a chain ends where it does
  std::vector<const LaunchSpan*> kernels;  // its launches, by start
};

// One launch as a sample for the launch cost: its span and bytes.
struct LaunchSample {
  double span, bytes;
  bool fanned, streaming;
};

struct ProfileOps {
  std::unordered_map<uint64_t, const TraceEvent*> scopes;  // ops and ranges by id
  std::unordered_map<uint64_t, LaunchSpan> launches;       // by launch id
  std::unordered_map<uint64_t, Op> ops;                    // launching ops by id
  std::vector<LaunchSample> samples;
  int64_t total_device_ns = 0, kernels = 0;
  bool any_shapes = false;  // ops carry input shapes (record_shapes)
  bool gpu = false;         // kernels ran on GPU streams

  // The ranges enclosing a scope, outermost first.
  std::vector<std::string_view> context_of(const TraceEvent* e) const;
  // The innermost range enclosing a scope (0: none).
  uint64_t innermost_range(const TraceEvent* e) const;
  // The innermost scope named `name` enclosing an op (0: none).
  uint64_t enclosing(const TraceEvent* e, std::string_view name) const;
};

// Throws "[advise] ..." when the profile has no framework ops.
ProfileOps profile_ops(const Trace& trace);

// Bytes an op's kernel moves, from its recorded input shapes: the inputs, and for an
// elementwise op an output the size of its largest input (0 without shapes).
int64_t shape_bytes(const TraceEvent& op);

}  // namespace opscope::advisor
