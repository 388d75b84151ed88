// The profile session's side of CUPTI tracing (cupti.cpp): one recording window at a
// time, begun after the host window opens and ended after the devices drained.
#pragma once
#include <optional>

#include "opscope/profiler/config.h"
#include "opscope/profiler/cupti_convert.h"

namespace opscope::prof::detail {

// Begins GPU tracing when this build has CUPTI, `config` records the device layer and a
// CUDA device exists (a CUDA device made during the window is traced from the next one).
// Never throws: when CUPTI fails, it warns once on stderr and the profile has no GPU
// events.
void cupti_begin(const ProfilerConfig& config);
// Ends the window begun by cupti_begin: disables the activity kinds, flushes CUPTI's
// buffers (forced) and returns what they held; nullopt when no window was begun.
std::optional<DeviceActivity> cupti_end();

}  // namespace opscope::prof::detail
