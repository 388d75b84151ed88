#include "opscope/analysis/host_time.h"

#include <algorithm>
#include <map>

#include "opscope/analysis/intervals.h"

namespace opscope::analysis {

HostTime host_time(const RankView& v) {
  HostTime h;
  for (const LaunchCall& c : v.launches) h.launch_calls++, h.launch_call_ns += c.t1 - c.t0;
  if (v.host_ops.empty()) return h;
  std::map<int32_t, std::vector<Interval>> per;
  h.t0 = INT64_MAX, h.t1 = INT64_MIN;
  for (const HostSpan& o : v.host_ops) {
    per[o.track].push_back({o.t0, o.t1});
    h.t0 = std::min(h.t0, o.t0);
    h.t1 = std::max(h.t1, o.t1);
  }
  h.span_ns = h.t1 - h.t0;
  for (auto& [track, iv] : per) {
    ThreadTime t{track, v.track_names[size_t(track)], 0, int64_t(iv.size())};
    t.busy_ns = total_length(merge_intervals(std::move(iv)));
    h.threads.push_back(std::move(t));
  }
  std::stable_sort(h.threads.begin(), h.threads.end(),
                   [](const ThreadTime& a, const ThreadTime& b) { return a.busy_ns > b.busy_ns; });
  h.busy_ns = h.threads.front().busy_ns;
  h.idle_ns = h.span_ns - h.busy_ns;
  return h;
}

}  // namespace opscope::analysis
