// Across-rank figures of a profile imported from several ranks' traces (import.h): the
// key_averages of each rank side by side, the slowest rank per op, kernel and range, and
// collectives (record_param_comms and NCCL/RCCL kernels) marked with what they moved.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "opscope/profiler/trace.h"

namespace opscope::importer {

struct RankRow {
  std::string name;
  prof::EventKind kind = prof::EventKind::op;
  std::string collective;            // "allreduce, in 1048576 elements, ..." ("" if none)
  std::vector<int64_t> count;        // per rank (ranks() order)
  std::vector<int64_t> time_ns;      // per rank: Self Device time, else (no device time) Self CPU
  bool device = false;               // time_ns is device time
  int64_t slowest_rank = -1;
  int64_t max_ns = 0, min_ns = 0;
};

struct RankTable {
  std::vector<int64_t> ranks;
  std::vector<RankRow> rows;  // rows with device time first, each group by max_ns, largest first
  std::string text(int64_t row_limit = 50) const;
};

// The rank of each track (Track::rank); empty when no track has one (not a multi-rank
// import).
std::vector<int64_t> track_ranks(const prof::Trace& trace);

// Throws "[table] ..." when the profile holds no ranks (not imported from several files).
RankTable rank_table(const prof::Trace& trace);

}  // namespace opscope::importer
