// What a communication kernel is, in one place. A collective's device event (a launch of
// opscope's process-group engine, or an imported NCCL kernel) carries its description in
// the event's `shapes`, and its message size in `bytes` (nccl-tests' "size"):
//   "collective all_reduce, in 1024 elements, out 1024 elements, f32, group of 2, pg 0, seq 17"
// Bandwidths as nccl-tests defines them (doc/PERFORMANCE.md there): the algorithm
// bandwidth is size / time; the bus bandwidth multiplies it by a factor of the collective
// and the group size n that makes it comparable with the links' peak whatever n is.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "opscope/profiler/trace.h"

namespace opscope::prof {

constexpr std::string_view kCollectivePrefix = "collective ";

inline bool is_collective(const TraceEvent& e) { return e.shapes.rfind(kCollectivePrefix, 0) == 0; }

struct CollectiveInfo {
  std::string kind;        // "all_reduce", or the trace's own name ("allreduce", "_allgather_base")
  int64_t group_size = 0;  // 0: the description does not say
  int64_t seq = -1;        // the collective's number in its group (-1: not given)
  std::string group;       // the process group's name ("" when not given)
};

// The description's fields; nullopt when `shapes` describes no collective.
std::optional<CollectiveInfo> parse_collective(std::string_view shapes);

// nccl-tests' bus-bandwidth factor: all_reduce 2(n-1)/n; all_gather, reduce_scatter,
// all_to_all, gather, scatter (n-1)/n; broadcast, reduce, send, recv 1. Also for torch's
// and NCCL's spellings ("allreduce", "_allgather_base", "alltoall_base", "AllReduce").
// 0 for a kind it does not know or n < 1.
double bus_factor(std::string_view kind, int64_t n);

// GB/s (1e9 bytes per second) of `bytes` in `ns`; 0 when ns <= 0.
inline double algbw_gbps(int64_t bytes, int64_t ns) { return ns > 0 ? double(bytes) / double(ns) : 0.0; }

}  // namespace opscope::prof
