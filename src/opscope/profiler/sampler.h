// The instructions layer's capture: timer-based samples of each device core's thread,
// through Linux's perf_event_open. Hardware cycles where the CPU exposes a PMU to this
// process, else the software cpu-clock timer (what `perf` falls back to). Each sample is
// the core's instruction pointer and time (CLOCK_MONOTONIC, the trace's clock); the
// kernel writes them into a ring per thread that a reader thread drains. Nothing is
// done on the cores themselves: at collection, a sample is kept when it fell inside one
// of its core's kernel events (attach_samples, samples.h), which gives its launch.
//
// Device cores announce their threads with on_core_thread_start/exit (hooks.h); a core
// that starts while a window samples is sampled from then on.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "opscope/profiler/config.h"

struct perf_event_attr;

namespace opscope::prof::detail {

struct CoreSample {
  int64_t t = 0;       // CLOCK_MONOTONIC ns
  uint64_t ip = 0;     // instruction pointer (a kernel address when the core was in the OS)
  int32_t core_key = 0;  // (device << 16) | core
};

// What one window's sampling did.
struct SamplerReport {
  bool started = false;  // false: the config did not ask for the instructions layer
  std::string event;     // "cycles" or "cpu-clock"; empty when no event could be opened
  bool hardware = false;
  bool kernel_ips = false;  // samples include time in the OS (else user code only)
  int64_t rate_hz = 0;
  bool rate_auto = false;     // the rate was left to opscope (ProfilerConfig::kAutoSampleRate)
  int64_t sample_cost_ns = 0; // one sample's interrupt on this machine, when measured (sample_cost.h)
  int64_t period = 0;    // cpu-clock: ns between samples; cycles: 0 (the kernel adapts the period to the rate)
  int threads = 0;       // core threads sampled
  int64_t lost = 0;      // samples the OS could not write (a full ring: PERF_RECORD_LOST)
  int64_t dropped = 0;   // samples over the per-core cap (config.max_events)
  std::string warning;   // why there are no samples (permission, seccomp...), else empty
  std::vector<CoreSample> samples;  // in no particular order
};

// Starts sampling the device cores' threads when config.layers has kInstructions.
// Never throws: when the OS refuses, it warns once on stderr and the report says why.
void sampler_begin(const ProfilerConfig& config);
// Stops sampling, drains every ring and returns what was captured.
SamplerReport sampler_end();

// Tests: replaces perf_event_open (null restores it), to see what a refusal does.
using PerfEventOpenFn = long (*)(perf_event_attr* attr, int tid, int cpu, int group, unsigned long flags);
void set_perf_event_open_for_testing(PerfEventOpenFn fn);

}  // namespace opscope::prof::detail
