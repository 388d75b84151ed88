// Collection of the instructions layer: the sampler's raw samples become Trace::samples.
// A sample is kept when it fell inside a kernel event of its own core (the launch it
// belongs to); the rest (a core polling for work, asleep, or running the scheduler) are
// counted as outside kernels. Each kept instruction pointer is resolved while its
// module is still loaded: module (path, build id), the module's own address, function
// and source line (debuginfo/elf_module.h).
#pragma once
#include "opscope/profiler/sampler.h"
#include "opscope/profiler/trace.h"

namespace opscope::prof::detail {

// `base_ns` is the trace's t = 0 (CLOCK_MONOTONIC). Fills samples, code_modules,
// code_sites and sampling_json; does nothing when the report did not start.
void attach_samples(Trace& trace, SamplerReport&& report, int64_t base_ns);

}  // namespace opscope::prof::detail
