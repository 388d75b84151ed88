// diff_profiles: matching the two profiles' rows, their totals and warnings, and the
// selection and order of rows a view shows (diff_format.cpp prints them).
#include "opscope/analysis/diff.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <limits>
#include <nlohmann/json.hpp>
#include <tuple>
#include <unordered_map>

#include "opscope/analysis/memory.h"
#include "opscope/core/error.h"

namespace opscope::analysis {

namespace {

using nlohmann::json;

// ---- matching and totals

std::string row_key(const KeyAverage& r) {
  std::string k(1, char('0' + int(r.kind)));
  k += r.name;
  k += '\0';
  k += r.input_shapes;
  return k;
}

DiffSide side_of(const KeyAverage& r) {
  return {r.count, r.self_cpu_ns, r.cpu_total_ns, r.self_device_ns, r.device_total_ns, r.bytes, r.flops,
          r.self_device_memory, r.device_memory};
}

// The recording config's fields that decide what the figures mean.
struct Recorded {
  std::string layers, cores;
  bool correlate = true, shapes = false, known = false;
};

Recorded recorded(const Trace& t) {
  Recorded r;
  json j = json::parse(t.config_json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return r;
  r.known = true;
  if (j.contains("layers") && j["layers"].is_string()) r.layers = j["layers"].get<std::string>();
  if (j.contains("cores") && j["cores"].is_string()) r.cores = j["cores"].get<std::string>();
  if (j.contains("correlate_device_time") && j["correlate_device_time"].is_boolean())
    r.correlate = j["correlate_device_time"].get<bool>();
  if (j.contains("record_shapes") && j["record_shapes"].is_boolean()) r.shapes = j["record_shapes"].get<bool>();
  return r;
}

ProfileTotals totals_of(const Trace& t, const KeyAverages& ka, const std::string& label) {
  ProfileTotals s;
  s.label = label;
  s.schema_version = t.schema_version;
  s.devices = t.devices;
  s.layers = recorded(t).layers;
  s.self_cpu_ns = ka.self_cpu_time_total_ns();
  s.self_device_ns = ka.self_device_time_total_ns();
  s.events = int64_t(t.events.size());
  s.dropped = t.dropped;
  int64_t t0 = std::numeric_limits<int64_t>::max(), t1 = std::numeric_limits<int64_t>::min();
  for (const TraceEvent& e : t.events) {
    t0 = std::min(t0, e.t0);
    t1 = std::max(t1, e.t1);
    if (e.kind == EventKind::range && e.parent == 0) ++s.steps;
  }
  s.span_ns = t.events.empty() ? 0 : t1 - t0;
  for (const DeviceMemory& m : memory_summary(t)) {
    s.has_memory = true;
    s.peak_memory = std::max(s.peak_memory, m.peak_bytes);
  }
  for (const KeyAverage& r : ka.rows())
    if (r.kind == EventKind::kernel) {
      s.launches += r.count;
      s.bytes += r.bytes;
      s.flops += r.flops;
    }
  return s;
}

std::string devices_str(const std::vector<DeviceInfo>& ds) {
  if (ds.empty()) return "no recorded device";
  std::string out;
  for (const DeviceInfo& d : ds)
    out += fmt::format("{}{} '{}' ({} cores)", out.empty() ? "" : ", ", d.name, d.description, d.num_cores);
  return out;
}

// A device description without the run's core-to-CPU pinning ("pinned to CPUs 1,0"):
// that follows where the host thread ran, so it differs between runs on one machine.
std::string machine_of(std::string_view description) {
  std::string s(description);
  constexpr std::string_view kPinned = "pinned to CPUs ";
  size_t at = s.find(kPinned);
  if (at == std::string::npos) return s;
  size_t end = at + kPinned.size();
  while (end < s.size() && (std::isdigit(static_cast<unsigned char>(s[end])) || s[end] == ',' || s[end] == '-')) ++end;
  return s.erase(at + kPinned.size(), end - at - kPinned.size());
}

std::vector<std::string> warnings_for(const Trace& a, const Trace& b, const DiffOptions& o) {
  std::vector<std::string> w;
  const std::string &A = o.a_label, &B = o.b_label;
  if (a.schema_version != b.schema_version)
    w.push_back(fmt::format("schema versions differ: {} has {}, {} has {}; figures may not mean the same", A,
                            a.schema_version, B, b.schema_version));
  bool same_devices = a.devices.size() == b.devices.size();
  bool same_cores = same_devices;
  for (size_t i = 0; same_devices && i < a.devices.size(); ++i) {
    same_devices = a.devices[i].name == b.devices[i].name &&
                   machine_of(a.devices[i].description) == machine_of(b.devices[i].description);
    same_cores = same_cores && a.devices[i].num_cores == b.devices[i].num_cores;
  }
  if (!same_devices)
    w.push_back(fmt::format("devices differ: {} ran on {}, {} on {}; times compare across machines", A,
                            devices_str(a.devices), B, devices_str(b.devices)));
  else if (!same_cores)
    w.push_back(fmt::format("core counts differ: {} ran on {}, {} on {}; device times are not like for like", A,
                            devices_str(a.devices), B, devices_str(b.devices)));
  Recorded ra = recorded(a), rb = recorded(b);
  if (ra.known && rb.known) {
    if (ra.layers != rb.layers)
      w.push_back(fmt::format("recorded layers differ: {} has {}, {} has {}; a layer not recorded shows as zeros", A,
                              ra.layers, B, rb.layers));
    if (ra.cores != rb.cores)
      w.push_back(fmt::format("traced cores differ: {} traced {}, {} traced {}; device time counts traced cores only",
                              A, ra.cores, B, rb.cores));
    if (ra.correlate != rb.correlate)
      w.push_back(fmt::format("device time is attributed differently: correlate_device_time is {} in {}, {} in {}",
                              ra.correlate, A, rb.correlate, B));
  }
  if (o.group_by_input_shape)
    for (auto [r, label] : {std::pair{&ra, &A}, std::pair{&rb, &B}})
      if (r->known && !r->shapes)
        w.push_back(fmt::format("{} was recorded without record_shapes: its ops have no input shapes to match by",
                                *label));
  for (auto [t, label] : {std::pair{&a, &A}, std::pair{&b, &B}})
    if (t->dropped > 0)
      w.push_back(fmt::format("{} dropped {} events (full buffers): its figures are incomplete", *label, t->dropped));
  return w;
}

// ---- sorting and selection

using DiffField = double (*)(const DiffSide&);
struct DiffSortKey {
  const char* name;
  DiffField field;
};
double avg(int64_t total, int64_t count) { return count ? double(total) / double(count) : 0.0; }
const DiffSortKey kDiffSortKeys[] = {
    {"self_device_time_total", [](const DiffSide& s) { return double(s.self_device_ns); }},
    {"device_time_total", [](const DiffSide& s) { return double(s.device_total_ns); }},
    {"self_cpu_time_total", [](const DiffSide& s) { return double(s.self_cpu_ns); }},
    {"cpu_time_total", [](const DiffSide& s) { return double(s.cpu_total_ns); }},
    {"cpu_time", [](const DiffSide& s) { return avg(s.cpu_total_ns, s.count); }},
    {"device_time", [](const DiffSide& s) { return avg(s.device_total_ns, s.count); }},
    {"self_cuda_time_total", [](const DiffSide& s) { return double(s.self_device_ns); }},
    {"cuda_time_total", [](const DiffSide& s) { return double(s.device_total_ns); }},
    {"cuda_time", [](const DiffSide& s) { return avg(s.device_total_ns, s.count); }},
    {"count", [](const DiffSide& s) { return double(s.count); }},
    {"bytes", [](const DiffSide& s) { return double(s.bytes); }},
    {"flops", [](const DiffSide& s) { return double(s.flops); }},
    {"self_device_memory_usage", [](const DiffSide& s) { return double(s.self_device_memory); }},
    {"device_memory_usage", [](const DiffSide& s) { return double(s.device_memory); }},
    {"self_cuda_memory_usage", [](const DiffSide& s) { return double(s.self_device_memory); }},
    {"cuda_memory_usage", [](const DiffSide& s) { return double(s.device_memory); }},
    {"self_cpu_memory_usage", [](const DiffSide& s) { return double(s.self_device_memory); }},
    {"cpu_memory_usage", [](const DiffSide& s) { return double(s.device_memory); }},
};

int64_t largest_time_change(const DiffRow& r) {
  DiffSide d = r.delta();
  return std::max({std::llabs(d.self_cpu_ns), std::llabs(d.cpu_total_ns), std::llabs(d.self_device_ns),
                   std::llabs(d.device_total_ns)});
}

bool shown_kind(const DiffRow& r, uint32_t kinds) { return (kinds & kind_bit(r.kind)) != 0; }
bool below_min(const DiffRow& r, int64_t min_delta_ns) {
  return r.in_a() && r.in_b() && min_delta_ns > 0 && largest_time_change(r) < min_delta_ns;
}

}  // namespace

const char* status_name(DiffStatus s) {
  switch (s) {
    case DiffStatus::same: return "same";
    case DiffStatus::changed: return "changed";
    case DiffStatus::added: return "added";
    case DiffStatus::removed: return "removed";
  }
  return "unknown";
}

DiffSide DiffRow::delta() const {
  return {b.count - a.count,           b.self_cpu_ns - a.self_cpu_ns,         b.cpu_total_ns - a.cpu_total_ns,
          b.self_device_ns - a.self_device_ns, b.device_total_ns - a.device_total_ns, b.bytes - a.bytes,
          b.flops - a.flops,
          b.self_device_memory - a.self_device_memory, b.device_memory - a.device_memory};
}

uint32_t parse_diff_kinds(std::string_view spec, std::string_view what) {
  uint32_t kinds = 0;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t end = std::min(spec.find(',', start), spec.size());
    std::string_view w = spec.substr(start, end - start);
    if (w == "all") kinds |= kAllDiffKinds;
    else if (w == "op") kinds |= kind_bit(EventKind::op);
    else if (w == "range") kinds |= kind_bit(EventKind::range);
    else if (w == "kernel") kinds |= kind_bit(EventKind::kernel);
    else fail(what, "unknown kind '{}' (expected op, range, kernel or all)", w);
    start = end + 1;
  }
  return kinds;
}

ProfileDiff diff_profiles(const Trace& a, const Trace& b, const DiffOptions& options) {
  // Checked before the (long) aggregation; the overload checks again.
  for (auto [t, label] : {std::pair{&a, &options.a_label}, std::pair{&b, &options.b_label}})
    if (t->schema_version > kSchemaVersion)
      fail("diff", "{}: schema version {} is newer than this opscope reads ({}); use a newer opscope", *label,
           t->schema_version, kSchemaVersion);
  return diff_profiles(a, key_averages(a, options.group_by_input_shape), b,
                       key_averages(b, options.group_by_input_shape), options);
}

ProfileDiff diff_profiles(const Trace& a, const KeyAverages& ka, const Trace& b, const KeyAverages& kb,
                          const DiffOptions& options) {
  for (auto [t, label] : {std::pair{&a, &options.a_label}, std::pair{&b, &options.b_label}})
    if (t->schema_version > kSchemaVersion)
      fail("diff", "{}: schema version {} is newer than this opscope reads ({}); use a newer opscope", *label,
           t->schema_version, kSchemaVersion);
  ProfileDiff d;
  d.by_shape_ = options.group_by_input_shape;
  std::unordered_map<std::string, size_t> index;
  for (const KeyAverage& r : ka.rows()) {
    auto [it, fresh] = index.try_emplace(row_key(r), d.rows_.size());
    if (!fresh) continue;  // key_averages' rows are unique; a guard, not a case
    DiffRow& row = d.rows_.emplace_back();
    row.name = r.name;
    row.kind = r.kind;
    row.input_shapes = r.input_shapes;
    row.a = side_of(r);
    row.status = DiffStatus::removed;
  }
  for (const KeyAverage& r : kb.rows()) {
    auto [it, fresh] = index.try_emplace(row_key(r), d.rows_.size());
    if (fresh) {
      DiffRow& row = d.rows_.emplace_back();
      row.name = r.name;
      row.kind = r.kind;
      row.input_shapes = r.input_shapes;
      row.b = side_of(r);
      row.status = DiffStatus::added;
      continue;
    }
    DiffRow& row = d.rows_[it->second];
    if (row.status != DiffStatus::removed) continue;
    row.b = side_of(r);
    row.status = row.a == row.b ? DiffStatus::same : DiffStatus::changed;
  }
  d.a_ = totals_of(a, ka, options.a_label);
  d.b_ = totals_of(b, kb, options.b_label);
  d.warnings_ = warnings_for(a, b, options);
  if (d.a_.steps > 0 && d.b_.steps > 0 && d.a_.steps != d.b_.steps)
    d.warnings_.push_back(fmt::format("{} has {} steps (top-level ranges), {} has {}: compare the per-step figures",
                                      options.a_label, d.a_.steps, options.b_label, d.b_.steps));
  return d;
}

std::vector<DiffRow> ProfileDiff::select(const DiffView& view) const {
  const DiffSortKey* key = nullptr;
  if (!view.sort_by.empty() && view.sort_by != "name") {
    for (const DiffSortKey& k : kDiffSortKeys)
      if (view.sort_by == k.name) key = &k;
    if (!key) {
      std::string names;
      for (const DiffSortKey& k : kDiffSortKeys) names += std::string(names.empty() ? "" : ", ") + k.name;
      fail("sort_by", "unknown key '{}' (expected one of {}, name)", view.sort_by, names);
    }
  }
  std::vector<DiffRow> rows;
  for (const DiffRow& r : rows_)
    if (shown_kind(r, view.kinds) && !below_min(r, view.min_delta_ns)) rows.push_back(r);
  if (view.sort_by == "name") {
    std::stable_sort(rows.begin(), rows.end(), [](const DiffRow& x, const DiffRow& y) {
      return std::tie(x.name, x.kind, x.input_shapes) < std::tie(y.name, y.kind, y.input_shapes);
    });
  } else if (key) {
    // Largest change first; equal changes: the larger figure first.
    std::stable_sort(rows.begin(), rows.end(), [f = key->field](const DiffRow& x, const DiffRow& y) {
      double dx = std::abs(f(x.b) - f(x.a)), dy = std::abs(f(y.b) - f(y.a));
      if (dx != dy) return dx > dy;
      return std::max(f(x.a), f(x.b)) > std::max(f(y.a), f(y.b));
    });
  }
  return rows;
}

int64_t ProfileDiff::hidden(const DiffView& view) const {
  int64_t n = 0;
  for (const DiffRow& r : rows_) n += shown_kind(r, view.kinds) && below_min(r, view.min_delta_ns);
  return n;
}

}  // namespace opscope::analysis
