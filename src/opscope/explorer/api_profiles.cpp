// The profiles list, the operator table (key_averages rows) and the compare view.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "opscope/analysis/diff.h"
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
  std::optional<analysis::KeyAverages> grouped;
  if (by_shape) grouped = analysis::key_averages(p.trace(), true);
  const analysis::KeyAverages& ka = by_shape ? *grouped : p.key_averages();
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
                    {"device_avg_ns", r.device_avg_ns()}, {"bytes", r.bytes}, {"flops", r.flops},
                    {"self_device_memory", r.self_device_memory}, {"device_memory", r.device_memory},
                    {"self_device_allocs", r.self_device_allocs}, {"device_allocs", r.device_allocs},
                    {"gbps", r.gbps()}, {"gflops", r.gflops()},
                    {"roofline_pct", ka.roofline().known() ? 100 * ka.roofline().fraction(r.gbps(), r.gflops()) : 0.0}});
  }
  return {{"rows", rows}, {"self_cpu_total_ns", cpu}, {"self_device_total_ns", dev},
          {"dropped", ka.dropped()}, {"group_by_shape", by_shape}, {"has_memory", ka.has_memory()}};
}

json compare_view(size_t a_id, const Profile& a, size_t b_id, const Profile& b) {
  // The numbers of `opscope diff A B`: rows matched by kind and name (an op of the naive
  // run against the same op compiled), from each profile's cached key_averages.
  analysis::DiffOptions options;
  options.a_label = a.label();
  options.b_label = b.label();
  analysis::ProfileDiff diff = analysis::diff_profiles(a.trace(), a.key_averages(), b.trace(), b.key_averages(), options);
  json rows = json::array();
  for (const analysis::DiffRow& r : diff.select({})) {
    analysis::DiffSide d = r.delta();
    rows.push_back({{"name", r.name}, {"kind", prof::kind_name(r.kind)}, {"status", analysis::status_name(r.status)},
                    {"in_a", r.in_a()}, {"in_b", r.in_b()},
                    {"a_calls", r.a.count}, {"b_calls", r.b.count}, {"delta_calls", d.count},
                    {"a_self_cpu_ns", r.a.self_cpu_ns}, {"b_self_cpu_ns", r.b.self_cpu_ns},
                    {"a_cpu_total_ns", r.a.cpu_total_ns}, {"b_cpu_total_ns", r.b.cpu_total_ns},
                    {"a_self_device_ns", r.a.self_device_ns}, {"b_self_device_ns", r.b.self_device_ns},
                    {"a_device_total_ns", r.a.device_total_ns}, {"b_device_total_ns", r.b.device_total_ns},
                    {"a_bytes", r.a.bytes}, {"b_bytes", r.b.bytes}, {"delta_bytes", d.bytes},
                    {"a_flops", r.a.flops}, {"b_flops", r.b.flops},
                    {"delta_self_device_ns", d.self_device_ns},
                    {"delta_self_cpu_ns", d.self_cpu_ns},
                    {"delta_cpu_total_ns", d.cpu_total_ns},
                    {"delta_device_total_ns", d.device_total_ns}});
  }
  auto side = [](size_t id, const Profile& p, const analysis::ProfileTotals& t) {
    return json{{"id", id}, {"label", p.label()},
                {"self_cpu_total_ns", t.self_cpu_ns}, {"self_device_total_ns", t.self_device_ns},
                {"t0", p.timeline().begin()}, {"t1", p.timeline().end()},
                {"span_ns", p.timeline().end() - p.timeline().begin()},
                {"launches", t.launches}, {"bytes", t.bytes}, {"flops", t.flops},
                {"events", t.events}, {"dropped", t.dropped}, {"steps", t.steps},
                {"has_memory", t.has_memory}, {"peak_memory", t.peak_memory}};
  };
  json sa = side(a_id, a, diff.a()), sb = side(b_id, b, diff.b());
  json delta = json::object();
  for (const char* k : {"self_cpu_total_ns", "self_device_total_ns", "span_ns", "launches", "bytes", "flops",
                        "events", "dropped", "steps", "peak_memory"})
    delta[k] = sb[k].get<int64_t>() - sa[k].get<int64_t>();
  std::map<std::string, int64_t> counts = {{"same", 0}, {"changed", 0}, {"added", 0}, {"removed", 0}};
  for (const analysis::DiffRow& r : diff.rows()) ++counts[analysis::status_name(r.status)];
  int64_t da = diff.a().self_device_ns, db = diff.b().self_device_ns;
  return {{"a", sa}, {"b", sb}, {"delta", delta}, {"counts", counts}, {"warnings", diff.warnings()},
          {"rows", rows}, {"device_ratio", da > 0 ? double(db) / double(da) : 0.0}};
}

}  // namespace opscope::explorer::api
