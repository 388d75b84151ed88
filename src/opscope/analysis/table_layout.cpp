#include "opscope/analysis/table_layout.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <numeric>

#include "opscope/core/error.h"

namespace opscope::analysis {

namespace {

struct Column {
  const char* head;   // as torch's table (and --wide) prints it
  const char* key;    // for TableLayout::columns / --columns
  const char* brief;  // the header when the table is fitted to a width
  int drop;           // fitting drops the highest first; 0: never dropped
  bool text;          // left-aligned, and never "all zero"
};

// In the table's order. The drop order keeps what a device profile is read for (device
// time, calls, achieved rates) and lets go of what repeats it (percentages, averages).
const Column kColumns[] = {
    {"Name", "name", "Name", 0, true},
    {"Self CPU %", "self_cpu_pct", "Self CPU %", 10, false},
    {"Self CPU", "self_cpu", "Self CPU", 6, false},
    {"CPU total %", "cpu_total_pct", "CPU total %", 12, false},
    {"CPU total", "cpu_total", "CPU total", 5, false},
    {"CPU time avg", "cpu_avg", "CPU avg", 11, false},
    {"Self Device", "self_device", "Self Dev", 0, false},
    {"Self Device %", "self_device_pct", "Self Dev %", 3, false},
    {"Device total", "device_total", "Dev total", 2, false},
    {"Device time avg", "device_avg", "Dev avg", 9, false},
    {"Device Mem", "device_mem", "Dev Mem", 4, false},
    {"Self Device Mem", "self_device_mem", "Self Dev Mem", 8, false},
    {"# of Calls", "calls", "Calls", 0, false},
    {"GB/s", "gbps", "GB/s", 1, false},
    {"GFLOP/s", "gflops", "GFLOP/s", 7, false},
    {"% Roofline", "roofline", "% Roof", 1, false},
    {"Input Shapes", "input_shapes", "Input Shapes", 0, true},
    {"Source Location", "source", "Source Location", 0, true},
    {"Origins", "origins", "Origins", 0, true},
};

constexpr size_t kNameMax = 55, kNameFitted = 40, kNameMin = 20, kTextMax = 80;

const Column& column_of(const std::string& head) {
  for (const Column& c : kColumns)
    if (head == c.head) return c;
  fail("table", "no layout for column '{}'", head);  // a column added to table() but not here
}

const Column* column_by_key(const std::string& key) {
  for (const Column& c : kColumns)
    if (key == c.key) return &c;
  return nullptr;
}

// A cell that shows nothing but zeros ("0.00%", "0.000us", "0 B", ""), or blank; a word
// such as "above roof" is not a zero.
bool shows_zero(const std::string& cell) {
  size_t end = cell.find_last_not_of(" ");
  std::string_view v = end == std::string::npos ? std::string_view() : std::string_view(cell).substr(0, end + 1);
  while (!v.empty() && std::isalpha(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);  // the unit
  return v.find_first_not_of("0.,%+- ") == std::string_view::npos;
}

}  // namespace

std::string table_column_names() {
  std::string out;
  for (const Column& c : kColumns) out += out.empty() ? c.key : std::string(", ") + c.key;
  return out;
}

void check_table_columns(const std::vector<std::string>& columns) {
  for (const std::string& k : columns)
    if (!column_by_key(k)) fail("columns", "unknown column '{}' (expected one of {})", k, table_column_names());
}

ColumnChoice choose_columns(const std::vector<std::string>& heads, const std::vector<std::vector<std::string>>& cells,
                            const TableLayout& layout) {
  check_table_columns(layout.columns);
  const bool fitted = layout.width > 0;
  std::vector<const Column*> col(heads.size());
  for (size_t k = 0; k < heads.size(); ++k) col[k] = &column_of(heads[k]);
  auto natural = [&](size_t k) {
    size_t w = col[k]->text || fitted ? 0 : 12;  // torch's minimum, unless fitting
    w = std::max(w, std::string_view(fitted ? col[k]->brief : col[k]->head).size());
    for (const auto& row : cells) w = std::max(w, row[k].size());
    return std::min(w, k == 0 ? (fitted ? kNameFitted : kNameMax) : col[k]->text ? kTextMax : w);
  };

  std::vector<size_t> shown;
  std::vector<std::string> left_out, zero, missing;
  if (!layout.columns.empty()) {
    shown.push_back(0);
    for (const std::string& key : layout.columns) {
      auto it = std::find_if(heads.begin(), heads.end(), [&](const std::string& h) { return column_of(h).key == key; });
      size_t k = size_t(it - heads.begin());
      if (it == heads.end()) missing.push_back(key);
      else if (std::find(shown.begin(), shown.end(), k) == shown.end()) shown.push_back(k);
    }
  } else {
    for (size_t k = 0; k < heads.size(); ++k) {
      bool all_zero = !col[k]->text && col[k]->drop > 0 && !cells.empty() &&
                      std::all_of(cells.begin(), cells.end(), [&](const auto& row) { return shows_zero(row[k]); });
      if (fitted && all_zero) zero.push_back(col[k]->brief);
      else shown.push_back(k);
    }
  }
  std::vector<size_t> width(heads.size());
  for (size_t k = 0; k < heads.size(); ++k) width[k] = natural(k);
  auto total = [&] {
    return std::accumulate(shown.begin(), shown.end(), size_t(0), [&](size_t s, size_t k) { return s + width[k] + 2; });
  };
  if (fitted && layout.columns.empty()) {
    // The least telling column first, until the table fits; then a narrower Name.
    while (total() > layout.width) {
      auto worst = std::max_element(shown.begin(), shown.end(),
                                    [&](size_t a, size_t b) { return col[a]->drop < col[b]->drop; });
      if (worst == shown.end() || col[*worst]->drop == 0) break;
      left_out.push_back(col[*worst]->brief);
      shown.erase(worst);
    }
    if (total() > layout.width) width[0] = std::max(kNameMin, width[0] - std::min(width[0], total() - layout.width));
  }

  ColumnChoice out;
  for (size_t k : shown) {
    out.shown.push_back(k);
    out.heads.push_back(fitted ? col[k]->brief : col[k]->head);
    out.width.push_back(width[k]);
    out.left.push_back(col[k]->text);
  }
  std::vector<std::string> why;
  if (!left_out.empty()) why.push_back(fmt::format("{} to fit {} characters", fmt::join(left_out, ", "), layout.width));
  if (!zero.empty()) why.push_back(fmt::format("{} (zero in every row)", fmt::join(zero, ", ")));
  if (!missing.empty()) why.push_back(fmt::format("{} (not in this profile)", fmt::join(missing, ", ")));
  if (!why.empty()) out.note = fmt::format("Columns not shown: {}; --wide shows all\n", fmt::join(why, "; "));
  return out;
}

}  // namespace opscope::analysis
