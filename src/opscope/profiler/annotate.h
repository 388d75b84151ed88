// Facts a collected Trace carries from other parts of opscope, without the profiler
// depending on them: a part registers an annotator (the compiler adds each compiled
// kernel's artifact to the config JSON), and every trace a session collects passes
// through the annotators before anyone sees it (trace(), on_trace_ready, exporters).
#pragma once
#include <functional>
#include <string>

#include "opscope/profiler/trace.h"

namespace opscope::prof {

using TraceAnnotator = std::function<void(Trace& trace)>;

// Registers `fn` under `key`; registering a key again replaces its annotator.
void set_trace_annotator(const std::string& key, TraceAnnotator fn);
// Runs the annotators on `trace`, in registration order. An annotator that throws is
// reported on stderr once per key; the trace is kept as the others left it.
void annotate_trace(Trace& trace);

}  // namespace opscope::prof
