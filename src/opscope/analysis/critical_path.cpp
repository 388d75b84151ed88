#include "opscope/analysis/critical_path.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace opscope::analysis {

const char* path_kind_name(PathKind k) {
  switch (k) {
    case PathKind::cpu: return "cpu";
    case PathKind::launch_delay: return "launch_delay";
    case PathKind::compute: return "compute";
    case PathKind::communication: return "communication";
    case PathKind::memory: return "memory";
    case PathKind::kernel_gap: return "kernel_gap";
    case PathKind::sync: return "sync";
    case PathKind::wait: return "wait";
  }
  return "wait";
}

std::string CriticalPath::bound() const {
  if (length_ns <= 0) return "";
  const int64_t gpu = of(PathKind::compute) + of(PathKind::memory);
  const std::pair<int64_t, const char*> parts[] = {
      {gpu, "gpu_compute_bound"},
      {of(PathKind::communication), "gpu_communication_bound"},
      {of(PathKind::cpu), "cpu_bound"},
      {of(PathKind::launch_delay), "launch_overhead"},
      {of(PathKind::kernel_gap), "kernel_overhead"},
      {of(PathKind::wait) + of(PathKind::sync), "waiting"}};
  return std::max_element(std::begin(parts), std::end(parts), [](auto& a, auto& b) { return a.first < b.first; })->second;
}

namespace {

PathKind of_work(KernelKind k) {
  return k == KernelKind::comm ? PathKind::communication : k == KernelKind::mem ? PathKind::memory : PathKind::compute;
}

class Walk {
 public:
  Walk(const RankView& v, int64_t threshold, int64_t start) : v_(v), threshold_(threshold), start_(start) {
    // Each work's predecessor on its stream, the work by end time, each track's syncs.
    prev_.assign(v.work.size(), -1);
    std::vector<int32_t> last(v.queues.size(), -1);
    for (size_t k = 0; k < v.work.size(); ++k) {
      prev_[k] = last[size_t(v.work[k].queue)];
      last[size_t(v.work[k].queue)] = int32_t(k);
    }
    by_end_.resize(v.work.size());
    std::iota(by_end_.begin(), by_end_.end(), 0);
    std::sort(by_end_.begin(), by_end_.end(), [&](int32_t a, int32_t b) { return v.work[size_t(a)].t1 < v.work[size_t(b)].t1; });
    for (size_t i = 0; i < v.syncs.size(); ++i) syncs_[v.syncs[i].track].push_back(int32_t(i));
  }

  std::vector<PathSegment> from_work(int32_t k) { return run(k, -1, 0); }
  std::vector<PathSegment> from_host(int32_t track, int64_t t) { return run(-1, track, t); }

 private:
  void add(PathKind kind, int64_t t0, int64_t t1, std::string label, int64_t event = -1) {
    t0 = std::max(t0, start_);
    if (t1 <= t0) return;
    path_.push_back({kind, t0, t1, std::move(label), event >= 0 ? uint32_t(event) : 0, event >= 0});
  }

  // The work that ended last in [a, b] (the one a sync in [a, b] waited for), or -1.
  int32_t ended_in(int64_t a, int64_t b) const {
    auto it = std::upper_bound(by_end_.begin(), by_end_.end(), b, [&](int64_t t, int32_t k) { return t < v_.work[size_t(k)].t1; });
    if (it == by_end_.begin()) return -1;
    int32_t k = *(it - 1);
    return v_.work[size_t(k)].t1 >= a ? k : -1;
  }

  // The latest sync on `track` that began before t, or -1.
  int64_t sync_before(int32_t track, int64_t t) const {
    auto it = syncs_.find(track);
    if (it == syncs_.end()) return -1;
    const std::vector<int32_t>& s = it->second;  // by start
    auto at = std::lower_bound(s.begin(), s.end(), t, [&](int32_t i, int64_t x) { return v_.syncs[size_t(i)].t0 < x; });
    return at == s.begin() ? -1 : *(at - 1);
  }

  std::vector<PathSegment> run(int32_t work, int32_t track, int64_t t) {
    // Each step moves strictly back in time; the bound only guards against a corrupt trace.
    int64_t bound = INT64_MAX;  // work on the path ends no later than what follows it
    for (size_t guard = 0; guard < 4 * (v_.work.size() + v_.syncs.size()) + 16; ++guard) {
      if (work >= 0) {
        const DeviceWork& w = v_.work[size_t(work)];
        add(of_work(w.kind), w.t0, std::min(w.t1, bound), v_.names[size_t(w.name)], w.event);
        bound = w.t0;
        if (w.t0 <= start_) break;
        const int32_t p = prev_[size_t(work)];
        const int64_t stream_ready = p >= 0 ? v_.work[size_t(p)].t1 : INT64_MIN;
        const LaunchCall* call = w.launch >= 0 ? &v_.launches[size_t(w.launch)] : nullptr;
        const int64_t host_ready = call ? std::min(call->t1, w.t0) : INT64_MIN;
        if (call && host_ready >= stream_ready) {
          add(PathKind::launch_delay, host_ready, w.t0, v_.queues[size_t(w.queue)].name, call->event);
          work = -1, track = call->track, t = host_ready;
          continue;
        }
        if (p < 0) {
          add(PathKind::wait, start_, w.t0, v_.queues[size_t(w.queue)].name);
          break;
        }
        const int64_t gap = w.t0 - stream_ready;
        int32_t next = p;
        PathKind kind = PathKind::kernel_gap;
        if (gap >= threshold_) {
          kind = PathKind::wait;
          int32_t other = ended_in(std::max(stream_ready, host_ready), w.t0);
          if (other >= 0 && other != work && v_.work[size_t(other)].queue != w.queue) next = other;
        }
        add(kind, v_.work[size_t(next)].t1, w.t0, v_.queues[size_t(w.queue)].name);
        work = next;
        continue;
      }
      if (t <= start_) break;
      const std::string& thread = v_.track_names[size_t(track)];
      int64_t s = sync_before(track, t);
      if (s < 0 || v_.syncs[size_t(s)].t1 <= start_) {
        add(PathKind::cpu, start_, t, thread);
        break;
      }
      const HostSpan& y = v_.syncs[size_t(s)];
      const int64_t y1 = std::min(y.t1, t);
      add(PathKind::cpu, y1, t, thread);
      int32_t k = ended_in(y.t0, y1);
      if (k < 0) {  // the sync waited on nothing in the window: host time
        add(PathKind::cpu, y.t0, y1, thread, y.event);
        t = y.t0;
        continue;
      }
      add(PathKind::sync, v_.work[size_t(k)].t1, y1, thread, y.event);
      work = k;
      bound = INT64_MAX;
    }
    std::reverse(path_.begin(), path_.end());
    return std::move(path_);
  }

  const RankView& v_;
  const int64_t threshold_, start_;
  std::vector<int32_t> prev_, by_end_;
  std::map<int32_t, std::vector<int32_t>> syncs_;  // per track, by start
  std::vector<PathSegment> path_;
};

// The median-length step (the earlier one of two in the middle).
int64_t median_step(const std::vector<Step>& steps) {
  std::vector<size_t> order(steps.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return steps[a].t1 - steps[a].t0 < steps[b].t1 - steps[b].t0;
  });
  return int64_t(order[(order.size() - 1) / 2]);
}

}  // namespace

CriticalPath critical_path(const RankView& v, int64_t threshold) {
  CriticalPath cp;
  cp.steps = int64_t(v.steps.size());
  if (!v.has_device()) return cp;
  int64_t start = v.t0(), host_end = INT64_MIN;
  int32_t track = -1;
  // The work the iteration issued: launched (or, without a launch, started) in its range.
  std::vector<int32_t> mine;
  if (!v.steps.empty()) {
    const Step& s = v.steps[size_t(median_step(v.steps))];
    cp.iteration = true;
    cp.step = s.name;
    start = s.t0, host_end = s.t1, track = s.track;
    for (size_t k = 0; k < v.work.size(); ++k) {
      const DeviceWork& w = v.work[k];
      int64_t issued = w.launch >= 0 ? v.launches[size_t(w.launch)].t0 : w.t0;
      if (issued >= s.t0 && issued < s.t1) mine.push_back(int32_t(k));
    }
  } else {
    for (size_t k = 0; k < v.work.size(); ++k) mine.push_back(int32_t(k));
    for (const HostSpan& h : v.host_ops) start = std::min(start, h.t0);
  }
  int32_t last = -1;
  for (int32_t k : mine)
    if (last < 0 || v.work[size_t(k)].t1 > v.work[size_t(last)].t1) last = k;
  Walk walk(v, threshold, start);
  if (last >= 0 && (track < 0 || v.work[size_t(last)].t1 >= host_end)) {
    cp.segments = walk.from_work(last);
    cp.t1 = v.work[size_t(last)].t1;
  } else if (track >= 0) {
    cp.segments = walk.from_host(track, host_end);
    cp.t1 = host_end;
  } else {
    return cp;
  }
  cp.t0 = start;
  cp.length_ns = cp.t1 - cp.t0;
  // Merge neighbours of one kind and label (a stretch of host time cut by nothing).
  std::vector<PathSegment> merged;
  for (PathSegment& s : cp.segments) {
    cp.ns[size_t(s.kind)] += s.t1 - s.t0;
    if (!merged.empty() && merged.back().kind == s.kind && merged.back().label == s.label && merged.back().t1 == s.t0 &&
        s.kind != PathKind::compute && s.kind != PathKind::communication && s.kind != PathKind::memory)
      merged.back().t1 = s.t1;
    else
      merged.push_back(std::move(s));
  }
  cp.segments = std::move(merged);
  return cp;
}

}  // namespace opscope::analysis
