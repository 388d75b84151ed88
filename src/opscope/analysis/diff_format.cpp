// ProfileDiff's outputs: the table (as key_averages prints one) and the JSON.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>

#include "opscope/analysis/diff.h"

namespace opscope::analysis {

namespace {

using nlohmann::json;

std::string format_time(double ns) {  // each value in its own unit, as torch's table
  double us = ns / 1e3;
  if (std::abs(us) >= 1e6) return fmt::format("{:.3f}s", us / 1e6);
  if (std::abs(us) >= 1e3) return fmt::format("{:.3f}ms", us / 1e3);
  return fmt::format("{:.3f}us", us);
}
std::string signed_time(double ns) {
  return ns == 0 ? "0" : fmt::format("{}{}", ns > 0 ? '+' : '-', format_time(std::abs(ns)));
}

std::string format_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::abs(b) >= 1024 && u < 4) b /= 1024, ++u;
  return u == 0 ? fmt::format("{:.0f} B", b) : fmt::format("{:.2f} {}", b, units[u]);
}
std::string signed_bytes(double b) {
  return b == 0 ? "0" : fmt::format("{}{}", b > 0 ? '+' : '-', format_bytes(std::abs(b)));
}
std::string signed_count(int64_t n) { return n == 0 ? "0" : fmt::format("{:+}", n); }

// B against A in percent; "new" where A had none.
std::string change_pct(double a, double b) {
  if (a == b) return "0.0%";
  if (a == 0) return "new";
  return fmt::format("{:+.1f}%", 100.0 * (b - a) / a);
}

// Width on a terminal: UTF-8 code points ("Δ" is one column, two bytes).
size_t columns(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}
std::string fit(const std::string& s, size_t width) {
  if (columns(s) <= width) return s;
  size_t keep = width > 3 ? width - 3 : 0, n = 0, i = 0;
  for (; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && n++ == keep) break;
  }
  return s.substr(0, i) + "...";
}
std::string pad(const std::string& s, size_t width, bool left) {
  std::string fill(width > columns(s) ? width - columns(s) : 0, ' ');
  return left ? s + fill : fill + s;
}

// A table as key_averages prints one: dashed rules, the first column left-aligned (at
// most 55 wide), the others right-aligned.
std::string render(const std::vector<std::string>& heads, const std::vector<std::vector<std::string>>& cells,
                   size_t left_cols = 1) {
  std::vector<size_t> width(heads.size());
  for (size_t k = 0; k < heads.size(); ++k) {
    width[k] = columns(heads[k]);
    for (auto& c : cells) width[k] = std::max(width[k], columns(c[k]));
  }
  width[0] = std::min<size_t>(width[0], 55);
  std::string rule;
  for (size_t k = 0; k < width.size(); ++k) rule += std::string(width[k], '-') + (k + 1 < width.size() ? "  " : "\n");
  std::string out = rule;
  auto emit = [&](const std::vector<std::string>& c) {
    std::string line;
    for (size_t k = 0; k < c.size(); ++k) line += pad(fit(c[k], width[k]), width[k], k < left_cols) + "  ";
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  };
  emit(heads);
  out += rule;
  for (auto& c : cells) emit(c);
  out += rule;
  return out;
}

std::string row_name(const DiffRow& r, bool by_shape) {
  std::string n = printable(r.name);
  if (by_shape && !r.input_shapes.empty()) n = fmt::format("{} {}", n, printable(r.input_shapes));
  return n;
}

// One side's rows: the added or removed section.
std::string one_side_table(const std::vector<const DiffRow*>& rows, bool b_side, bool by_shape) {
  std::vector<std::vector<std::string>> cells;
  for (const DiffRow* r : rows) {
    const DiffSide& s = b_side ? r->b : r->a;
    cells.push_back({row_name(*r, by_shape), kind_name(r->kind), fmt::format("{}", s.count),
                     format_time(double(s.self_cpu_ns)), format_time(double(s.cpu_total_ns)),
                     format_time(double(s.self_device_ns)), format_time(double(s.device_total_ns)),
                     format_bytes(double(s.bytes))});
  }
  return render({"Name", "Kind", "# of Calls", "Self CPU", "CPU total", "Self Device", "Device total", "Bytes"},
                cells, 2);
}

json side_json(const DiffSide& s) {
  return {{"count", s.count},
          {"self_cpu_ns", s.self_cpu_ns},
          {"cpu_total_ns", s.cpu_total_ns},
          {"self_device_ns", s.self_device_ns},
          {"device_total_ns", s.device_total_ns},
          {"bytes", s.bytes},
          {"flops", s.flops},
          {"self_device_memory", s.self_device_memory},
          {"device_memory", s.device_memory}};
}

json totals_json(const ProfileTotals& t) {
  json devices = json::array();
  for (const DeviceInfo& d : t.devices)
    devices.push_back({{"index", d.index}, {"name", d.name}, {"description", d.description},
                       {"num_cores", d.num_cores}});
  return {{"label", t.label},       {"schema_version", t.schema_version},
          {"devices", devices},     {"layers", t.layers},
          {"self_cpu_total_ns", t.self_cpu_ns}, {"self_device_total_ns", t.self_device_ns},
          {"span_ns", t.span_ns},   {"events", t.events},
          {"launches", t.launches}, {"bytes", t.bytes},
          {"flops", t.flops},       {"dropped", t.dropped},
          {"steps", t.steps},
          {"has_memory", t.has_memory},
          {"peak_memory", t.peak_memory}};
}
}  // namespace

std::string ProfileDiff::table(const DiffView& view) const {
  std::vector<DiffRow> rows = select(view);
  std::vector<const DiffRow*> both, added, removed;
  for (const DiffRow& r : rows)
    (r.status == DiffStatus::added ? added : r.status == DiffStatus::removed ? removed : both).push_back(&r);
  auto limit = [&](std::vector<const DiffRow*>& v) {
    size_t n = v.size();
    if (view.row_limit > 0 && int64_t(v.size()) > view.row_limit) v.resize(size_t(view.row_limit));
    return n - v.size();  // rows left out
  };
  auto more = [](size_t n) {
    return n ? fmt::format("({} more rows; --row-limit 0 shows all)\n", n) : std::string();
  };

  std::string out = fmt::format("A: {}\nB: {}\n", printable(a_.label), printable(b_.label));
  for (const std::string& w : warnings_) out += "Warning: " + w + "\n";
  out += "\n";

  size_t left = limit(both);
  if (both.empty()) {
    out += "No rows on both sides.\n";
  } else {
    std::vector<std::vector<std::string>> cells;
    for (const DiffRow* r : both) {
      DiffSide d = r->delta();
      cells.push_back({row_name(*r, by_shape_), kind_name(r->kind), fmt::format("{}", r->a.count),
                       fmt::format("{}", r->b.count), format_time(double(r->a.self_cpu_ns)),
                       format_time(double(r->b.self_cpu_ns)), signed_time(double(d.self_cpu_ns)),
                       format_time(double(r->a.self_device_ns)), format_time(double(r->b.self_device_ns)),
                       signed_time(double(d.self_device_ns)), change_pct(double(r->a.self_device_ns), double(r->b.self_device_ns)),
                       signed_time(double(d.device_total_ns)), format_bytes(double(r->a.bytes)),
                       format_bytes(double(r->b.bytes))});
    }
    out += render({"Name", "Kind", "Calls A", "Calls B", "Self CPU A", "Self CPU B", "Δ Self CPU", "Self Device A",
                   "Self Device B", "Δ Self Device", "Δ %", "Δ Device total", "Bytes A", "Bytes B"},
                  cells, 2);
    out += more(left);
  }
  if (int64_t h = hidden(view))
    out += fmt::format("({} rows with time changes under {} hidden)\n", h, format_time(double(view.min_delta_ns)));
  if (!added.empty()) {
    size_t n = added.size(), rest = limit(added);
    out += fmt::format("\nAdded in B ({}):\n", n) + one_side_table(added, true, by_shape_) + more(rest);
  }
  if (!removed.empty()) {
    size_t n = removed.size(), rest = limit(removed);
    out += fmt::format("\nRemoved from A ({}):\n", n) + one_side_table(removed, false, by_shape_) + more(rest);
  }

  // Totals: the whole profiles, whatever rows the view shows.
  std::vector<std::vector<std::string>> cells;
  auto time_line = [&](const char* what, double x, double y) {
    cells.push_back({what, format_time(x), format_time(y), signed_time(y - x), change_pct(x, y)});
  };
  auto count_line = [&](const char* what, int64_t x, int64_t y) {
    cells.push_back({what, fmt::format("{}", x), fmt::format("{}", y), signed_count(y - x),
                     change_pct(double(x), double(y))});
  };
  time_line("Self CPU time total", double(a_.self_cpu_ns), double(b_.self_cpu_ns));
  time_line("Self Device time total", double(a_.self_device_ns), double(b_.self_device_ns));
  time_line("Wall span", double(a_.span_ns), double(b_.span_ns));
  if (a_.steps || b_.steps) count_line("Steps (top-level ranges)", a_.steps, b_.steps);
  if (a_.steps && b_.steps) {
    time_line("Self CPU per step", double(a_.self_cpu_ns) / double(a_.steps), double(b_.self_cpu_ns) / double(b_.steps));
    time_line("Self Device per step", double(a_.self_device_ns) / double(a_.steps),
              double(b_.self_device_ns) / double(b_.steps));
  }
  count_line("Kernel launches", a_.launches, b_.launches);
  cells.push_back({"Bytes moved", format_bytes(double(a_.bytes)), format_bytes(double(b_.bytes)),
                   signed_bytes(double(b_.bytes - a_.bytes)), change_pct(double(a_.bytes), double(b_.bytes))});
  if (a_.flops || b_.flops) count_line("FLOPs", a_.flops, b_.flops);
  if (a_.has_memory || b_.has_memory)
    cells.push_back({"Peak device memory", a_.has_memory ? format_bytes(double(a_.peak_memory)) : "-",
                     b_.has_memory ? format_bytes(double(b_.peak_memory)) : "-",
                     a_.has_memory && b_.has_memory ? signed_bytes(double(b_.peak_memory - a_.peak_memory)) : "-",
                     a_.has_memory && b_.has_memory ? change_pct(double(a_.peak_memory), double(b_.peak_memory)) : "-"});
  count_line("Events", a_.events, b_.events);
  if (a_.dropped || b_.dropped) count_line("Dropped events", a_.dropped, b_.dropped);
  out += "\nTotals:\n" + render({"", "A", "B", "Δ", "Δ %"}, cells);
  // The per-step figures when the step counts differ, else the totals.
  double da = double(a_.self_device_ns), db = double(b_.self_device_ns);
  if (a_.steps && b_.steps) da /= double(a_.steps), db /= double(b_.steps);
  if (da > 0 && db > 0)
    out += fmt::format("B / A Self Device time{}: {:.2f}x ({})\n", a_.steps && b_.steps ? " per step" : "", db / da,
                       db < da ? fmt::format("B {:.2f}x faster", da / db)
                               : db > da ? fmt::format("B {:.2f}x slower", db / da) : "equal");
  return out;
}

std::string ProfileDiff::to_json(const DiffView& view) const {
  json j;
  j["a"] = totals_json(a_);
  j["b"] = totals_json(b_);
  j["delta"] = {{"self_cpu_total_ns", b_.self_cpu_ns - a_.self_cpu_ns},
                {"self_device_total_ns", b_.self_device_ns - a_.self_device_ns},
                {"span_ns", b_.span_ns - a_.span_ns},
                {"events", b_.events - a_.events},
                {"launches", b_.launches - a_.launches},
                {"bytes", b_.bytes - a_.bytes},
                {"flops", b_.flops - a_.flops},
                {"dropped", b_.dropped - a_.dropped},
                {"steps", b_.steps - a_.steps},
                {"peak_memory", b_.peak_memory - a_.peak_memory}};
  j["warnings"] = warnings_;
  j["group_by_input_shape"] = by_shape_;
  j["sort_by"] = view.sort_by;
  j["min_delta_ns"] = view.min_delta_ns;
  j["hidden"] = hidden(view);
  std::map<std::string, int64_t> counts = {{"same", 0}, {"changed", 0}, {"added", 0}, {"removed", 0}};
  j["rows"] = json::array();
  for (const DiffRow& r : select(view)) {
    ++counts[status_name(r.status)];
    j["rows"].push_back({{"name", r.name},
                         {"kind", kind_name(r.kind)},
                         {"input_shapes", r.input_shapes},
                         {"status", status_name(r.status)},
                         {"a", side_json(r.a)},
                         {"b", side_json(r.b)},
                         {"delta", side_json(r.delta())}});
  }
  j["counts"] = counts;
  // Names are kept byte for byte; an ill-formed UTF-8 sequence becomes U+FFFD.
  return j.dump(2, ' ', false, json::error_handler_t::replace);
}

}  // namespace opscope::analysis
