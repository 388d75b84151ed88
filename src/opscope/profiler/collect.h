// Collection: drains every thread's ring after a window ended and turns the packed
// records into a Trace (trace.h) — names resolved, TSC ticks mapped to ns, events on
// their tracks (host threads, then device cores), sorted by time, drops counted.
#pragma once
#include "opscope/profiler/buffer.h"
#include "opscope/profiler/trace.h"

namespace opscope::prof::detail {

// Call after end_window(w).
Trace collect(const Window& w, const ProfilerConfig& config);

}  // namespace opscope::prof::detail
