// The timeline's views: the lanes, a level-of-detail window of drawables (with flow
// arrows launch → kernel when few enough launches are visible), and the statistics of a
// selected time range.
#include <algorithm>
#include <map>
#include <sstream>

#include "opscope/explorer/api_views.h"

namespace opscope::explorer::api {

using nlohmann::json;
using prof::EventKind;

namespace {
constexpr int kMaxPx = 20000;
constexpr size_t kMaxFlowLaunches = 400;

std::pair<int64_t, int64_t> window_params(const Profile& p, const Params& params) {
  int64_t t0 = int_param(params, "t0", p.timeline().begin(), -kMaxTime, kMaxTime);
  int64_t t1 = int_param(params, "t1", p.timeline().end(), -kMaxTime, kMaxTime);
  if (t1 <= t0) throw ApiError(400, "t1 must be greater than t0");
  return {t0, t1};
}

std::vector<int> lane_params(const Profile& p, const Params& params) {
  const int n = int(p.timeline().lanes().size());
  std::vector<int> lanes;
  auto it = params.find("lanes");
  if (it == params.end()) {
    for (int i = 0; i < n; ++i) lanes.push_back(i);
    return lanes;
  }
  if (it->second.size() > 20000) throw ApiError(400, "parameter 'lanes' is too long");
  std::stringstream ss(it->second);
  std::string item;
  while (std::getline(ss, item, ',')) {
    Params one{{"lanes", item}};
    lanes.push_back(int(int_param(one, "lanes", -1, 0, n - 1)));
  }
  return lanes;
}
}  // namespace

json tracks_view(const Profile& p) {
  const auto& tl = p.timeline();
  json lanes = json::array();
  for (size_t i = 0; i < tl.lanes().size(); ++i) {
    const Lane& l = tl.lanes()[i];
    lanes.push_back({{"lane", i}, {"name", l.name}, {"group", l.group},
                     {"layer", layer_name(l.layer)}, {"track", l.track}, {"depth", l.depth},
                     {"events", l.events.size()}});
  }
  return {{"lanes", lanes}, {"names", tl.names()}, {"t0", tl.begin()}, {"t1", tl.end()}};
}

json timeline_view(const Profile& p, const Params& params) {
  const auto& tl = p.timeline();
  const auto& ev = p.trace().events;
  auto [t0, t1] = window_params(p, params);
  int px = int(int_param(params, "px", 1000, 1, kMaxPx));
  json lanes = json::array();
  std::vector<uint32_t> launches;  // drawn individually, for flows
  bool many_launches = false;
  for (int li : lane_params(p, params)) {
    auto items = tl.query(li, t0, t1, px);
    std::vector<int64_t> a, b;
    std::vector<uint32_t> e, name, n;
    a.reserve(items.size()), b.reserve(items.size()), e.reserve(items.size());
    for (const Drawable& d : items) {
      a.push_back(d.t0), b.push_back(d.t1), e.push_back(d.event);
      name.push_back(tl.name_id(d.event)), n.push_back(d.count);
      if (d.count == 1 && ev[d.event].kind == EventKind::launch) {
        if (launches.size() < kMaxFlowLaunches) launches.push_back(d.event);
        else many_launches = true;
      }
    }
    lanes.push_back({{"lane", li}, {"t0", a}, {"t1", b}, {"e", e}, {"name", name}, {"n", n}});
  }
  // Flow arrows: [launch event, kernel event, launch lane, launch end, kernel lane, kernel start].
  json flows = json::array();
  if (!many_launches) {
    for (uint32_t l : launches)
      for (uint32_t k : p.correlation().kernels_of_launch(ev[l].id))
        flows.push_back({l, k, tl.lane_of(l), ev[l].t1, tl.lane_of(k), ev[k].t0});
  }
  return {{"t0", t0}, {"t1", t1}, {"px", px}, {"lanes", lanes}, {"flows", flows},
          {"flows_omitted", many_launches}};
}

json range_view(const Profile& p, const Params& params) {
  const auto& tl = p.timeline();
  const auto& ev = p.trace().events;
  auto [t0, t1] = window_params(p, params);
  struct Agg { int64_t count = 0, ns = 0; Layer layer = Layer::framework; };
  std::vector<Agg> by_name(tl.names().size());
  int64_t busy[3] = {0, 0, 0}, count[3] = {0, 0, 0}, bytes = 0;
  for (size_t li = 0; li < tl.lanes().size(); ++li) {
    const Lane& lane = tl.lanes()[li];
    auto [first, last] = tl.window(int(li), t0, t1);
    for (size_t k = first; k < last; ++k) {
      int64_t clipped = std::min(lane.t1[k], t1) - std::max(lane.t0[k], t0);
      uint32_t e = lane.events[k];
      Agg& a = by_name[tl.name_id(e)];
      a.layer = lane.layer;
      ++a.count;
      a.ns += std::max<int64_t>(0, clipped);
      ++count[int(lane.layer)];
      // Busy time: top-level framework ops, all runtime and device events.
      if (lane.layer != Layer::framework || lane.depth == 0) busy[int(lane.layer)] += std::max<int64_t>(0, clipped);
      if (ev[e].kind == EventKind::kernel) bytes += ev[e].bytes;
    }
  }
  std::vector<std::pair<uint32_t, Agg>> top;
  for (uint32_t i = 0; i < by_name.size(); ++i)
    if (by_name[i].count) top.emplace_back(i, by_name[i]);
  std::sort(top.begin(), top.end(), [](auto& x, auto& y) { return x.second.ns > y.second.ns; });
  json names = json::array();
  for (size_t i = 0; i < top.size() && i < 30; ++i)
    names.push_back({{"name", tl.names()[top[i].first]}, {"layer", layer_name(top[i].second.layer)},
                     {"count", top[i].second.count}, {"time_ns", top[i].second.ns}});
  json layers = json::object();
  for (int l = 0; l < 3; ++l)
    layers[layer_name(Layer(l))] = {{"events", count[l]}, {"busy_ns", busy[l]}};
  return {{"t0", t0}, {"t1", t1}, {"duration_ns", t1 - t0}, {"layers", layers},
          {"kernel_bytes", bytes}, {"names", names}, {"distinct_names", top.size()}};
}

}  // namespace opscope::explorer::api
