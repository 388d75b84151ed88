// One read trace (RawTrace) into opscope's Trace: devices from deviceProperties, a host
// track per (pid, tid) and a device track per (GPU, stream), and every event as the
// opscope event a torch.profiler user would expect (schema.h's table), linked by the
// rules of links.h. Several files (ranks) append into one Trace.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "opscope/importer/kineto_reader.h"
#include "opscope/profiler/trace.h"

namespace opscope::importer {

// The Unix-epoch ns of the file's earliest event (INT64_MAX when it has none): 2024+
// files count ts from baseTimeNanoseconds, older ones from the epoch (and so do files
// with a base whose ts are epoch-sized).
int64_t first_time_ns(const RawTrace& t);

// What one file held, for the profile's config and the warnings.
struct FileReport {
  std::string file;
  std::string format;       // "kineto-2024", "kineto-2022", "kineto-2021", "legacy-array"
  std::string launch_rule;  // schema.h's launch_rule_name
  int64_t rank = -1, world_size = 0;
  std::string backend;
  std::string gpu_name;     // the first GPU's name from deviceProperties ("" if none)
  int64_t gpu_memory = 0, gpu_sms = 0;  // its totalGlobalMem and numSms (0 if not given)
  int64_t ops = 0, launches = 0, gpu_events = 0, gpu_events_without_launch = 0, memory_events = 0;
  // Flows whose partner lies outside the window: Kineto's normal edge (a launch before
  // the window whose kernel ran inside it, a kernel that ran after it). Counted, not
  // warned about per file: import_traces sums them into one line.
  int64_t flows_without_start = 0, flows_without_finish = 0;
  std::vector<std::string> warnings;
};

struct AppendContext {
  uint64_t next_op_id = 1, next_launch_id = 1;
  std::string prefix;  // for tracks and devices of one rank among several: "rank 1 "
};

// Appends `t`'s events to `out` (times relative to out.base_time_ns, a Unix-epoch ns
// instant no later than first_time_ns(t)). Events are not sorted here.
FileReport append_trace(const RawTrace& t, prof::Trace& out, AppendContext& ctx, int64_t rank);

}  // namespace opscope::importer
