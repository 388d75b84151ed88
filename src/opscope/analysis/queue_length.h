// Queue length per stream (HTA's get_queue_length_summary): how far ahead of the device
// the host ran. A stream's queue length is the work launched on it that has not
// started: +1 when the launch call begins, −1 when the work starts (work whose launch is
// outside the window is left out). A queue that stays near 0 means the device runs
// what the host just issued (host- or launch-bound); a long one means the host is well
// ahead. Each stream's summary: the longest the queue got, its time-weighted mean over
// the stream's span (first launch to last start), and the time it spent at CUDA's
// pending-launch limit (1024), where a launch call blocks until a slot frees.
#pragma once
#include <cstdint>
#include <vector>

#include "opscope/analysis/rank_view.h"

namespace opscope::analysis {

constexpr int64_t kQueueFull = 1024;

struct StreamQueue {
  int32_t queue = 0;  // RankView::queues
  int64_t launches = 0;
  int64_t max_length = 0;
  double mean_length = 0;
  int64_t span_ns = 0;     // first launch call to the last work start
  int64_t full_ns = 0;     // time at kQueueFull or more
  int64_t max_t0 = 0, max_t1 = 0;  // the first stretch at max_length
};

struct QueueLengths {
  std::vector<StreamQueue> streams;  // by launches, most first
  int64_t max_length() const;
};

QueueLengths queue_lengths(const RankView& view);

}  // namespace opscope::analysis
