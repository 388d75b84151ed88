// `opscope analyze PATH`: the trace analyses (analysis/analyze.h) of what PATH holds —
// a saved profile, a job's DIR/rank-N profiles (job.h), one torch.profiler trace, or a
// folder of per-rank traces. A folder's
// ranks are imported and analysed one file at a time, each dropped before the next is
// read, so memory follows the largest rank, not their sum (HTA holds every rank at
// once: ~950 GB of RAM for 200 GB of traces, HTA#250).
#pragma once
#include <string>

#include "opscope/analysis/analyze.h"

namespace opscope::importer {

// Errors: the importer's and load_profile's ("[import] <file>: ..."), two files of one
// rank, "[--rank] ..." for a rank no file holds.
analysis::TraceAnalysis analyze_path(const std::string& path, const analysis::AnalyzeOptions& options = {});

// For a program that streams ranks (opscope analyze): glibc raises its mmap threshold
// each time a large block is freed, so the next rank's buffers come from the heap and
// its peak stacks on the last rank's leftovers; a fixed 1 MiB threshold hands every
// large buffer back to the OS when freed. Process-wide, so the program's choice.
void return_large_blocks_when_freed();

}  // namespace opscope::importer
