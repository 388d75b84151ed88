#include "opscope/analysis/idle_time.h"

#include <algorithm>

namespace opscope::analysis {

const char* idle_kind_name(IdleKind k) {
  switch (k) {
    case IdleKind::host_wait: return "host_wait";
    case IdleKind::kernel_wait: return "kernel_wait";
    case IdleKind::other: return "other";
  }
  return "other";
}

namespace {

IdleKind classify(const RankView& v, const DeviceWork& next, int64_t gap_t0, int64_t gap_ns, int64_t threshold) {
  if (next.launch < 0) return IdleKind::other;
  if (v.launches[size_t(next.launch)].t1 > gap_t0) return IdleKind::host_wait;
  return gap_ns < threshold ? IdleKind::kernel_wait : IdleKind::other;
}

void add(IdleSplit& s, IdleKind k, int64_t t0, int64_t t1) {
  size_t i = size_t(k);
  s.ns[i] += t1 - t0;
  s.gaps[i]++;
  if (t1 - t0 > s.longest_t1[i] - s.longest_t0[i]) s.longest_t0[i] = t0, s.longest_t1[i] = t1;
}

}  // namespace

IdleBreakdown idle_time_breakdown(const RankView& v, int64_t threshold) {
  IdleBreakdown out;
  out.kernel_wait_threshold_ns = threshold;
  if (v.work.empty()) return out;
  // The device: gaps in the union, walking the work by start.
  int64_t end = v.work.front().t1;
  for (size_t i = 1; i < v.work.size(); ++i) {
    const DeviceWork& w = v.work[i];
    if (w.t0 > end) add(out.device, classify(v, w, end, w.t0 - end, threshold), end, w.t0);
    end = std::max(end, w.t1);
  }
  // Each stream: the gaps between its own work (in start order, as the stream ran it).
  std::vector<int64_t> stream_end(v.queues.size(), INT64_MIN);
  std::vector<int32_t> slot(v.queues.size(), -1);
  for (const DeviceWork& w : v.work) {
    size_t q = size_t(w.queue);
    if (slot[q] < 0) {
      slot[q] = int32_t(out.streams.size());
      out.streams.push_back({w.queue, {}});
    } else if (w.t0 > stream_end[q]) {
      add(out.streams[size_t(slot[q])].split, classify(v, w, stream_end[q], w.t0 - stream_end[q], threshold),
          stream_end[q], w.t0);
    }
    stream_end[q] = std::max(stream_end[q], w.t1);
  }
  return out;
}

}  // namespace opscope::analysis
