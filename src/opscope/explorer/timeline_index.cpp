#include "opscope/explorer/timeline_index.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

namespace opscope::explorer {

using prof::EventKind;

Layer layer_of(EventKind kind) {
  switch (kind) {
    case EventKind::op:
    case EventKind::range: return Layer::framework;
    case EventKind::kernel: return Layer::device;
    default: return Layer::runtime;
  }
}

const char* layer_name(Layer layer) {
  switch (layer) {
    case Layer::framework: return "framework";
    case Layer::runtime: return "runtime";
    case Layer::device: return "device";
  }
  return "?";
}

namespace {

// Groups are ordered: every host thread's framework ops, then the runtime, then the cores.
struct GroupKey {
  int layer_rank;
  int32_t track;
  auto operator<=>(const GroupKey&) const = default;
};

std::string group_name(const prof::Trace& trace, Layer layer, int32_t track) {
  std::string name = track >= 0 && track < int32_t(trace.tracks.size())
                         ? trace.tracks[track].name
                         : "track " + std::to_string(track);
  if (layer == Layer::runtime) return "runtime · " + name;
  return name;
}

}  // namespace

TimelineIndex::TimelineIndex(const prof::Trace& trace) {
  const auto& ev = trace.events;
  const size_t n = ev.size();
  lane_of_.assign(n, -1);
  name_of_.resize(n);

  std::unordered_map<std::string_view, uint32_t> ids;
  ids.reserve(1024);
  for (size_t i = 0; i < n; ++i) {
    auto [it, fresh] = ids.try_emplace(ev[i].name, uint32_t(names_.size()));
    if (fresh) names_.push_back(ev[i].name);
    name_of_[i] = it->second;
  }

  // Enclosing events first: by t0, then longer first, so nesting gives depth. The trace
  // comes sorted by t0 (checked), so only runs of equal t0 need sorting.
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  auto enclosing_first = [&](uint32_t a, uint32_t b) {
    if (ev[a].t0 != ev[b].t0) return ev[a].t0 < ev[b].t0;
    if (ev[a].t1 != ev[b].t1) return ev[a].t1 > ev[b].t1;
    return a < b;
  };
  bool by_t0 = true;
  for (size_t i = 1; i < n && by_t0; ++i) by_t0 = ev[i - 1].t0 <= ev[i].t0;
  if (!by_t0) {
    std::sort(order.begin(), order.end(), enclosing_first);
  } else {
    for (size_t i = 0; i < n;) {
      size_t j = i + 1;
      while (j < n && ev[j].t0 == ev[i].t0) ++j;
      if (j - i > 1) std::sort(order.begin() + i, order.begin() + j, enclosing_first);
      i = j;
    }
  }

  struct Group {
    std::vector<int64_t> open_ends;   // stack of end times of the open events
    std::vector<uint32_t> lanes;      // lane index per depth (into tmp)
  };
  // Groups by (layer, track), in a flat table; tracks outside Trace::tracks (a damaged
  // profile) still get their own group.
  int32_t max_track = int32_t(trace.tracks.size()) - 1;
  for (const auto& e : ev) max_track = std::max(max_track, e.track);
  int32_t min_track = 0;
  for (const auto& e : ev) min_track = std::min(min_track, e.track);
  const size_t ntracks = size_t(max_track - min_track + 1);
  std::vector<Group> groups(3 * ntracks);
  struct TmpLane { GroupKey key; int32_t depth; std::vector<uint32_t> events; };
  std::vector<TmpLane> tmp;

  begin_ = n ? ev[order[0]].t0 : 0;
  end_ = begin_;
  for (uint32_t i : order) {
    const auto& e = ev[i];
    Layer layer = layer_of(e.kind);
    GroupKey key{int(layer), e.track};
    Group& g = groups[size_t(layer) * ntracks + size_t(e.track - min_track)];
    // Pop what ended before this starts; what remains open encloses (or overlaps) it.
    while (!g.open_ends.empty() && g.open_ends.back() <= e.t0) g.open_ends.pop_back();
    size_t depth = g.open_ends.size();
    g.open_ends.push_back(std::max(e.t1, e.t0));
    if (depth == g.lanes.size()) {
      g.lanes.push_back(uint32_t(tmp.size()));
      tmp.push_back({key, int32_t(depth), {}});
    }
    tmp[g.lanes[depth]].events.push_back(i);
    end_ = std::max(end_, e.t1);
  }

  // Final order: by group, then depth.
  std::vector<uint32_t> lane_order(tmp.size());
  std::iota(lane_order.begin(), lane_order.end(), 0u);
  std::sort(lane_order.begin(), lane_order.end(), [&](uint32_t a, uint32_t b) {
    if (tmp[a].key != tmp[b].key) return tmp[a].key < tmp[b].key;
    return tmp[a].depth < tmp[b].depth;
  });
  lanes_.reserve(tmp.size());
  for (uint32_t t : lane_order) {
    TmpLane& src = tmp[t];
    Lane lane;
    lane.layer = Layer(src.key.layer_rank);
    lane.track = src.key.track;
    lane.depth = src.depth;
    lane.group = group_name(trace, lane.layer, lane.track);
    lane.name = src.depth == 0 ? lane.group : lane.group + " · " + std::to_string(src.depth);
    lane.events = std::move(src.events);
    lane.t0.reserve(lane.events.size());
    lane.t1.reserve(lane.events.size());
    for (uint32_t i : lane.events) {
      lane.t0.push_back(ev[i].t0);
      lane.t1.push_back(std::max(ev[i].t0, ev[i].t1));
      lane_of_[i] = int32_t(lanes_.size());
    }
    lanes_.push_back(std::move(lane));
  }
}

std::pair<size_t, size_t> TimelineIndex::window(int lane_index, int64_t t0, int64_t t1) const {
  const Lane& lane = lanes_.at(lane_index);
  // t1 is non-decreasing within a lane, so both ends are binary searches.
  size_t first = std::lower_bound(lane.t1.begin(), lane.t1.end(), t0) - lane.t1.begin();
  size_t last = std::upper_bound(lane.t0.begin(), lane.t0.end(), t1) - lane.t0.begin();
  return {first, std::max(first, last)};
}

std::vector<Drawable> TimelineIndex::query(int lane_index, int64_t t0, int64_t t1, int px) const {
  const Lane& lane = lanes_.at(lane_index);
  auto [first, last] = window(lane_index, t0, t1);
  const double ns_per_px = std::max(1.0, double(t1 - t0) / std::max(1, px));
  std::vector<Drawable> out;
  Drawable run;
  bool open = false;
  int64_t longest = -1;
  auto flush = [&] {
    if (open) out.push_back(run);
    open = false;
  };
  for (size_t k = first; k < last; ++k) {
    const int64_t a = lane.t0[k], b = lane.t1[k];
    const uint32_t e = lane.events[k];
    if (double(b - a) >= ns_per_px) {
      flush();
      out.push_back({a, b, e, 1});
      continue;
    }
    // Shorter than a pixel: joins the open run if the gap to it is under a pixel.
    if (open && double(a - run.t1) < ns_per_px) {
      run.t1 = std::max(run.t1, b);
      ++run.count;
      if (b - a > longest) longest = b - a, run.event = e;
      continue;
    }
    flush();
    run = {a, b, e, 1};
    longest = b - a;
    open = true;
  }
  flush();
  return out;
}

}  // namespace opscope::explorer
