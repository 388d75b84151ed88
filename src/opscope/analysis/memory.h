// The device allocator's memory in a collected Trace (alloc/free events from the caching
// allocator): each device's peak of allocated bytes, when it happened and in which
// op/range, as torch.profiler's memory view and Nsight's memory timeline show it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "opscope/analysis/trace.h"
#include "opscope/core/bytes.h"

namespace opscope::analysis {

struct DeviceMemory {
  int32_t device = -1;
  std::string name;            // "cpu:0" (the trace's DeviceInfo), else "device N"
  int64_t peak_bytes = 0;      // most bytes allocated on the device after any alloc/free
  int64_t peak_time_ns = 0;    // t0 of the event that reached it (first one, on a tie)
  uint64_t peak_op = 0;        // innermost op/range open on the allocating thread (0 = none)
  std::string peak_op_path;    // "rmsnorm naive > mul", outermost first ("" = none)
  int64_t start_bytes = 0;     // allocated before the first recorded event
  int64_t end_bytes = 0;       // allocated after the last one
  int64_t allocs = 0, frees = 0;
  int64_t allocated_bytes = 0, freed_bytes = 0;  // sums of the blocks' sizes
};

// One entry per device with alloc/free events, by device index; empty when none.
std::vector<DeviceMemory> memory_summary(const Trace& trace);

// "cpu:0 memory: peak 192.0 MB at 12.3 ms in rmsnorm naive > mul", one line per device
// ("" when the trace has no alloc/free events).
std::string memory_summary_text(const Trace& trace);

using opscope::format_memory;  // core/bytes.h

// Whether the trace has any alloc or free event.
bool has_memory_events(const Trace& trace);

}  // namespace opscope::analysis
