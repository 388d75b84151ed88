// The environment-driven profile: a program linked with opscope and started with
// OPSCOPE_PROFILE=1 is profiled from library load to exit, with the settings of
// ProfilerConfig::from_env(). At exit the trace goes to the default exporter (the
// exporters register one, writing trace.json and the store into OPSCOPE_PROFILE_DIR);
// with none registered nothing is written.
#pragma once
#include <functional>
#include <string>

#include "opscope/profiler/trace.h"

namespace opscope::prof {

using DefaultExporter = std::function<void(const Trace& trace, const std::string& dir)>;
void set_default_exporter(DefaultExporter exporter);
// True while the OPSCOPE_PROFILE=1 session runs.
bool auto_profile_running();

}  // namespace opscope::prof
