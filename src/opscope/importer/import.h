// Importing torch.profiler traces (Kineto's trace.json, `*.pt.trace.json.gz`, or the
// legacy bare array) as opscope profiles: one file, or several ranks of one run merged
// into one profile with each rank's threads and GPUs under "rank R", on one timeline
// (the hosts' Unix-epoch clocks; no skew between hosts is corrected).
//
// The profile's config records where it came from:
//   "imported_from": {"files": [...], "format": "kineto-2024" | "kineto-2022" |
//                     "kineto-2021" | "legacy-array", "launch_rule": ..., "ranks": [...],
//                     "warnings": [...]}
// and, for a GPU in gpu_peaks.h's table (or peaks given), "device_peaks".
#pragma once
#include <string>
#include <vector>

#include "opscope/profiler/trace.h"

namespace opscope::importer {

struct ImportOptions {
  // Roofline peaks instead of the datasheet table's (0: from the table, by GPU name).
  double peak_gbps = 0, peak_gflops = 0;
};

struct ImportResult {
  prof::Trace trace;
  std::string format;                 // of the first file ("kineto-2024", ...)
  std::vector<std::string> warnings;  // "<file>: 3 events with no ts skipped (first: event 17)"
  // Flows whose partner lies outside the window (Kineto's normal edge), over all files;
  // the last warning says so in one line when there are any (unmatched_flows_note).
  int64_t flows_without_start = 0, flows_without_finish = 0, files_with_unmatched_flows = 0, files = 0;
};

// "12 flow ends (ph f) whose start lies before the window and 3 flow starts (ph s) whose
// end lies after it, in 2 of 8 files: Kineto's normal edge (ignored)"; "" for none.
std::string unmatched_flows_note(int64_t without_start, int64_t without_finish, int64_t in_files, int64_t of_files);

// The trace files `paths` name: files as given, folders as every *.json / *.json.gz in
// them, sorted. Errors "[import] ..." for an unlistable folder, or one without traces.
std::vector<std::string> trace_files(const std::vector<std::string>& paths);

// `paths`: trace files, or folders of per-rank trace files (every *.json / *.json.gz
// in it, sorted). More than one file: one rank each (distributedInfo's rank, else the
// files' order). Errors "[import] <file>: ..." (trace_file.h, kineto_reader.h); two
// files with one rank; no trace file in a folder.
ImportResult import_traces(const std::vector<std::string>& paths, const ImportOptions& options = {});

// Replaces the roofline's peaks in the profile's config ("device_peaks", roofline.h):
// memory bandwidth (GB/s) and compute (GFLOP/s), each only when > 0, keeping the other.
void override_peaks(prof::Trace& trace, double gbps, double gflops);

// Whether `path` is a trace to import (a .json / .json.gz file, or a folder of them with
// no profile.db) rather than a saved opscope profile.
bool is_trace_path(const std::string& path);

// What `opscope table|explore|diff|advise` open: a saved profile (folder or profile.db,
// prof::load_profile), a distributed job's folder of rank-N profiles (job.h), or a trace /
// folder of traces, imported in memory. Import warnings
// go to `warnings` when given.
prof::Trace load_profile_or_trace(const std::string& path, std::vector<std::string>* warnings = nullptr);

}  // namespace opscope::importer
