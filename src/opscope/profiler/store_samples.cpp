#include "opscope/profiler/store_samples.h"

#include <sqlite3.h>

#include "opscope/core/error.h"

namespace opscope::prof::detail {

namespace {

// Added in schema version 1 (old readers ignore the tables). sample_chain joins a sample
// to its code and, through its launch (runtime layer), to the kernel and the op.
constexpr const char* kSamplesSql = R"sql(
CREATE TABLE code_modules(module INTEGER PRIMARY KEY, path TEXT NOT NULL, build_id TEXT NOT NULL);
CREATE TABLE code_sites(site INTEGER PRIMARY KEY, module INTEGER NOT NULL, address INTEGER NOT NULL,
                        function TEXT NOT NULL, file TEXT NOT NULL, line INTEGER NOT NULL);
CREATE TABLE samples(t INTEGER NOT NULL, track INTEGER NOT NULL, site INTEGER NOT NULL, launch INTEGER NOT NULL);
CREATE VIEW sample_chain AS
SELECT s.t AS t, s.track AS track, tr.core AS core, s.launch AS launch_id, l.name AS kernel, o.name AS op,
       c.function AS function, c.file AS file, c.line AS line, c.address AS address, m.path AS module
FROM samples AS s
JOIN code_sites AS c ON c.site = s.site
JOIN code_modules AS m ON m.module = c.module
LEFT JOIN tracks AS tr ON tr.track = s.track
LEFT JOIN events AS l ON l.kind = 'launch' AND l.id = s.launch
LEFT JOIN events AS o ON o.kind IN ('op', 'range') AND o.id = l.parent;
)sql";

[[noreturn]] void sql_fail(sqlite3* db, const std::string& path, const char* doing) {
  fail("profile", "{}: {} failed ({})", path, doing, sqlite3_errmsg(db));
}

struct Stmt {
  sqlite3_stmt* s = nullptr;
  Stmt(sqlite3* db, const char* sql, const std::string& path) {
    if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) != SQLITE_OK) sql_fail(db, path, "preparing the samples' tables");
  }
  ~Stmt() { sqlite3_finalize(s); }
  void done(sqlite3* db, const std::string& path, const char* doing) {
    if (sqlite3_step(s) != SQLITE_DONE) sql_fail(db, path, doing);
    sqlite3_reset(s);
  }
};

void bind_text(sqlite3_stmt* s, int col, const std::string& v) {
  sqlite3_bind_text(s, col, v.data(), int(v.size()), SQLITE_STATIC);
}

std::string text(sqlite3_stmt* s, int col) {
  auto p = reinterpret_cast<const char*>(sqlite3_column_text(s, col));
  return p ? std::string(p, size_t(sqlite3_column_bytes(s, col))) : std::string();
}

}  // namespace

void write_samples_db(sqlite3* db, const Trace& t, const std::string& shown) {
  if (sqlite3_exec(db, kSamplesSql, nullptr, nullptr, nullptr) != SQLITE_OK)
    sql_fail(db, shown, "creating the samples' tables");
  {
    Stmt s(db, "INSERT INTO code_modules VALUES(?1, ?2, ?3)", shown);
    for (size_t i = 0; i < t.code_modules.size(); ++i) {
      sqlite3_bind_int64(s.s, 1, int64_t(i));
      bind_text(s.s, 2, t.code_modules[i].path);
      bind_text(s.s, 3, t.code_modules[i].build_id);
      s.done(db, shown, "writing code_modules");
    }
  }
  {
    Stmt s(db, "INSERT INTO code_sites VALUES(?1, ?2, ?3, ?4, ?5, ?6)", shown);
    for (size_t i = 0; i < t.code_sites.size(); ++i) {
      const CodeSite& c = t.code_sites[i];
      sqlite3_bind_int64(s.s, 1, int64_t(i));
      sqlite3_bind_int64(s.s, 2, c.module);
      sqlite3_bind_int64(s.s, 3, int64_t(c.address));  // the bits (kernel addresses read back exact)
      bind_text(s.s, 4, c.function);
      bind_text(s.s, 5, c.file);
      sqlite3_bind_int64(s.s, 6, c.line);
      s.done(db, shown, "writing code_sites");
    }
  }
  Stmt s(db, "INSERT INTO samples VALUES(?1, ?2, ?3, ?4)", shown);
  for (const Sample& x : t.samples) {
    sqlite3_bind_int64(s.s, 1, x.t);
    sqlite3_bind_int64(s.s, 2, x.track);
    sqlite3_bind_int64(s.s, 3, x.site);
    sqlite3_bind_int64(s.s, 4, int64_t(x.launch));
    s.done(db, shown, "writing samples");
  }
}

void read_samples_db(sqlite3* db, const std::string& path, Trace& t) {
  bool has = false;
  {
    Stmt q(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'samples'", path);
    has = sqlite3_step(q.s) == SQLITE_ROW;
  }
  if (!has) return;
  auto rows = [&](const char* sql, const char* what, auto&& row) {
    Stmt q(db, sql, path);
    int rc;
    while ((rc = sqlite3_step(q.s)) == SQLITE_ROW) row(q.s);
    if (rc != SQLITE_DONE) sql_fail(db, path, what);
  };
  rows("SELECT module, path, build_id FROM code_modules ORDER BY module", "reading code_modules", [&](sqlite3_stmt* s) {
    if (sqlite3_column_int64(s, 0) != int64_t(t.code_modules.size()))
      fail("profile", "{}: corrupt: code_modules are not numbered 0..n-1", path);
    t.code_modules.push_back({text(s, 1), text(s, 2)});
  });
  rows("SELECT site, module, address, function, file, line FROM code_sites ORDER BY site", "reading code_sites",
       [&](sqlite3_stmt* s) {
         if (sqlite3_column_int64(s, 0) != int64_t(t.code_sites.size()))
           fail("profile", "{}: corrupt: code_sites are not numbered 0..n-1", path);
         CodeSite c;
         c.module = int32_t(sqlite3_column_int64(s, 1));
         if (c.module < 0 || size_t(c.module) >= t.code_modules.size())
           fail("profile", "{}: corrupt: code site {} names module {} of {}", path, t.code_sites.size(), c.module,
                t.code_modules.size());
         c.address = uint64_t(sqlite3_column_int64(s, 2));
         c.function = text(s, 3);
         c.file = text(s, 4);
         c.line = int32_t(sqlite3_column_int64(s, 5));
         t.code_sites.push_back(std::move(c));
       });
  rows("SELECT t, track, site, launch FROM samples ORDER BY rowid", "reading samples", [&](sqlite3_stmt* s) {
    Sample x;
    x.t = sqlite3_column_int64(s, 0);
    x.track = int32_t(sqlite3_column_int64(s, 1));
    x.site = int32_t(sqlite3_column_int64(s, 2));
    x.launch = uint64_t(sqlite3_column_int64(s, 3));
    if (x.site < 0 || size_t(x.site) >= t.code_sites.size() || x.track < 0 || size_t(x.track) >= t.tracks.size())
      fail("profile", "{}: corrupt: sample {} names site {} of {} and track {} of {}", path, t.samples.size(), x.site,
           t.code_sites.size(), x.track, t.tracks.size());
    t.samples.push_back(x);
  });
}

}  // namespace opscope::prof::detail
