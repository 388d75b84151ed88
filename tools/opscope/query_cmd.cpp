// opscope query DIR "SQL" [--json]: runs one read-only SQL statement on a saved profile's
// system trace (profile.db, schema in docs/PROFILE_SCHEMA.md) and prints the rows as an
// aligned text table, or as a JSON array of objects.
#include <fmt/format.h>
#include <sqlite3.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "opscope/core/error.h"
#include "opscope/profiler/chrome_trace.h"
#include "opscope/profiler/store.h"

namespace opscope::cli {
namespace {

struct QueryArgs {
  std::string dir, sql;
  bool json = false;
};

struct Cell {
  std::string text;  // as shown in the table; JSON literal in json mode
  bool numeric = false;
};

struct Result {
  std::vector<std::string> columns;
  std::vector<std::vector<Cell>> rows;
};

// Control characters (newlines in names, ...) shown escaped, so a row stays one line.
std::string printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
    else out += char(c);
  }
  return out;
}

// Display width: code points (continuation bytes 10xxxxxx do not count).
size_t width(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string hex(const void* p, int n) {
  std::string out;
  auto b = static_cast<const unsigned char*>(p);
  for (int i = 0; i < n; ++i) out += fmt::format("{:02x}", b[i]);
  return out;
}

Cell cell(sqlite3_stmt* s, int col, bool json) {
  switch (sqlite3_column_type(s, col)) {
    case SQLITE_NULL: return {json ? "null" : "NULL", false};
    case SQLITE_INTEGER: return {std::to_string(sqlite3_column_int64(s, col)), true};
    case SQLITE_FLOAT: {
      double v = sqlite3_column_double(s, col);
      if (json && !std::isfinite(v)) return {"null", true};
      return {fmt::format("{}", v), true};
    }
    case SQLITE_BLOB: {
      std::string h = hex(sqlite3_column_blob(s, col), sqlite3_column_bytes(s, col));
      if (!json) return {"x'" + h + "'", false};
      std::string out;
      prof::append_json_string(out, h);
      return {out, false};
    }
    default: {
      std::string_view v(reinterpret_cast<const char*>(sqlite3_column_text(s, col)),
                         size_t(sqlite3_column_bytes(s, col)));
      if (!json) return {printable(v), false};
      std::string out;
      prof::append_json_string(out, v);
      return {out, false};
    }
  }
}

Result run(const prof::ProfileDb& db, const std::string& sql, bool json) {
  sqlite3_stmt* raw = nullptr;
  const char* tail = nullptr;
  if (sqlite3_prepare_v2(db.handle(), sql.c_str(), int(sql.size()), &raw, &tail) != SQLITE_OK)
    fail("query", "{}", sqlite3_errmsg(db.handle()));
  std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> stmt(raw, sqlite3_finalize);
  if (!stmt) fail("query", "no SQL statement given");
  for (const char* p = tail; p && *p; ++p)
    if (!std::isspace(static_cast<unsigned char>(*p)) && *p != ';')
      fail("query", "one SQL statement at a time (extra text: '{}')", printable(p));
  Result r;
  int ncol = sqlite3_column_count(raw);
  for (int c = 0; c < ncol; ++c) r.columns.push_back(sqlite3_column_name(raw, c));
  int rc;
  while ((rc = sqlite3_step(raw)) == SQLITE_ROW) {
    std::vector<Cell> row;
    row.reserve(size_t(ncol));
    for (int c = 0; c < ncol; ++c) row.push_back(cell(raw, c, json));
    r.rows.push_back(std::move(row));
  }
  if (rc != SQLITE_DONE) fail("query", "{}", sqlite3_errmsg(db.handle()));
  return r;
}

void print_table(const Result& r) {
  std::vector<std::string> head;
  std::vector<size_t> w;
  for (const std::string& c : r.columns) {
    head.push_back(printable(c));
    w.push_back(width(head.back()));
  }
  for (const auto& row : r.rows)
    for (size_t c = 0; c < row.size(); ++c) w[c] = std::max(w[c], width(row[c].text));
  std::string out;
  auto pad = [&](const std::string& s, size_t c, bool right) {
    std::string fill(w[c] - width(s), ' ');
    out += right ? fill + s : s + fill;
    out += c + 1 < w.size() ? "  " : "";
  };
  for (size_t c = 0; c < head.size(); ++c) pad(head[c], c, false);
  out += '\n';
  for (size_t c = 0; c < w.size(); ++c) pad(std::string(w[c], '-'), c, false);
  out += '\n';
  for (const auto& row : r.rows) {
    for (size_t c = 0; c < row.size(); ++c) pad(row[c].text, c, row[c].numeric);
    out += '\n';
  }
  // Trailing spaces of the last column are noise.
  std::string trimmed;
  size_t start = 0;
  while (start < out.size()) {
    size_t end = out.find('\n', start);
    size_t last = out.find_last_not_of(' ', end - 1);
    trimmed.append(out, start, (last == std::string::npos || last < start ? start : last + 1) - start);
    trimmed += '\n';
    start = end + 1;
  }
  std::fputs(trimmed.c_str(), stdout);
  std::printf("(%zu row%s)\n", r.rows.size(), r.rows.size() == 1 ? "" : "s");
}

void print_json(const Result& r) {
  std::string out = "[";
  for (size_t i = 0; i < r.rows.size(); ++i) {
    out += i ? ",\n {" : "\n {";
    for (size_t c = 0; c < r.columns.size(); ++c) {
      if (c) out += ", ";
      prof::append_json_string(out, r.columns[c]);
      out += ": ";
      out += r.rows[i][c].text;
    }
    out += '}';
  }
  out += r.rows.empty() ? "]\n" : "\n]\n";
  std::fputs(out.c_str(), stdout);
}

}  // namespace

void add_query_command(CLI::App& app) {
  auto args = std::make_shared<QueryArgs>();
  CLI::App* cmd = app.add_subcommand(
      "query", "Run a read-only SQL query on a saved profile (tables: meta, devices, tracks, "
               "events; view: kernel_chain; see docs/PROFILE_SCHEMA.md)");
  cmd->add_option("dir", args->dir, "Profile folder (with profile.db) or profile.db file")->required();
  cmd->add_option("sql", args->sql, "One SQL statement")->required();
  cmd->add_flag("--json", args->json, "Print the rows as a JSON array of objects");
  cmd->callback([args] {
    prof::ProfileDb db(args->dir);
    Result r = run(db, args->sql, args->json);
    if (args->json)
      print_json(r);
    else
      print_table(r);
  });
}

}  // namespace opscope::cli
