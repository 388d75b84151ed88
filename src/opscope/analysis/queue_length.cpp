#include "opscope/analysis/queue_length.h"

#include <algorithm>

namespace opscope::analysis {

int64_t QueueLengths::max_length() const {
  int64_t m = 0;
  for (const StreamQueue& s : streams) m = std::max(m, s.max_length);
  return m;
}

QueueLengths queue_lengths(const RankView& v) {
  struct Change {
    int64_t t;
    int32_t delta;
  };
  std::vector<std::vector<Change>> per(v.queues.size());
  for (const DeviceWork& w : v.work) {
    if (w.launch < 0) continue;
    per[size_t(w.queue)].push_back({v.launches[size_t(w.launch)].t0, +1});
    per[size_t(w.queue)].push_back({w.t0, -1});
  }
  QueueLengths out;
  for (size_t q = 0; q < per.size(); ++q) {
    std::vector<Change>& ch = per[q];
    if (ch.empty()) continue;
    // At one instant a start goes before a launch: the queue never counts both.
    std::sort(ch.begin(), ch.end(), [](const Change& a, const Change& b) { return a.t != b.t ? a.t < b.t : a.delta < b.delta; });
    StreamQueue s;
    s.queue = int32_t(q);
    s.launches = int64_t(ch.size() / 2);
    s.span_ns = ch.back().t - ch.front().t;
    int64_t len = 0;
    double area = 0;
    bool at_max = false;
    for (size_t i = 0; i < ch.size(); ++i) {
      if (i > 0) {
        const int64_t dt = ch[i].t - ch[i - 1].t;
        area += double(len) * double(dt);
        if (len >= kQueueFull) s.full_ns += dt;
      }
      len += ch[i].delta;
      if (len > s.max_length) s.max_length = len, s.max_t0 = ch[i].t, at_max = true;
      else if (at_max && len < s.max_length) s.max_t1 = ch[i].t, at_max = false;
    }
    if (at_max) s.max_t1 = ch.back().t;
    s.mean_length = s.span_ns > 0 ? area / double(s.span_ns) : 0;
    out.streams.push_back(s);
  }
  std::stable_sort(out.streams.begin(), out.streams.end(),
                   [](const StreamQueue& a, const StreamQueue& b) { return a.launches > b.launches; });
  return out;
}

}  // namespace opscope::analysis
