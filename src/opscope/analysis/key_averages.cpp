#include "opscope/analysis/key_averages.h"

#include <algorithm>
#include <fmt/format.h>
#include <tuple>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "opscope/analysis/kernel_origins.h"
#include "opscope/analysis/memory.h"
#include "opscope/analysis/table_layout.h"
#include "opscope/core/error.h"

namespace opscope::analysis {

namespace {

// A row's share of its roof, the memory roof at the bytes one call moves (its working set).
double roof_fraction(const Roofline& roof, const KeyAverage& r) {
  return roof.fraction(r.gbps(), r.gflops(), r.count > 0 ? double(r.bytes) / double(r.count) : 0);
}

// id -> index, open addressing (id 0 is "none"): the aggregation of 1M events must
// stay well under a second.
class IdMap {
 public:
  explicit IdMap(size_t n) { reset(n); }
  // The value of `k`, inserting `v` first if `k` is new.
  int32_t find_or_put(uint64_t k, int32_t v) {
    size_t i = slot(k);
    if (keys_[i] == k) return vals_[i];
    insert_at(i, k, v);
    return v;
  }
  void put(uint64_t k, int32_t v) {
    size_t i = slot(k);
    if (keys_[i] == k) vals_[i] = v;
    else insert_at(i, k, v);
  }
  int32_t get(uint64_t k) const {
    if (!k) return -1;
    size_t i = slot(k);
    return keys_[i] == k ? vals_[i] : -1;
  }

 private:
  void reset(size_t n) {
    size_t cap = 16;
    while (cap < 2 * n) cap <<= 1;
    keys_.assign(cap, 0);
    vals_.assign(cap, -1);
    mask_ = cap - 1;
    size_ = 0;
  }
  // The slot holding k, or the empty slot where it would go.
  size_t slot(uint64_t k) const {
    size_t i = size_t((k * 0x9E3779B97F4A7C15ull) >> 17) & mask_;
    while (keys_[i] != k && keys_[i] != 0) i = (i + 1) & mask_;
    return i;
  }
  void insert_at(size_t i, uint64_t k, int32_t v) {
    keys_[i] = k;
    vals_[i] = v;
    if (++size_ * 2 > keys_.size()) {  // keep the load under 1/2
      std::vector<uint64_t> keys = std::move(keys_);
      std::vector<int32_t> vals = std::move(vals_);
      reset(keys.size());
      for (size_t j = 0; j < keys.size(); ++j)
        if (keys[j]) insert_at(slot(keys[j]), keys[j], vals[j]);
    }
  }

  std::vector<uint64_t> keys_;
  std::vector<int32_t> vals_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

struct RowKey {
  EventKind kind;
  std::string_view name, shapes, source;
  bool operator==(const RowKey&) const = default;
};
struct RowKeyHash {
  size_t operator()(const RowKey& k) const {
    std::hash<std::string_view> h;
    size_t x = h(k.name) ^ (size_t(k.kind) * 0x9E3779B97F4A7C15ull);
    if (!k.shapes.empty()) x ^= h(k.shapes) * 31;
    if (!k.source.empty()) x ^= h(k.source) * 131;
    return x;
  }
};

bool correlate_device_time(const Trace& t) {
  if (t.config_json.empty()) return true;
  auto j = nlohmann::json::parse(t.config_json, nullptr, false);
  if (j.is_object() && j.contains("correlate_device_time") && j["correlate_device_time"].is_boolean())
    return j["correlate_device_time"].get<bool>();
  return true;
}

// A launch on the device: the span of its slices.
struct Span {
  int64_t t0, t1;
  uint64_t op;
  uint64_t id;
  int64_t bytes, flops;  // summed over the traced slices
};

using Field = double (*)(const KeyAverage&);
struct SortKey {
  const char* name;
  Field field;
  bool alias = false;  // torch's other spelling of a key listed before it
};
const SortKey kSortKeys[] = {
    {"self_cpu_time_total", [](const KeyAverage& r) { return double(r.self_cpu_ns); }},
    {"cpu_time_total", [](const KeyAverage& r) { return double(r.cpu_total_ns); }},
    {"cpu_time", [](const KeyAverage& r) { return r.cpu_avg_ns(); }},
    {"self_device_time_total", [](const KeyAverage& r) { return double(r.self_device_ns); }},
    {"device_time_total", [](const KeyAverage& r) { return double(r.device_total_ns); }},
    {"device_time", [](const KeyAverage& r) { return r.device_avg_ns(); }},
    {"self_cuda_time_total", [](const KeyAverage& r) { return double(r.self_device_ns); }, true},
    {"cuda_time_total", [](const KeyAverage& r) { return double(r.device_total_ns); }, true},
    {"cuda_time", [](const KeyAverage& r) { return r.device_avg_ns(); }, true},
    {"self_device_memory_usage", [](const KeyAverage& r) { return double(r.self_device_memory); }},
    {"device_memory_usage", [](const KeyAverage& r) { return double(r.device_memory); }},
    {"self_cuda_memory_usage", [](const KeyAverage& r) { return double(r.self_device_memory); }, true},
    {"cuda_memory_usage", [](const KeyAverage& r) { return double(r.device_memory); }, true},
    {"self_cpu_memory_usage", [](const KeyAverage& r) { return double(r.self_device_memory); }, true},
    {"cpu_memory_usage", [](const KeyAverage& r) { return double(r.device_memory); }, true},
    {"count", [](const KeyAverage& r) { return double(r.count); }},
};

std::string format_time(double ns, std::string_view unit) {
  if (unit == "s") return fmt::format("{:.3f}s", ns / 1e9);
  if (unit == "ms") return fmt::format("{:.3f}ms", ns / 1e6);
  if (unit == "us") return fmt::format("{:.3f}us", ns / 1e3);
  if (unit == "ns") return fmt::format("{:.0f}ns", ns);
  double us = ns / 1e3;  // auto, as torch's _format_time
  if (us >= 1e6) return fmt::format("{:.3f}s", us / 1e6);
  if (us >= 1e3) return fmt::format("{:.3f}ms", us / 1e3);
  return fmt::format("{:.3f}us", us);
}

double pct(int64_t part, int64_t total) { return total ? 100.0 * double(part) / double(total) : 0.0; }


std::string fit_bytes(std::string s, size_t width) {
  if (s.size() > width) s = s.substr(0, width > 3 ? width - 3 : 0) + "...";
  return s;
}

std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

std::string printable(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else out += c;
  }
  return out;
}

KeyAverages key_averages(const Trace& trace, bool group_by_input_shape, int group_by_stack_n) {
  const auto& ev = trace.events;
  bool correlate = correlate_device_time(trace);
  KeyAverages out;
  out.by_shape_ = group_by_input_shape;
  out.by_stack_ = group_by_stack_n > 0;
  out.roofline_ = roofline_from_config(trace.config_json);

  // Rows, created in order of first appearance.
  std::unordered_map<RowKey, int32_t, RowKeyHash> row_of;
  auto row = [&](RowKey k) -> int32_t {
    auto [it, fresh] = row_of.try_emplace(k, int32_t(out.rows_.size()));
    if (fresh) {
      KeyAverage& r = out.rows_.emplace_back();
      r.name = std::string(k.name);
      r.kind = k.kind;
      r.input_shapes = std::string(k.shapes);
      r.source = std::string(k.source);
    }
    return it->second;
  };

  // One pass over the (large) events into compact arrays: framework scopes, and
  // launches as spans of their kernel slices.
  struct Scope {
    int64_t t0, t1;
    uint64_t parent;
    int32_t row;
  };
  std::vector<Scope> fw;
  std::vector<Span> spans;
  std::vector<int32_t> span_row;
  IdMap launches(1024);
  // A launch event carries the whole launch's bytes and flops; its slices only their
  // share on the traced cores, so the launch's figures win where both are recorded.
  IdMap launch_event(1024);
  std::vector<std::pair<int64_t, int64_t>> launch_cost;
  std::vector<uint64_t> fw_ids;
  // Allocator events: the op/range they happened in, and the bytes (freed: negative).
  struct Mem {
    uint64_t parent;
    int64_t delta;
    bool alloc;
  };
  std::vector<Mem> mem;
  // Reserved for the worst case: only the pages used are ever touched.
  fw.reserve(ev.size());
  fw_ids.reserve(ev.size());
  spans.reserve(ev.size());
  span_row.reserve(ev.size());
  for (const TraceEvent& e : ev) {
    if (e.kind == EventKind::op || e.kind == EventKind::range) {
      int32_t r = row({e.kind, e.name, group_by_input_shape ? std::string_view(e.shapes) : std::string_view(),
                       group_by_stack_n > 0 ? std::string_view(e.source) : std::string_view()});
      fw.push_back({e.t0, e.t1, e.parent, r});
      fw_ids.push_back(e.id);
    } else if (e.kind == EventKind::kernel) {
      int32_t s = e.id ? launches.find_or_put(e.id, int32_t(spans.size())) : int32_t(spans.size());
      if (s == int32_t(spans.size())) {
        spans.push_back({e.t0, e.t1, e.parent, e.id, e.bytes, e.flops});
        span_row.push_back(row({EventKind::kernel, e.name, {}, {}}));
      } else {
        Span& sp = spans[size_t(s)];
        sp.t0 = std::min(sp.t0, e.t0);
        sp.t1 = std::max(sp.t1, e.t1);
        sp.bytes += e.bytes;
        sp.flops += e.flops;
      }
    } else if (e.kind == EventKind::alloc || e.kind == EventKind::free) {
      bool alloc = e.kind == EventKind::alloc;
      mem.push_back({e.parent, alloc ? e.bytes : -e.bytes, alloc});
    } else if (e.kind == EventKind::launch && e.id) {
      if (launch_event.find_or_put(e.id, int32_t(launch_cost.size())) == int32_t(launch_cost.size()))
        launch_cost.emplace_back(e.bytes, e.flops);
    }
  }
  for (Span& sp : spans) {
    int32_t l = sp.id ? launch_event.get(sp.id) : -1;
    if (l >= 0) std::tie(sp.bytes, sp.flops) = launch_cost[size_t(l)];
  }
  size_t n = fw.size();
  IdMap ids(n);
  for (size_t j = 0; j < n; ++j)
    if (fw_ids[j]) ids.put(fw_ids[j], int32_t(j));

  // CPU: self = total minus the direct children's totals.
  std::vector<int32_t> parent(n, -1);
  std::vector<int64_t> child_cpu(n, 0), self_dev(n, 0), dev_total(n, 0), bytes(n, 0), flops(n, 0);
  for (size_t j = 0; j < n; ++j) {
    int32_t p = ids.get(fw[j].parent);
    if (p == int32_t(j)) p = -1;
    parent[j] = p;
    if (p >= 0) child_cpu[size_t(p)] += fw[j].t1 - fw[j].t0;
  }

  // Device: each launch's span to its op (self) and that op's ancestors (total).
  for (size_t s = 0; s < spans.size(); ++s) {
    int64_t d = spans[s].t1 - spans[s].t0;
    KeyAverage& kr = out.rows_[size_t(span_row[s])];
    kr.count++;
    kr.device_total_ns += d;
    kr.bytes += spans[s].bytes;
    kr.flops += spans[s].flops;
    int32_t owner = correlate ? ids.get(spans[s].op) : -1;
    if (owner < 0) {
      kr.self_device_ns += d;
      continue;
    }
    self_dev[size_t(owner)] += d;
    // The bound guards against a parent cycle in a corrupt trace.
    for (int32_t a = owner, steps = 0; a >= 0 && steps < 4096; a = parent[size_t(a)], ++steps) {
      dev_total[size_t(a)] += d;
      bytes[size_t(a)] += spans[s].bytes;
      flops[size_t(a)] += spans[s].flops;
    }
  }
  // Memory: each event's bytes to its op/range (self) and that one's ancestors (total).
  std::vector<int64_t> self_mem(n, 0), mem_total(n, 0), self_allocs(n, 0), allocs_total(n, 0);
  out.has_memory_ = !mem.empty();
  for (const Mem& m : mem) {
    int32_t owner = ids.get(m.parent);
    if (owner < 0) continue;
    self_mem[size_t(owner)] += m.delta;
    self_allocs[size_t(owner)] += m.alloc;
    for (int32_t a = owner, steps = 0; a >= 0 && steps < 4096; a = parent[size_t(a)], ++steps) {
      mem_total[size_t(a)] += m.delta;
      allocs_total[size_t(a)] += m.alloc;
    }
  }
  for (size_t j = 0; j < n; ++j) {
    KeyAverage& r = out.rows_[size_t(fw[j].row)];
    r.self_device_memory += self_mem[j];
    r.device_memory += mem_total[j];
    r.self_device_allocs += self_allocs[j];
    r.device_allocs += allocs_total[j];
    int64_t total = fw[j].t1 - fw[j].t0;
    r.count++;
    r.cpu_total_ns += total;
    r.self_cpu_ns += std::max<int64_t>(0, total - child_cpu[j]);
    r.self_device_ns += self_dev[j];
    r.device_total_ns += dev_total[j];
    r.bytes += bytes[j];
    r.flops += flops[j];
  }
  for (const KeyAverage& r : out.rows_) {
    out.self_cpu_total_ += r.self_cpu_ns;
    out.self_device_total_ += r.self_device_ns;
  }
  // A compiled kernel's row names what it computes, as Inductor's kernel names do.
  std::map<std::string, KernelOrigins> origins = kernel_origins(trace);
  for (KeyAverage& r : out.rows_)
    if (auto it = origins.find(r.name); r.kind == EventKind::kernel && it != origins.end()) {
      r.origins = it->second.text();
      out.has_origins_ = true;
    }
  out.dropped_ = trace.dropped;
  for (size_t t = 0; t < trace.dropped_per_track.size() && t < trace.tracks.size(); ++t)
    if (trace.dropped_per_track[t]) out.dropped_per_track_.emplace_back(trace.tracks[t].name, trace.dropped_per_track[t]);
  return out;
}

std::string sort_key_names(bool with_aliases) {
  std::string names;
  for (const SortKey& k : kSortKeys)
    if (with_aliases || !k.alias) names += names.empty() ? k.name : std::string(", ") + k.name;
  return names;
}

std::vector<KeyAverage> KeyAverages::sorted(std::string_view sort_by) const {
  std::vector<KeyAverage> rows = rows_;
  if (sort_by.empty()) return rows;
  for (const SortKey& k : kSortKeys)
    if (sort_by == k.name) {
      std::stable_sort(rows.begin(), rows.end(),
                       [f = k.field](const KeyAverage& a, const KeyAverage& b) { return f(a) > f(b); });
      std::stable_partition(rows.begin(), rows.end(), [](const KeyAverage& r) {
        return r.kind == EventKind::range && std::string_view(r.name).starts_with(kCpuFallbackRange);
      });
      return rows;
    }
  fail("sort_by", "unknown key '{}' (expected one of {})", sort_by, sort_key_names(true));
}

std::string KeyAverages::table(std::string_view sort_by, int64_t row_limit, std::string_view time_unit,
                               const TableLayout& layout) const {
  if (!(time_unit.empty() || time_unit == "auto" || time_unit == "s" || time_unit == "ms" || time_unit == "us" ||
        time_unit == "ns"))
    fail("time_unit", "unknown unit '{}' (expected s, ms, us, ns or auto)", time_unit);
  std::vector<KeyAverage> rows = sorted(sort_by);
  if (row_limit > 0 && int64_t(rows.size()) > row_limit) rows.resize(size_t(row_limit));

  std::vector<std::string> heads = {"Name",        "Self CPU %",    "Self CPU",     "CPU total %",
                                    "CPU total",   "CPU time avg",  "Self Device",  "Self Device %",
                                    "Device total", "Device time avg"};
  if (has_memory_) {
    heads.push_back("Device Mem");
    heads.push_back("Self Device Mem");
  }
  heads.push_back("# of Calls");
  bool rates = std::any_of(rows_.begin(), rows_.end(), [](const KeyAverage& r) { return r.bytes > 0 || r.flops > 0; });
  bool roof = rates && roofline_.known();
  if (rates) {
    heads.push_back("GB/s");
    heads.push_back("GFLOP/s");
  }
  if (roof) heads.push_back("% Roofline");
  if (by_shape_) heads.push_back("Input Shapes");
  if (by_stack_) heads.push_back("Source Location");
  if (has_origins_) heads.push_back("Origins");

  std::vector<std::vector<std::string>> cells;
  for (const KeyAverage& r : rows) {
    std::vector<std::string> c = {
        printable(r.name),
        fmt::format("{:.2f}%", pct(r.self_cpu_ns, self_cpu_total_)),
        format_time(double(r.self_cpu_ns), time_unit),
        fmt::format("{:.2f}%", pct(r.cpu_total_ns, self_cpu_total_)),
        format_time(double(r.cpu_total_ns), time_unit),
        format_time(r.cpu_avg_ns(), time_unit),
        format_time(double(r.self_device_ns), time_unit),
        fmt::format("{:.2f}%", pct(r.self_device_ns, self_device_total_)),
        format_time(double(r.device_total_ns), time_unit),
        format_time(r.device_avg_ns(), time_unit)};
    if (has_memory_) {
      c.push_back(format_memory(r.device_memory));
      c.push_back(format_memory(r.self_device_memory));
    }
    c.push_back(fmt::format("{}", r.count));
    // Rates only where the row has device time of its own launches to divide by.
    bool has = r.device_total_ns > 0 && (r.bytes > 0 || r.flops > 0);
    if (rates) {
      c.push_back(has ? fmt::format("{:.2f}", r.gbps()) : "");
      c.push_back(has ? fmt::format("{:.2f}", r.gflops()) : "");
    }
    if (roof) c.push_back(has ? Roofline::format_fraction(roof_fraction(roofline_, r)) : "");
    if (by_shape_) c.push_back(printable(r.input_shapes));
    if (by_stack_) c.push_back(printable(r.source));
    if (has_origins_) c.push_back(printable(r.origins));
    cells.push_back(std::move(c));
  }
  ColumnChoice shown = choose_columns(heads, cells, layout);

  std::string out, line;
  for (size_t w : shown.width) line += std::string(w, '-') + "  ";
  line += "\n";
  auto emit = [&](const std::vector<std::string>& c, bool picked) {
    for (size_t i = 0; i < shown.shown.size(); ++i) {
      std::string v = fit_bytes(picked ? c[i] : c[shown.shown[i]], shown.width[i]);
      out += shown.left[i] ? fmt::format("{:<{}}  ", v, shown.width[i]) : fmt::format("{:>{}}  ", v, shown.width[i]);
    }
    out += "\n";
  };
  out += line;
  emit(shown.heads, true);
  out += line;
  for (auto& c : cells) emit(c, false);
  out += line;
  out += shown.note;
  out += fmt::format("Self CPU time total: {}\n", format_time(double(self_cpu_total_), time_unit));
  out += fmt::format("Self Device time total: {}\n", format_time(double(self_device_total_), time_unit));
  if (dropped_) {
    std::string per;
    for (auto& [track, n] : dropped_per_track_) per += fmt::format("{}{}: {}", per.empty() ? "" : ", ", track, n);
    out += per.empty() ? fmt::format("Dropped events: {}\n", dropped_)
                       : fmt::format("Dropped events: {} ({})\n", dropped_, per);
  }
  return out;
}

std::string KeyAverages::to_json(std::string_view sort_by) const {
  nlohmann::json j;
  j["self_cpu_time_total_ns"] = self_cpu_total_;
  j["self_device_time_total_ns"] = self_device_total_;
  j["dropped"] = dropped_;
  j["has_memory"] = has_memory_;
  j["dropped_per_track"] = nlohmann::json::array();
  for (auto& [track, n] : dropped_per_track_) j["dropped_per_track"].push_back({{"track", track}, {"dropped", n}});
  j["rows"] = nlohmann::json::array();
  for (const KeyAverage& r : sorted(sort_by)) {
    j["rows"].push_back({{"name", r.name},
                         {"kind", kind_name(r.kind)},
                         {"input_shapes", r.input_shapes},
                         {"source", r.source},
                         {"origins", r.origins},
                         {"count", r.count},
                         {"self_cpu_ns", r.self_cpu_ns},
                         {"self_cpu_pct", pct(r.self_cpu_ns, self_cpu_total_)},
                         {"cpu_total_ns", r.cpu_total_ns},
                         {"cpu_total_pct", pct(r.cpu_total_ns, self_cpu_total_)},
                         {"cpu_avg_ns", r.cpu_avg_ns()},
                         {"self_device_ns", r.self_device_ns},
                         {"self_device_pct", pct(r.self_device_ns, self_device_total_)},
                         {"device_total_ns", r.device_total_ns},
                         {"device_avg_ns", r.device_avg_ns()},
                         {"self_device_memory", r.self_device_memory},
                         {"device_memory", r.device_memory},
                         {"self_device_allocs", r.self_device_allocs},
                         {"device_allocs", r.device_allocs},
                         {"bytes", r.bytes},
                         {"flops", r.flops},
                         {"gbps", r.gbps()},
                         {"gflops", r.gflops()},
                         {"roofline_pct", roofline_.known() ? 100 * roof_fraction(roofline_, r) : 0.0},
                         {"above_roof", roofline_.known() && roof_fraction(roofline_, r) > kAboveRoof}});
  }
  if (roofline_.known())
    j["roofline"] = {{"peak_gbps", roofline_.peak_gbps}, {"peak_gflops", roofline_.peak_gflops}};
  return j.dump(2);
}

std::string KeyAverages::to_csv(std::string_view sort_by) const {
  std::string out =
      "name,kind,input_shapes,source,count,self_cpu_ns,self_cpu_pct,cpu_total_ns,cpu_total_pct,cpu_avg_ns,"
      "self_device_ns,self_device_pct,device_total_ns,device_avg_ns,self_device_memory,device_memory,"
      "self_device_allocs,device_allocs,bytes,flops,gbps,gflops,origins\n";
  for (const KeyAverage& r : sorted(sort_by))
    out += fmt::format("{},{},{},{},{},{},{:.4f},{},{:.4f},{:.1f},{},{:.4f},{},{:.1f},{},{},{},{},{},{},{:.3f},{:.3f},{}\n",
                       csv_field(r.name), kind_name(r.kind), csv_field(r.input_shapes), csv_field(r.source), r.count,
                       r.self_cpu_ns, pct(r.self_cpu_ns, self_cpu_total_), r.cpu_total_ns,
                       pct(r.cpu_total_ns, self_cpu_total_), r.cpu_avg_ns(), r.self_device_ns,
                       pct(r.self_device_ns, self_device_total_), r.device_total_ns, r.device_avg_ns(),
                       r.self_device_memory, r.device_memory, r.self_device_allocs, r.device_allocs, r.bytes, r.flops,
                       r.gbps(), r.gflops(), csv_field(r.origins));
  return out;
}

}  // namespace opscope::analysis
