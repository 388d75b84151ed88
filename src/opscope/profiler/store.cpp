#include "opscope/profiler/store.h"

#include <sqlite3.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <string_view>
#include <thread>

#include "opscope/core/error.h"
#include "opscope/profiler/atomic_file.h"
#include "opscope/profiler/chrome_trace.h"

namespace opscope::prof {
namespace fs = std::filesystem;
namespace {

// Schema version 1; docs/PROFILE_SCHEMA.md explains every column. The two partial
// indexes serve the correlation joins; kept up during the insert, they cost less than
// building them afterwards (two more scans of every row).
constexpr const char* kTablesSql = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE devices(device INTEGER NOT NULL, name TEXT NOT NULL, description TEXT NOT NULL,
                     num_cores INTEGER NOT NULL);
CREATE TABLE tracks(track INTEGER PRIMARY KEY, kind TEXT NOT NULL, name TEXT NOT NULL,
                    os_tid INTEGER NOT NULL, device INTEGER NOT NULL, core INTEGER NOT NULL,
                    dropped INTEGER NOT NULL);
CREATE TABLE events(event INTEGER PRIMARY KEY, kind TEXT NOT NULL, t0 INTEGER NOT NULL,
                    t1 INTEGER NOT NULL, id INTEGER NOT NULL, parent INTEGER NOT NULL,
                    bytes INTEGER NOT NULL, flops INTEGER NOT NULL, value INTEGER NOT NULL,
                    name TEXT NOT NULL, track INTEGER NOT NULL, device INTEGER NOT NULL,
                    stream INTEGER NOT NULL, shapes TEXT, source TEXT);
CREATE INDEX events_launch ON events(id) WHERE kind = 'launch';
CREATE INDEX events_op ON events(id) WHERE kind IN ('op', 'range');
CREATE VIEW kernel_chain AS
SELECT k.event AS kernel_event, k.name AS kernel, k.device AS device, tr.core AS core,
       k.t0 AS t0, k.t1 AS t1, k.t1 - k.t0 AS dur, k.bytes AS bytes, k.flops AS flops,
       k.id AS launch_id, l.event AS launch_event, l.stream AS stream,
       l.t0 AS launch_t0, l.t1 AS launch_t1,
       k.parent AS correlation_id, o.event AS op_event, o.name AS op, o.shapes AS input_shapes
FROM events AS k
LEFT JOIN tracks AS tr ON tr.track = k.track
LEFT JOIN events AS l ON l.kind = 'launch' AND l.id = k.id
LEFT JOIN events AS o ON o.kind IN ('op', 'range') AND o.id = k.parent
WHERE k.kind = 'kernel';
)sql";

constexpr std::array kRequiredTables = {"meta", "devices", "tracks", "events"};

const char* track_kind_name(Track::Kind k) {
  return k == Track::Kind::host_thread ? "host_thread" : "device_core";
}

// ---- small RAII wrappers over the C API ----

class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) {
    if (sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) != SQLITE_OK) s_ = nullptr;
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  explicit operator bool() const { return s_ != nullptr; }
  sqlite3_stmt* get() const { return s_; }

  void i64(int col, int64_t v) { sqlite3_bind_int64(s_, col, v); }
  void u64(int col, uint64_t v) { sqlite3_bind_int64(s_, col, int64_t(v)); }  // bit pattern
  // Binds without copying: `v` must outlive the next step().
  void text(int col, std::string_view v) {
    sqlite3_bind_text(s_, col, v.data(), int(v.size()), SQLITE_STATIC);
  }
  void text_or_null(int col, std::string_view v) {
    if (v.empty())
      sqlite3_bind_null(s_, col);
    else
      text(col, v);
  }
  int step() { return sqlite3_step(s_); }
  int reset() { return sqlite3_reset(s_); }

 private:
  sqlite3_stmt* s_ = nullptr;
};

std::string column_text(sqlite3_stmt* s, int col) {
  auto p = reinterpret_cast<const char*>(sqlite3_column_text(s, col));
  return p ? std::string(p, size_t(sqlite3_column_bytes(s, col))) : std::string();
}

// "[profile] <path>: <what>", with SQLite's own words for damaged files.
[[noreturn]] void db_fail(const std::string& path, sqlite3* db, int rc, std::string_view doing) {
  int code = rc & 0xff;
  const char* msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  if (code == SQLITE_NOTADB) fail("profile", "{}: not a SQLite database ({})", path, msg);
  if (code == SQLITE_CORRUPT) fail("profile", "{}: corrupt database ({})", path, msg);
  fail("profile", "{}: {} failed ({})", path, doing, msg);
}

void exec(sqlite3* db, const std::string& path, const char* sql, std::string_view doing) {
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  sqlite3_free(err);
  if (rc != SQLITE_OK) db_fail(path, db, rc, doing);
}

struct Connection {
  sqlite3* db = nullptr;
  ~Connection() { sqlite3_close_v2(db); }
};

// ---- writing ----

void write_db(const Trace& t, const std::string& file, const std::string& shown) {
  Connection c;
  // NOMUTEX: this connection is private to this call, no other thread uses it.
  int rc = sqlite3_open_v2(file.c_str(), &c.db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) db_fail(shown, c.db, rc, "creating the database");
  sqlite3* db = c.db;
  // A fresh file renamed into place only when complete: no journal, no syncs until then.
  exec(db, shown,
       "PRAGMA page_size = 16384; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;"
       "PRAGMA locking_mode = EXCLUSIVE; PRAGMA temp_store = MEMORY;"
       "PRAGMA cache_size = -16384;",
       "setting up the database");
  exec(db, shown, kTablesSql, "creating the tables");
  exec(db, shown, "BEGIN", "starting the transaction");

  auto check = [&](Stmt& s, std::string_view doing) {
    int r = s.step();
    if (r != SQLITE_DONE) db_fail(shown, db, r, doing);
    s.reset();
  };
  {
    Stmt s(db, "INSERT INTO meta(key, value) VALUES(?1, ?2)");
    if (!s) db_fail(shown, db, sqlite3_errcode(db), "preparing the meta insert");
    auto put = [&](const char* k, const std::string& v) {
      s.text(1, k);
      s.text(2, v);
      check(s, "writing meta");
    };
    put("schema_version", std::to_string(t.schema_version));
    put("base_time_ns", std::to_string(t.base_time_ns));
    put("wall_time_ns", std::to_string(t.wall_time_ns));
    put("config_json", t.config_json);
    put("dropped", std::to_string(t.dropped));
    put("event_count", std::to_string(t.events.size()));
    put("producer", "opscope");
  }
  {
    Stmt s(db, "INSERT INTO devices VALUES(?1, ?2, ?3, ?4)");
    if (!s) db_fail(shown, db, sqlite3_errcode(db), "preparing the devices insert");
    for (const DeviceInfo& d : t.devices) {
      s.i64(1, d.index);
      s.text(2, d.name);
      s.text(3, d.description);
      s.i64(4, d.num_cores);
      check(s, "writing devices");
    }
  }
  {
    Stmt s(db, "INSERT INTO tracks VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    if (!s) db_fail(shown, db, sqlite3_errcode(db), "preparing the tracks insert");
    for (size_t i = 0; i < t.tracks.size(); ++i) {
      const Track& tr = t.tracks[i];
      s.i64(1, int64_t(i));
      s.text(2, track_kind_name(tr.kind));
      s.text(3, tr.name);
      s.i64(4, tr.os_tid);
      s.i64(5, tr.device);
      s.i64(6, tr.core);
      s.i64(7, i < t.dropped_per_track.size() ? t.dropped_per_track[i] : 0);
      check(s, "writing tracks");
    }
  }
  {
    // Rows go in batches of kBatch per statement: running one statement per row cost
    // a fifth more (instructions counted with callgrind).
    constexpr int kCols = 15, kBatch = 64;
    std::string one = "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", many = "INSERT INTO events VALUES" + one;
    for (int r = 1; r < kBatch; ++r) many += "," + one;
    Stmt batch(db, many.c_str());
    Stmt single(db, ("INSERT INTO events VALUES" + one).c_str());
    if (!batch || !single) db_fail(shown, db, sqlite3_errcode(db), "preparing the events insert");
    auto bind = [&](Stmt& s, int row, size_t i) {
      const TraceEvent& e = t.events[i];
      if (e.track < 0 || size_t(e.track) >= t.tracks.size())  // a reader could not place it
        fail("profile", "{}: event {} ({} '{}') has track {} but the trace has {} tracks", shown, i,
             kind_name(e.kind), e.name, e.track, t.tracks.size());
      int c = row * kCols;
      if (i == 0)
        s.i64(c + 1, 0);
      else
        sqlite3_bind_null(s.get(), c + 1);  // rowid max + 1 == i: SQLite's cheaper append
      s.text(c + 2, kind_name(e.kind));
      s.i64(c + 3, e.t0);
      s.i64(c + 4, e.t1);
      s.u64(c + 5, e.id);
      s.u64(c + 6, e.parent);
      s.i64(c + 7, e.bytes);
      s.i64(c + 8, e.flops);
      s.i64(c + 9, e.value);
      s.text(c + 10, e.name);
      s.i64(c + 11, e.track);
      s.i64(c + 12, e.device);
      s.i64(c + 13, e.stream);
      s.text_or_null(c + 14, e.shapes);
      s.text_or_null(c + 15, e.source);
    };
    size_t i = 0, n = t.events.size();
    for (; i + kBatch <= n; i += kBatch) {
      for (int r = 0; r < kBatch; ++r) bind(batch, r, i + size_t(r));
      check(batch, "writing events");
    }
    for (; i < n; ++i) {
      bind(single, 0, i);
      check(single, "writing events");
    }
  }
  exec(db, shown, "COMMIT", "committing");
  rc = sqlite3_close(db);
  c.db = nullptr;
  if (rc != SQLITE_OK) db_fail(shown, nullptr, rc, "closing the database");
}

// ---- reading ----

std::string resolve_db_path(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::string db = (fs::path(path) / kProfileDbFile).string();
    if (!fs::exists(db, ec)) fail("profile", "{}: no such file (is {} a saved profile folder?)", db, path);
    return db;
  }
  if (!fs::exists(path, ec)) fail("profile", "{}: no such file or folder", path);
  return path;
}

uint32_t be(const unsigned char* p, int n) {
  uint32_t v = 0;
  for (int i = 0; i < n; ++i) v = v << 8 | p[i];
  return v;
}

// Checks the 100-byte SQLite header before SQLite sees the file, so a cut-off copy is
// reported as truncated rather than as whatever page SQLite trips over first.
void check_header(const std::string& path) {
  std::error_code ec;
  uint64_t size = fs::file_size(path, ec);
  if (ec) fail("profile", "{}: cannot read ({})", path, ec.message());
  if (size == 0) fail("profile", "{}: empty file (not a profile database)", path);
  unsigned char h[100] = {};
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(h), sizeof h);
  size_t got = size_t(in.gcount());
  static constexpr char kMagic[] = "SQLite format 3";  // + its NUL: 16 bytes
  if (got < 16 || std::memcmp(h, kMagic, 16) != 0)
    fail("profile", "{}: not a SQLite database (no SQLite header)", path);
  if (got < 100) fail("profile", "{}: truncated ({} bytes, shorter than a SQLite header)", path, size);
  uint64_t page = be(h + 16, 2) == 1 ? 65536 : be(h + 16, 2);
  uint64_t pages = be(h + 28, 4);
  bool size_valid = pages != 0 && be(h + 24, 4) == be(h + 92, 4);
  if (size_valid && size < pages * page)
    fail("profile", "{}: truncated ({} bytes, its header says {})", path, size, pages * page);
}

int64_t parse_int(const std::string& path, const std::string& key, const std::string& v) {
  int64_t x = 0;
  auto r = std::from_chars(v.data(), v.data() + v.size(), x);
  if (r.ec != std::errc() || r.ptr != v.data() + v.size())
    fail("profile", "{}: meta '{}' is not an integer ('{}')", path, key, v);
  return x;
}

std::map<std::string, std::string> read_meta(sqlite3* db, const std::string& path) {
  Stmt s(db, "SELECT key, value FROM meta");
  if (!s) db_fail(path, db, sqlite3_errcode(db), "reading meta");
  std::map<std::string, std::string> m;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) m[column_text(s.get(), 0)] = column_text(s.get(), 1);
  if (rc != SQLITE_DONE) db_fail(path, db, rc, "reading meta");
  return m;
}

bool parse_kind(std::string_view name, EventKind& k) {
  for (int i = 0; i <= int(EventKind::kernel); ++i)
    if (name == kind_name(EventKind(i))) {
      k = EventKind(i);
      return true;
    }
  return false;
}

}  // namespace

// ---- ProfileDb ----

ProfileDb::ProfileDb(const std::string& path) : path_(resolve_db_path(path)) {
  check_header(path_);
  int rc = sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_close_v2(db_);
    db_ = nullptr;
    db_fail(path_, nullptr, rc, "opening");
  }
  try {
    std::map<std::string, int> have;
    {
      Stmt s(db_, "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')");
      if (!s) db_fail(path_, db_, sqlite3_errcode(db_), "reading the schema");
      int r;
      while ((r = s.step()) == SQLITE_ROW) have[column_text(s.get(), 0)] = 1;
      if (r != SQLITE_DONE) db_fail(path_, db_, r, "reading the schema");
    }
    if (!have.count("meta")) fail("profile", "{}: not an opscope profile (no table 'meta')", path_);
    auto meta = read_meta(db_, path_);
    auto v = meta.find("schema_version");
    if (v == meta.end())
      fail("profile", "{}: not an opscope profile (no schema_version in table 'meta')", path_);
    int64_t version = parse_int(path_, "schema_version", v->second);
    if (version > kSchemaVersion)
      fail("profile", "{}: schema version {} is newer than this opscope reads ({}); use a newer opscope",
           path_, version, kSchemaVersion);
    if (version < 1) fail("profile", "{}: invalid schema version {}", path_, version);
    schema_version_ = int(version);
    for (const char* t : kRequiredTables)
      if (!have.count(t)) fail("profile", "{}: missing table '{}'", path_, t);
  } catch (...) {
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw;
  }
}

ProfileDb::~ProfileDb() { sqlite3_close_v2(db_); }

// ---- public functions ----

void save_profile_db(const Trace& trace, const std::string& db_path) {
  AtomicPath out(db_path);
  write_db(trace, out.temp(), db_path);
  out.commit("profile");
}

void export_profile(const Trace& trace, const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail("profile", "{}: cannot create the folder ({})", dir, ec.message());
  if (!fs::is_directory(dir, ec)) fail("profile", "{}: not a folder", dir);
  if (::access(dir.c_str(), W_OK) != 0)
    fail("profile", "{}: the folder is not writable ({})", dir, std::strerror(errno));
  // Both files complete as temp files first; only then are they renamed into place.
  // They are written side by side: the trace is only read, each writer has its own file.
  std::string db_path = (fs::path(dir) / kProfileDbFile).string();
  AtomicPath db(db_path);
  AtomicFile json((fs::path(dir) / kTraceJsonFile).string(), "profile");
  std::exception_ptr db_error;
  std::thread db_writer([&] {
    try {
      write_db(trace, db.temp(), db_path);
    } catch (...) {
      db_error = std::current_exception();
    }
  });
  try {
    write_chrome_trace(trace, json.file());
    json.close();
  } catch (...) {
    db_writer.join();
    throw;
  }
  db_writer.join();
  if (db_error) std::rethrow_exception(db_error);
  json.commit();
  db.commit("profile");
}

Trace load_profile(const std::string& path) {
  ProfileDb pdb(path);
  sqlite3* db = pdb.handle();
  const std::string& p = pdb.path();
  Trace t;
  auto meta = read_meta(db, p);
  auto get_int = [&](const char* key, bool required) -> int64_t {
    auto it = meta.find(key);
    if (it == meta.end()) {
      if (required) fail("profile", "{}: meta '{}' is missing", p, key);
      return -1;
    }
    return parse_int(p, key, it->second);
  };
  t.schema_version = pdb.schema_version();
  t.base_time_ns = get_int("base_time_ns", true);
  t.wall_time_ns = get_int("wall_time_ns", true);
  t.dropped = get_int("dropped", true);
  int64_t expected_events = get_int("event_count", false);
  if (auto it = meta.find("config_json"); it != meta.end()) t.config_json = it->second;

  auto rows = [&](const char* sql, const char* what, auto&& row) {
    Stmt s(db, sql);
    if (!s) db_fail(p, db, sqlite3_errcode(db), std::string("reading ") + what);
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) row(s.get());
    if (rc != SQLITE_DONE) db_fail(p, db, rc, std::string("reading ") + what);
  };
  rows("SELECT device, name, description, num_cores FROM devices ORDER BY rowid", "devices",
       [&](sqlite3_stmt* s) {
         DeviceInfo d;
         d.index = sqlite3_column_int(s, 0);
         d.name = column_text(s, 1);
         d.description = column_text(s, 2);
         d.num_cores = sqlite3_column_int(s, 3);
         t.devices.push_back(std::move(d));
       });
  rows("SELECT track, kind, name, os_tid, device, core, dropped FROM tracks ORDER BY track", "tracks",
       [&](sqlite3_stmt* s) {
         if (sqlite3_column_int64(s, 0) != int64_t(t.tracks.size()))
           fail("profile", "{}: corrupt: tracks are not numbered 0..n-1", p);
         Track tr;
         std::string kind = column_text(s, 1);
         if (kind == "host_thread")
           tr.kind = Track::Kind::host_thread;
         else if (kind == "device_core")
           tr.kind = Track::Kind::device_core;
         else
           fail("profile", "{}: track {} has an unknown kind '{}'", p, t.tracks.size(), kind);
         tr.name = column_text(s, 2);
         tr.os_tid = sqlite3_column_int64(s, 3);
         tr.device = sqlite3_column_int(s, 4);
         tr.core = sqlite3_column_int(s, 5);
         t.tracks.push_back(std::move(tr));
         t.dropped_per_track.push_back(sqlite3_column_int64(s, 6));
       });
  if (expected_events > 0) t.events.reserve(size_t(expected_events));
  rows("SELECT kind, t0, t1, id, parent, bytes, flops, value, name, track, device, stream, shapes, "
       "source FROM events ORDER BY event",
       "events", [&](sqlite3_stmt* s) {
         TraceEvent e;
         auto kind = std::string_view(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)),
                                      size_t(sqlite3_column_bytes(s, 0)));
         if (!parse_kind(kind, e.kind))
           fail("profile", "{}: event {} has an unknown kind '{}'", p, t.events.size(), kind);
         e.t0 = sqlite3_column_int64(s, 1);
         e.t1 = sqlite3_column_int64(s, 2);
         e.id = uint64_t(sqlite3_column_int64(s, 3));
         e.parent = uint64_t(sqlite3_column_int64(s, 4));
         e.bytes = sqlite3_column_int64(s, 5);
         e.flops = sqlite3_column_int64(s, 6);
         e.value = sqlite3_column_int64(s, 7);
         e.name = column_text(s, 8);
         e.track = sqlite3_column_int(s, 9);
         e.device = sqlite3_column_int(s, 10);
         e.stream = sqlite3_column_int(s, 11);
         e.shapes = column_text(s, 12);
         e.source = column_text(s, 13);
         if (e.track < 0 || size_t(e.track) >= t.tracks.size())
           fail("profile", "{}: corrupt: event {} has track {} but there are {} tracks", p,
                t.events.size(), e.track, t.tracks.size());
         t.events.push_back(std::move(e));
       });
  if (expected_events >= 0 && int64_t(t.events.size()) != expected_events)
    fail("profile", "{}: truncated: {} events, its meta says {}", p, t.events.size(), expected_events);
  return t;
}

}  // namespace opscope::prof
