// A distributed job's profiles opened as one: a folder whose rank-N subfolders each hold
// the saved opscope profile of rank N (what opscope.profiler writes under torch.distributed:
// DIR/rank-0, DIR/rank-1, ...). The ranks merge into one Trace as the Kineto importer
// merges per-rank traces (import.h): each rank's threads, devices and device tracks under
// "rank R", Track::rank set, ids kept apart, on one timeline.
//
// Clocks: each profile's t = 0 is its process's CLOCK_MONOTONIC base_time_ns. Ranks on one
// machine (one boot: the same /proc boot_id) share that clock and are placed by it alone;
// a rank on another machine is moved by the offset to rank 0's clock that the opscope
// backend measured when the group was made (the config's distributed.clock.offset_ns).
// The merged config carries "job": the ranks, their folders and the offsets applied.
#pragma once
#include <string>
#include <vector>

#include "opscope/profiler/trace.h"

namespace opscope::importer {

// A folder with no profile of its own whose rank-N subfolders hold saved profiles.
bool is_job_dir(const std::string& path);

// Errors "[job] <dir>: ..." (a rank's profile that cannot be read, two folders of one rank,
// no rank folder). Ranks the job's world_size names but whose folder is missing, ranks
// placed without a measured offset, and profiles of other jobs go to `warnings`.
prof::Trace load_job(const std::string& dir, std::vector<std::string>* warnings = nullptr);

}  // namespace opscope::importer
