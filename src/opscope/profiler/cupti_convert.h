// The pure part of CUPTI device tracing: activity records, held in plain mirror structs
// (cupti.cpp fills them from CUPTI's records; tests fabricate them), turned into trace
// events, plus the fit of CUPTI's clock onto ours. Needs neither a GPU nor CUPTI.
//
// Clock alignment. CUPTI stamps activity with its own clock (cuptiGetTimestamp); every
// host event is CLOCK_MONOTONIC ns (timebase.h). At start and at stop we read CUPTI's
// clock between two host reads, a few times, and keep the reading whose host bracket
// [before, after] is smallest: the host time of the CUPTI read is then known to within
// half the bracket. The two kept readings give a line host = host_ref + (cupti -
// cupti_ref) * rate: the offset, and the drift of one clock against the other. Every
// record lies between the two readings, where a line through two points each known to
// within e0 and e1 is off by at most max(e0, e1): that is the error bound recorded in
// the trace (Trace::device_tracing_json). Not included: CUPTI's own mapping of GPU
// timestamps onto its CPU clock, which it does not expose.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "opscope/profiler/trace.h"

namespace opscope::prof {

// CUPTI's clock read between two CLOCK_MONOTONIC reads.
struct ClockSample {
  int64_t host_before = 0;
  int64_t cupti = 0;
  int64_t host_after = 0;
  int64_t bracket() const { return host_after - host_before; }
};

// Maps CUPTI timestamps onto CLOCK_MONOTONIC ns.
struct ClockFit {
  int64_t cupti_ref = 0;
  int64_t host_ref = 0;
  double rate = 1.0;     // host ns per CUPTI ns (1 when drift was not measured)
  int64_t error_ns = 0;  // bound on |to_host(t) - true host time| between the readings
  bool drift_measured = false;

  int64_t to_host(int64_t cupti) const;
};

// Fits from the best (smallest-bracket) sample at start and at stop. Without stop
// samples, or when the two are too close to measure drift (< 1 ms apart), or when the
// drift measured is implausible (> 0.1%), the rate stays 1. Throws "[cupti] ..." when
// `start` is empty or a sample's bracket is negative.
ClockFit fit_clock(std::span<const ClockSample> start, std::span<const ClockSample> stop);

enum class CopyKind : uint8_t { h2d, d2h, d2d, h2h, peer, other, memset };
const char* copy_name(CopyKind k);  // "Memcpy HtoD", ..., "Memset"

// Mirrors of the CUPTI activity records we use. Times are CUPTI ns.
struct GpuKernelRecord {
  uint32_t correlation = 0;  // CUPTI correlation id (of the runtime call that launched it)
  uint32_t device = 0;       // CUDA device ordinal
  uint32_t stream = 0;       // CUPTI stream id
  int64_t start = 0, end = 0;
  std::string name;  // as CUPTI gives it (mangled or not)
};
struct GpuCopyRecord {  // memcpy and memset
  uint32_t correlation = 0;
  uint32_t device = 0;
  uint32_t stream = 0;
  int64_t start = 0, end = 0;
  int64_t bytes = 0;
  CopyKind kind = CopyKind::other;
};
struct ApiRecord {  // a CUDA runtime API call
  uint32_t correlation = 0;
  int64_t thread = 0;  // OS thread id (CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)
  int64_t start = 0, end = 0;
  std::string name;  // "cudaLaunchKernel_v7000"
};
struct ExternalCorrelation {  // CUPTI correlation id -> our launch id (cupti_push_launch)
  uint32_t correlation = 0;
  uint64_t launch_id = 0;
};

// What one CUPTI window collected.
struct DeviceActivity {
  std::vector<GpuKernelRecord> kernels;
  std::vector<GpuCopyRecord> copies;
  std::vector<ApiRecord> api_calls;
  std::vector<ExternalCorrelation> external;
  int64_t dropped_records = 0;  // cuptiActivityGetNumDroppedRecords, all contexts
  int64_t buffers_refused = 0;  // buffer requests past cupti_max_buffers (CUPTI dropped into them)
  int64_t buffers_used = 0;
  int64_t buffer_kb = 0;
  ClockFit clock;
};

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel"; demangles "_Z..." kernel names.
std::string api_name(std::string_view cupti_name);
std::string kernel_name(std::string_view cupti_name);

// Adds a window's device activity to its collected trace: kernels, copies and memsets
// as device-layer kernel events on one track per (GPU, stream), named "cuda:0 stream 7";
// runtime calls as runtime-layer api events on their host thread's track. Each record
// correlated to one of our launches carries its launch id, and the op that made the
// launch (from the trace's launch events) as parent. CUDA ordinals map to the trace's
// devices named "cuda:N" (a DeviceInfo is added for one not there). Records that map
// before the window's start are left out. Drops add to Trace::dropped; the clock fit
// and counts go into Trace::device_tracing_json. Events stay sorted by (t0, kind).
void merge_device_activity(Trace& trace, const DeviceActivity& activity);

// The JSON object recorded as Trace::device_tracing_json.
std::string device_tracing_json(const DeviceActivity& activity);

}  // namespace opscope::prof
