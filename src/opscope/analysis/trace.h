// What analyses read: a finished Trace (profiler/trace.h), whether the profiler collected
// it, load_profile read it back, or the importer made it from a Kineto trace. The
// analyses never record; they take the trace's types by these names.
#pragma once
#include "opscope/profiler/trace.h"

namespace opscope::analysis {

using prof::DeviceInfo;
using prof::EventKind;
using prof::kSchemaVersion;
using prof::kind_name;
using prof::Trace;
using prof::TraceEvent;
using prof::Track;

}  // namespace opscope::analysis
