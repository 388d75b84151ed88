// An event's details (fields, achieved bandwidth, its correlation chain and, for a
// compiled kernel, its artifact) and search by name.
#include <algorithm>
#include <cctype>

#include "opscope/analysis/kernel_origins.h"
#include "opscope/explorer/api_views.h"

namespace opscope::explorer::api {

using nlohmann::json;
using prof::EventKind;

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// A compiled kernel's artifact, when the profile's config carries one for this kernel
// name: {"artifacts": {"<kernel>": {"manifest": ..., "source": "..."}}}.
json artifact_for(const prof::Trace& t, const std::string& kernel) {
  json cfg = json::parse(t.config_json, nullptr, false);
  if (cfg.is_discarded() || !cfg.is_object() || !cfg.contains("artifacts")) return nullptr;
  const json& arts = cfg["artifacts"];
  if (!arts.is_object() || !arts.contains(kernel)) return nullptr;
  return arts[kernel];
}

}  // namespace

json event_view(const Profile& p, uint32_t e) {
  const auto& t = p.trace();
  const auto& ev = t.events[e];
  json j = event_brief(p, e);
  j["dur_ns"] = ev.t1 - ev.t0;
  j["id"] = ev.id;
  j["parent"] = ev.parent;
  j["track"] = ev.track;
  j["track_name"] = ev.track >= 0 && size_t(ev.track) < t.tracks.size() ? t.tracks[ev.track].name : "";
  j["device"] = ev.device;
  j["stream"] = ev.stream;
  json args = json::object();
  if (ev.bytes) args["bytes"] = ev.bytes;
  if (ev.flops) args["flops"] = ev.flops;
  if (ev.kind == EventKind::op && ev.value >= 0) args["sequence_nr"] = ev.value;  // -1: none
  if (ev.kind == EventKind::alloc || ev.kind == EventKind::free) args["allocated_after"] = ev.value;
  if (ev.kind == EventKind::launch) {
    int64_t dev = p.correlation().launch_device_ns(e);
    args["device_ns"] = dev;
    if (dev > 0 && ev.bytes > 0) args["gbps"] = double(ev.bytes) / double(dev);
  }
  if (ev.kind == EventKind::kernel && ev.t1 > ev.t0 && ev.bytes > 0)
    args["gbps"] = double(ev.bytes) / double(ev.t1 - ev.t0);
  if (ev.kind == EventKind::kernel && ev.value > 0) args["trace_gbps"] = double(ev.value) / 1000;  // imported
  if (ev.kind == EventKind::kernel || ev.kind == EventKind::launch) {  // a compiled kernel: what it came from
    auto origins = analysis::kernel_origins(t);
    if (auto it = origins.find(ev.name); it != origins.end()) args["origins"] = it->second.text();
  }

  j["args"] = args;
  j["shapes"] = ev.shapes;
  j["source"] = ev.source;

  Chain c = p.correlation().chain(e);
  auto briefs = [&](const std::vector<uint32_t>& v) {
    json a = json::array();
    for (uint32_t x : v) a.push_back(event_brief(p, x));
    return a;
  };
  json kernels = briefs(c.kernels);
  for (json& k : kernels)  // which launch each slice belongs to, for the flow arrows
    k["launch"] = p.correlation().launch_by_id(t.events[k["e"].get<uint32_t>()].id);
  j["chain"] = {{"ops", briefs(c.ops)}, {"launches", briefs(c.launches)},
                {"kernels", kernels}, {"truncated", c.truncated}};
  j["artifact"] = ev.kind == EventKind::kernel || ev.kind == EventKind::launch
                      ? artifact_for(t, ev.name) : json(nullptr);
  return j;
}

json search_view(const Profile& p, const Params& params) {
  const auto& tl = p.timeline();
  const std::string q = string_param(params, "q", 200);
  const bool exact = int_param(params, "exact", 0, 0, 1) == 1;
  const size_t limit = size_t(int_param(params, "limit", 200, 1, 5000));
  const std::string lq = lower(q);
  std::vector<char> match(tl.names().size(), 0);
  for (size_t i = 0; i < tl.names().size(); ++i)
    match[i] = exact ? tl.names()[i] == q : lower(tl.names()[i]).find(lq) != std::string::npos;
  std::vector<int64_t> counts(tl.names().size(), 0);
  json events = json::array();
  int64_t total = 0;
  const auto& ev = p.trace().events;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    uint32_t n = tl.name_id(i);
    if (!match[n]) continue;
    ++counts[n];
    if (total++ < int64_t(limit)) events.push_back(event_brief(p, i));
  }
  json names = json::array();
  for (size_t i = 0; i < counts.size(); ++i)
    if (counts[i]) names.push_back({{"name", tl.names()[i]}, {"count", counts[i]}});
  std::sort(names.begin(), names.end(),
            [](const json& a, const json& b) { return a["count"].get<int64_t>() > b["count"].get<int64_t>(); });
  return {{"q", q}, {"exact", exact}, {"total", total}, {"names", names}, {"events", events},
          {"truncated", total > int64_t(limit)}};
}

}  // namespace opscope::explorer::api
