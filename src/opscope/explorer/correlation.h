// The links between the three layers of one Trace: framework op → its launches (by the
// op's correlation id) → their kernel slices on the cores (by the launch id), both ways.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "opscope/profiler/trace.h"

namespace opscope::explorer {

// The events one event is linked to, each list in time order.
struct Chain {
  std::vector<uint32_t> ops;       // enclosing ops, outermost first, then the event itself if an op
  std::vector<uint32_t> launches;  // the launches of the op and of the ops nested in it
  std::vector<uint32_t> kernels;   // the kernel slices of those launches
  bool truncated = false;          // more than the limit were linked
};

class CorrelationIndex {
 public:
  explicit CorrelationIndex(const prof::Trace& trace);

  Chain chain(uint32_t event, size_t limit = 5000) const;

  // The op (op or range event) with correlation id `id`, or -1 (the first, if several).
  int64_t op_by_id(uint64_t id) const;
  // Events linked to an id, in event order.
  std::span<const uint32_t> launches_of_op(uint64_t op_id) const;
  std::span<const uint32_t> kernels_of_launch(uint64_t launch_id) const;
  std::span<const uint32_t> child_ops(uint64_t op_id) const;
  int64_t launch_by_id(uint64_t id) const;

  // A launch's device time: the span of its kernel slices over the cores (0 if none), as
  // key_averages counts it.
  int64_t launch_device_ns(uint32_t launch) const;

 private:
  // Events keyed by an id, sorted by (key, event): a lookup is a binary search. Built in
  // one pass over the events plus a sort that is nearly always skipped (ids grow with
  // time): a quarter faster to build than hash maps of vectors for 1M events, with two
  // allocations per list instead of one per id.
  struct Links {
    std::vector<uint64_t> keys;
    std::vector<uint32_t> events;
    void add(uint64_t key, uint32_t event) { keys.push_back(key), events.push_back(event); }
    void sort();
    std::span<const uint32_t> find(uint64_t key) const;
  };
  const prof::Trace& trace_;
  Links op_, launch_, children_, launches_of_, kernels_of_;
};

}  // namespace opscope::explorer
