// The profiles list, the operator table (key_averages rows) and the compare view.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "opscope/explorer/api_views.h"
#include "opscope/explorer/summary.h"

namespace opscope::explorer::api {

using nlohmann::json;
using prof::EventKind;

json profile_entry(size_t id, const Profile& p) {
  json j = {{"id", id}, {"label", p.label()}, {"source", p.source()}, {"ok", p.ok()}};
  if (!p.ok()) {
    j["error"] = p.error();
    return j;
  }
  const auto& t = p.trace();
  j["schema_version"] = t.schema_version;
  j["wall_time_ns"] = t.wall_time_ns;
  json devices = json::array();
  for (const auto& d : t.devices)
    devices.push_back({{"index", d.index}, {"name", d.name}, {"description", d.description},
                       {"num_cores", d.num_cores}});
  j["devices"] = devices;
  j["device"] = t.devices.empty() ? json() : devices[0];
  json config = json::parse(t.config_json, nullptr, /*allow_exceptions=*/false);
  j["config"] = config.is_discarded() ? json(t.config_json) : config;
  std::map<std::string, int64_t> counts;
  for (const auto& e : t.events) ++counts[prof::kind_name(e.kind)];
  j["totals"] = counts;
  j["events"] = t.events.size();
  j["span_ns"] = p.timeline().end() - p.timeline().begin();
  j["peak_gbps"] = stated_peak_gbps(t);
  j["dropped"] = t.dropped;
  json per_track = json::array();
  for (size_t i = 0; i < t.dropped_per_track.size(); ++i)
    if (t.dropped_per_track[i] > 0)
      per_track.push_back({{"track", i < t.tracks.size() ? t.tracks[i].name : std::to_string(i)},
                           {"dropped", t.dropped_per_track[i]}});
  j["dropped_per_track"] = per_track;
  return j;
}

json profiles_view(const std::vector<ProfilePtr>& profiles) {
  json list = json::array();
  for (size_t i = 0; i < profiles.size(); ++i) list.push_back(profile_entry(i, *profiles[i]));
  return {{"profiles", list}};
}

namespace {
double pct(int64_t a, int64_t total) { return total > 0 ? 100.0 * double(a) / double(total) : 0.0; }
}  // namespace

json ops_view(const Profile& p, const Params& params) {
  const bool by_shape = int_param(params, "group_by_shape", 0, 0, 1) == 1;
  std::optional<prof::KeyAverages> grouped;
  if (by_shape) grouped = prof::key_averages(p.trace(), true);
  const prof::KeyAverages& ka = by_shape ? *grouped : p.key_averages();
  const int64_t cpu = ka.self_cpu_time_total_ns(), dev = ka.self_device_time_total_ns();
  json rows = json::array();
  for (const auto& r : ka.sorted("self_device_time_total")) {
    rows.push_back({{"name", r.name}, {"kind", prof::kind_name(r.kind)},
                    {"input_shapes", r.input_shapes}, {"calls", r.count},
                    {"self_cpu_ns", r.self_cpu_ns}, {"self_cpu_pct", pct(r.self_cpu_ns, cpu)},
                    {"cpu_total_ns", r.cpu_total_ns}, {"cpu_total_pct", pct(r.cpu_total_ns, cpu)},
                    {"cpu_avg_ns", r.cpu_avg_ns()},
                    {"self_device_ns", r.self_device_ns}, {"self_device_pct", pct(r.self_device_ns, dev)},
                    {"device_total_ns", r.device_total_ns}, {"device_total_pct", pct(r.device_total_ns, dev)},
                    {"device_avg_ns", r.device_avg_ns()}});
  }
  return {{"rows", rows}, {"self_cpu_total_ns", cpu}, {"self_device_total_ns", dev},
          {"dropped", ka.dropped()}, {"group_by_shape", by_shape}};
}

json compare_view(size_t a_id, const Profile& a, size_t b_id, const Profile& b) {
  // Rows matched by kind and name: an op of the naive run against the same op compiled.
  using Key = std::pair<std::string, std::string>;
  struct Pair { const prof::KeyAverage* a = nullptr; const prof::KeyAverage* b = nullptr; };
  std::map<Key, Pair> by_key;
  for (const auto& r : a.key_averages().rows()) by_key[{prof::kind_name(r.kind), r.name}].a = &r;
  for (const auto& r : b.key_averages().rows()) by_key[{prof::kind_name(r.kind), r.name}].b = &r;
  static const prof::KeyAverage kZero;
  json rows = json::array();
  for (auto& [key, pr] : by_key) {
    const prof::KeyAverage& x = pr.a ? *pr.a : kZero;
    const prof::KeyAverage& y = pr.b ? *pr.b : kZero;
    rows.push_back({{"name", key.second}, {"kind", key.first},
                    {"in_a", pr.a != nullptr}, {"in_b", pr.b != nullptr},
                    {"a_calls", x.count}, {"b_calls", y.count},
                    {"a_self_cpu_ns", x.self_cpu_ns}, {"b_self_cpu_ns", y.self_cpu_ns},
                    {"a_self_device_ns", x.self_device_ns}, {"b_self_device_ns", y.self_device_ns},
                    {"a_device_total_ns", x.device_total_ns}, {"b_device_total_ns", y.device_total_ns},
                    {"delta_self_device_ns", y.self_device_ns - x.self_device_ns},
                    {"delta_self_cpu_ns", y.self_cpu_ns - x.self_cpu_ns},
                    {"delta_device_total_ns", y.device_total_ns - x.device_total_ns}});
  }
  std::sort(rows.begin(), rows.end(), [](const json& l, const json& r) {
    auto key = [](const json& j) {
      return std::max({j["a_device_total_ns"].get<int64_t>(), j["b_device_total_ns"].get<int64_t>(),
                       j["a_self_cpu_ns"].get<int64_t>() / 1000, j["b_self_cpu_ns"].get<int64_t>() / 1000});
    };
    return key(l) != key(r) ? key(l) > key(r) : l["name"] < r["name"];
  });
  auto side = [](size_t id, const Profile& p) {
    return json{{"id", id}, {"label", p.label()},
                {"self_cpu_total_ns", p.key_averages().self_cpu_time_total_ns()},
                {"self_device_total_ns", p.key_averages().self_device_time_total_ns()},
                {"t0", p.timeline().begin()}, {"t1", p.timeline().end()},
                {"span_ns", p.timeline().end() - p.timeline().begin()}};
  };
  int64_t da = a.key_averages().self_device_time_total_ns();
  int64_t db = b.key_averages().self_device_time_total_ns();
  return {{"a", side(a_id, a)}, {"b", side(b_id, b)}, {"rows", rows},
          {"device_ratio", da > 0 ? double(db) / double(da) : 0.0}};
}

}  // namespace opscope::explorer::api
