// What one sampling interrupt costs on this machine, and the rate the instructions layer
// picks from it when the user left the rate to it (ProfilerConfig::kAutoSampleRate).
//
// A timer sample stops the core for an interrupt. On bare metal that is ~1-2 us, so 10 kHz
// costs 1-2% of the core's time; in a VM each interrupt goes through the hypervisor and can
// cost 10-20x more (20 us on the machine this was written on: 10 kHz took 20-30%). perf
// itself lowers its rate when interrupts take too long (kernel.perf_cpu_time_max_percent);
// opscope measures the cost once per process and keeps the sampling within a budget.
#pragma once
#include <cstdint>
#include <optional>

namespace opscope::prof::detail {

// One sample's cost in ns, measured on the calling thread: a loop of clock reads sampled by
// cpu-clock at 20 kHz for ~5 ms; the median gap between consecutive reads longer than
// 250 ns is the interrupt (the OS's own tick adds a few). nullopt when the OS refuses the
// event. Measured at the first call, then remembered.
std::optional<int64_t> sample_cost_ns();

// The rate that spends at most `budget` of a core's time in sample interrupts, in steps of
// 100 Hz, between 100 Hz and `cap`.
int64_t rate_within_budget(int64_t cost_ns, double budget, int64_t cap);

}  // namespace opscope::prof::detail
