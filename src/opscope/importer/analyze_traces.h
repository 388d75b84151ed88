// `opscope analyze PATH`: the trace analyses (analysis/analyze.h) of what PATH holds —
// a saved profile, one torch.profiler trace, or a folder of per-rank traces. A folder's
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

}  // namespace opscope::importer
