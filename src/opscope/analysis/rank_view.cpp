#include "opscope/analysis/rank_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

namespace opscope::analysis {

int64_t RankView::t0() const {
  int64_t t = INT64_MAX;
  for (const DeviceWork& w : work) t = std::min(t, w.t0);
  return work.empty() ? 0 : t;
}

int64_t RankView::t1() const {
  int64_t t = INT64_MIN;
  for (const DeviceWork& w : work) t = std::max(t, w.t1);
  return work.empty() ? 0 : t;
}

bool is_step_name(std::string_view name) { return name.rfind("ProfilerStep#", 0) == 0; }

std::vector<int64_t> trace_ranks(const Trace& trace) {
  std::vector<int64_t> ranks;
  for (const Track& t : trace.tracks)
    if (t.rank >= 0 && std::find(ranks.begin(), ranks.end(), t.rank) == ranks.end()) ranks.push_back(t.rank);
  std::sort(ranks.begin(), ranks.end());
  if (ranks.empty()) ranks.push_back(-1);
  return ranks;
}

RankView rank_view(const Trace& trace, int64_t rank) {
  RankView v;
  v.rank = rank;
  const size_t nt = trace.tracks.size();
  std::vector<uint8_t> mine(nt, 0);
  for (size_t i = 0; i < nt; ++i) {
    mine[i] = rank < 0 || trace.tracks[i].rank == rank;
    v.track_names.push_back(trace.tracks[i].name);
  }
  auto in_rank = [&](const TraceEvent& e) { return e.track >= 0 && size_t(e.track) < nt && mine[size_t(e.track)]; };
  auto on_host = [&](const TraceEvent& e) { return trace.tracks[size_t(e.track)].kind == Track::Kind::host_thread; };

  std::unordered_map<uint64_t, int32_t> work_of, launch_of;
  std::unordered_map<std::string_view, int32_t> name_of;
  std::vector<int32_t> launch_stream;   // per launch: the stream it was queued on
  std::vector<int32_t> launch_device;
  std::vector<int32_t> work_track;      // per work: its first event's track
  std::vector<int32_t> work_stream;     // per work: its events' GPU stream (-1: none)
  std::vector<int32_t> work_device;
  std::vector<uint64_t> work_id;
  const auto& ev = trace.events;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    const TraceEvent& e = ev[i];
    if (!in_rank(e)) continue;
    switch (e.kind) {
      case EventKind::kernel: {
        auto [it, fresh] = e.id ? work_of.try_emplace(e.id, int32_t(v.work.size()))
                                : std::pair{work_of.end(), true};
        if (!fresh) {
          DeviceWork& w = v.work[size_t(it->second)];
          w.t0 = std::min(w.t0, e.t0);
          w.t1 = std::max(w.t1, e.t1);
          break;
        }
        auto [n, new_name] = name_of.try_emplace(e.name, int32_t(v.names.size()));
        if (new_name) v.names.push_back(e.name);
        DeviceWork w;
        w.t0 = e.t0;
        w.t1 = e.t1;
        w.name = n->second;
        w.kind = kernel_kind(e.name);
        w.event = i;
        v.work.push_back(w);
        work_track.push_back(e.track);
        work_stream.push_back(e.stream);
        work_device.push_back(e.device >= 0 ? e.device : trace.tracks[size_t(e.track)].device);
        work_id.push_back(e.id);
        v.gpu = v.gpu || e.stream >= 0;
        break;
      }
      case EventKind::launch:
        if (e.id && launch_of.try_emplace(e.id, int32_t(v.launches.size())).second) {
          v.launches.push_back({e.t0, e.t1, e.track, i});
          launch_stream.push_back(e.stream);
          launch_device.push_back(e.device);
        }
        break;
      case EventKind::sync:
        if (on_host(e)) v.syncs.push_back({e.t0, e.t1, e.track, i});
        break;
      case EventKind::op:
        if (on_host(e)) v.host_ops.push_back({e.t0, e.t1, e.track, i});
        break;
      case EventKind::range:
        if (is_step_name(e.name) && on_host(e)) v.steps.push_back({e.name, e.t0, e.t1, e.track, i});
        break;
      default: break;
    }
  }

  // Each work's launch and queue: its GPU stream's track, else (the CPU device) the
  // stream its launch was queued on.
  std::map<std::pair<int32_t, int32_t>, int32_t> queue_of;
  auto queue = [&](int32_t device, int32_t stream, const std::string& name) {
    auto [it, fresh] = queue_of.try_emplace({device, stream}, int32_t(v.queues.size()));
    if (fresh) v.queues.push_back({name, device, stream});
    return it->second;
  };
  for (size_t k = 0; k < v.work.size(); ++k) {
    DeviceWork& w = v.work[k];
    if (auto it = launch_of.find(work_id[k]); work_id[k] && it != launch_of.end()) w.launch = it->second;
    if (work_stream[k] >= 0) {
      w.queue = queue(work_device[k], work_stream[k], trace.tracks[size_t(work_track[k])].name);
    } else if (w.launch >= 0 && launch_stream[size_t(w.launch)] >= 0) {
      int32_t d = launch_device[size_t(w.launch)] >= 0 ? launch_device[size_t(w.launch)] : work_device[k];
      std::string dev;
      for (const DeviceInfo& di : trace.devices)
        if (di.index == d) dev = di.name;
      if (dev.empty()) dev = fmt::format("device {}", d);
      w.queue = queue(d, launch_stream[size_t(w.launch)], fmt::format("{} stream {}", dev, launch_stream[size_t(w.launch)]));
    } else {
      w.queue = queue(work_device[k], -1 - work_track[k], trace.tracks[size_t(work_track[k])].name);
    }
  }
  auto by_t0 = [](const auto& a, const auto& b) { return a.t0 < b.t0; };
  std::stable_sort(v.work.begin(), v.work.end(), by_t0);
  std::stable_sort(v.syncs.begin(), v.syncs.end(), by_t0);
  std::stable_sort(v.host_ops.begin(), v.host_ops.end(), by_t0);
  std::stable_sort(v.steps.begin(), v.steps.end(), by_t0);
  return v;
}

std::vector<RankView> step_views(const RankView& v) {
  std::vector<RankView> out(v.steps.size());
  if (v.steps.empty()) return out;
  auto step_at = [&](int64_t t) -> int64_t {
    // The last step starting at or before t, if t lies inside it.
    auto it = std::upper_bound(v.steps.begin(), v.steps.end(), t, [](int64_t x, const Step& s) { return x < s.t0; });
    if (it == v.steps.begin()) return -1;
    --it;
    return t < it->t1 ? int64_t(it - v.steps.begin()) : -1;
  };
  for (size_t s = 0; s < v.steps.size(); ++s) {
    RankView& o = out[s];
    o.rank = v.rank;
    o.names = v.names;
    o.queues = v.queues;
    o.track_names = v.track_names;
    o.gpu = v.gpu;
    o.steps = {v.steps[s]};
  }
  std::vector<std::unordered_map<int32_t, int32_t>> launches(v.steps.size());
  for (const DeviceWork& w : v.work) {
    int64_t issued = w.launch >= 0 ? v.launches[size_t(w.launch)].t0 : w.t0;
    int64_t s = step_at(issued);
    if (s < 0) continue;
    RankView& o = out[size_t(s)];
    DeviceWork x = w;
    if (w.launch >= 0) {
      auto [it, fresh] = launches[size_t(s)].try_emplace(w.launch, int32_t(o.launches.size()));
      if (fresh) o.launches.push_back(v.launches[size_t(w.launch)]);
      x.launch = it->second;
    }
    o.work.push_back(x);
  }
  for (const HostSpan& h : v.syncs)
    if (int64_t s = step_at(h.t0); s >= 0) out[size_t(s)].syncs.push_back(h);
  for (const HostSpan& h : v.host_ops)
    if (int64_t s = step_at(h.t0); s >= 0) out[size_t(s)].host_ops.push_back(h);
  return out;
}

}  // namespace opscope::analysis
