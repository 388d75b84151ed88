// The profile session's side of CUPTI tracing (cupti.cpp): one recording window at a
// time, begun after the host window opens and ended after the devices drained.
#pragma once
#include <optional>

#include "opscope/profiler/config.h"
#include "opscope/profiler/cupti_convert.h"

namespace opscope::prof::detail {

// Begins GPU tracing when this build has CUPTI and `config` records the device layer:
// at once when a CUDA device exists, else when the first one is made during the window
// (cupti_on_device_created). Never throws: when CUPTI fails, it warns once on stderr and
// the profile has no GPU events.
void cupti_begin(const ProfilerConfig& config);
// Ends the window begun by cupti_begin: disables the activity kinds, flushes CUPTI's
// buffers (forced) and returns what they held; nullopt when no window was begun.
std::optional<DeviceActivity> cupti_end();

}  // namespace opscope::prof::detail
