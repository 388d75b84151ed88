#include "opscope/profiler/store.h"

#include <sqlite3.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <latch>
#include <map>
#include <new>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include "opscope/core/error.h"
#include "opscope/profiler/atomic_file.h"
#include "opscope/profiler/chrome_trace.h"
#include "opscope/profiler/store_samples.h"
#include "opscope/profiler/stream_file.h"

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
                    dropped INTEGER NOT NULL, rank INTEGER NOT NULL DEFAULT -1);
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

// ---- the trace's events as a virtual table ----

// What the table-valued function opscope_trace_events(?1) reads: ?1 is bound to this with
// sqlite3_bind_pointer. Rows are the events in order, with the columns of `events`
// (event: 0 for the first row, NULL after it, which SQLite numbers max + 1 cheaply).
struct EventsSource {
  const Trace* trace = nullptr;
  std::optional<size_t> bad_track;  // the first event whose track is out of range
};
constexpr const char* kEventsSourceType = "opscope::prof::EventsSource";

struct EventsCursor : sqlite3_vtab_cursor {
  EventsSource* source = nullptr;
  size_t i = 0;
};

// The row under the cursor, checked; false (and an error for SQLite) if it is bad.
bool check_row(EventsCursor* c) {
  const Trace& t = *c->source->trace;
  if (c->i >= t.events.size()) return true;
  int32_t track = t.events[c->i].track;
  if (track >= 0 && size_t(track) < t.tracks.size()) return true;
  c->source->bad_track = c->i;
  return false;
}

sqlite3_module events_module() {
  sqlite3_module m{};
  m.xConnect = [](sqlite3* db, void*, int, const char* const*, sqlite3_vtab** out, char**) {
    int rc = sqlite3_declare_vtab(db,
                                  "CREATE TABLE x(event, kind, t0, t1, id, parent, bytes, flops, value, name, "
                                  "track, device, stream, shapes, source, source_ptr HIDDEN)");
    if (rc != SQLITE_OK) return rc;
    *out = static_cast<sqlite3_vtab*>(sqlite3_malloc(sizeof(sqlite3_vtab)));
    if (!*out) return SQLITE_NOMEM;
    **out = sqlite3_vtab{};
    return SQLITE_OK;
  };
  m.xDisconnect = [](sqlite3_vtab* v) {
    sqlite3_free(v);
    return SQLITE_OK;
  };
  m.xBestIndex = [](sqlite3_vtab*, sqlite3_index_info* info) {
    for (int k = 0; k < info->nConstraint; ++k) {
      const auto& c = info->aConstraint[k];
      if (c.iColumn == 15 && c.op == SQLITE_INDEX_CONSTRAINT_EQ && c.usable) {
        info->aConstraintUsage[k].argvIndex = 1;
        info->aConstraintUsage[k].omit = 1;
        info->estimatedCost = 1;
        return SQLITE_OK;
      }
    }
    return SQLITE_CONSTRAINT;  // only as opscope_trace_events(?1)
  };
  m.xOpen = [](sqlite3_vtab*, sqlite3_vtab_cursor** out) {
    auto* c = static_cast<EventsCursor*>(sqlite3_malloc(sizeof(EventsCursor)));
    if (!c) return SQLITE_NOMEM;
    new (c) EventsCursor();
    *out = c;
    return SQLITE_OK;
  };
  m.xClose = [](sqlite3_vtab_cursor* c) {
    sqlite3_free(c);
    return SQLITE_OK;
  };
  m.xFilter = [](sqlite3_vtab_cursor* cur, int, const char*, int argc, sqlite3_value** argv) {
    auto* c = static_cast<EventsCursor*>(cur);
    c->source = argc == 1 ? static_cast<EventsSource*>(sqlite3_value_pointer(argv[0], kEventsSourceType)) : nullptr;
    c->i = 0;
    if (!c->source) return SQLITE_MISUSE;
    return check_row(c) ? SQLITE_OK : SQLITE_ERROR;
  };
  m.xNext = [](sqlite3_vtab_cursor* cur) {
    auto* c = static_cast<EventsCursor*>(cur);
    ++c->i;
    return check_row(c) ? SQLITE_OK : SQLITE_ERROR;
  };
  m.xEof = [](sqlite3_vtab_cursor* cur) {
    auto* c = static_cast<EventsCursor*>(cur);
    return int(c->i >= c->source->trace->events.size());
  };
  m.xRowid = [](sqlite3_vtab_cursor* cur, sqlite3_int64* rowid) {
    *rowid = sqlite3_int64(static_cast<EventsCursor*>(cur)->i);
    return SQLITE_OK;
  };
  m.xColumn = [](sqlite3_vtab_cursor* cur, sqlite3_context* ctx, int col) {
    auto* c = static_cast<EventsCursor*>(cur);
    const TraceEvent& e = c->source->trace->events[c->i];
    // Text is passed without a copy: the trace outlives the statement.
    auto text = [&](const std::string& v) { sqlite3_result_text(ctx, v.data(), int(v.size()), SQLITE_STATIC); };
    auto text_or_null = [&](const std::string& v) {
      if (v.empty())
        sqlite3_result_null(ctx);
      else
        text(v);
    };
    switch (col) {
      case 0:
        if (c->i == 0)
          sqlite3_result_int64(ctx, 0);
        else
          sqlite3_result_null(ctx);
        break;
      case 1: sqlite3_result_text(ctx, kind_name(e.kind), -1, SQLITE_STATIC); break;
      case 2: sqlite3_result_int64(ctx, e.t0); break;
      case 3: sqlite3_result_int64(ctx, e.t1); break;
      case 4: sqlite3_result_int64(ctx, int64_t(e.id)); break;  // the bit pattern
      case 5: sqlite3_result_int64(ctx, int64_t(e.parent)); break;
      case 6: sqlite3_result_int64(ctx, e.bytes); break;
      case 7: sqlite3_result_int64(ctx, e.flops); break;
      case 8: sqlite3_result_int64(ctx, e.value); break;
      case 9: text(e.name); break;
      case 10: sqlite3_result_int64(ctx, e.track); break;
      case 11: sqlite3_result_int64(ctx, e.device); break;
      case 12: sqlite3_result_int64(ctx, e.stream); break;
      case 13: text_or_null(e.shapes); break;
      case 14: text_or_null(e.source); break;
      default: sqlite3_result_null(ctx);
    }
    return SQLITE_OK;
  };
  return m;
}

// ---- writing ----

void write_db(const Trace& t, const std::string& file, const std::string& shown) {
  Connection c;
  // NOMUTEX: this connection is private to this call, no other thread uses it.
  int rc = sqlite3_open_v2(file.c_str(), &c.db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) db_fail(shown, c.db, rc, "creating the database");
  sqlite3* db = c.db;
  // A fresh file renamed into place only when complete: no journal, no syncs until then.
  // SQLite's default 2 MiB page cache: 16 MiB made the write an eighth slower (its pages
  // are fresh memory, and a small cache stays in the CPU's caches).
  exec(db, shown,
       "PRAGMA page_size = 16384; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;"
       "PRAGMA locking_mode = EXCLUSIVE; PRAGMA temp_store = MEMORY; PRAGMA cache_size = -2048;",
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
    if (!t.device_tracing_json.empty()) put("device_tracing_json", t.device_tracing_json);
    if (!t.sampling_json.empty()) put("sampling_json", t.sampling_json);
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
    Stmt s(db, "INSERT INTO tracks VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
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
      s.i64(8, tr.rank);
      check(s, "writing tracks");
    }
  }
  {
    // One statement takes every event from a virtual table over the trace: a tenth less
    // CPU than binding batches of 64 rows (no bind calls, no statement reset per batch).
    static const sqlite3_module module = events_module();  // SQLite keeps the pointer
    int r = sqlite3_create_module_v2(db, "opscope_trace_events", &module, nullptr, nullptr);
    if (r != SQLITE_OK) db_fail(shown, db, r, "preparing the events insert");
    EventsSource source{&t, std::nullopt};
    Stmt s(db,
           "INSERT INTO events SELECT event, kind, t0, t1, id, parent, bytes, flops, value, name, track, "
           "device, stream, shapes, source FROM opscope_trace_events(?1)");
    if (!s) db_fail(shown, db, sqlite3_errcode(db), "preparing the events insert");
    sqlite3_bind_pointer(s.get(), 1, &source, kEventsSourceType, nullptr);
    r = s.step();
    if (source.bad_track) {  // a reader could not place it
      const TraceEvent& e = t.events[*source.bad_track];
      fail("profile", "{}: event {} ({} '{}') has track {} but the trace has {} tracks", shown,
           *source.bad_track, kind_name(e.kind), e.name, e.track, t.tracks.size());
    }
    if (r != SQLITE_DONE) db_fail(shown, db, r, "writing events");
  }
  detail::write_samples_db(db, t, shown);  // the instructions layer's tables
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
  for (int i = 0; i <= int(kLastEventKind); ++i)
    if (name == kind_name(EventKind(i))) {
      k = EventKind(i);
      return true;
    }
  return false;
}

// NOMUTEX: a connection is used by one thread at a time, so SQLite's per-call locking
// (a fifth of load_profile's time, perf) buys nothing.
constexpr int kReadFlags = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX;

// The events query; column 0 is the row's number, checked by the chunked reader.
constexpr const char* kEventsSql =
    "SELECT event, kind, t0, t1, id, parent, bytes, flops, value, name, track, device, stream, "
    "shapes, source FROM events";

void assign_text(sqlite3_stmt* s, int col, std::string& out) {
  auto p = reinterpret_cast<const char*>(sqlite3_column_text(s, col));
  if (p)
    out.assign(p, size_t(sqlite3_column_bytes(s, col)));
  else
    out.clear();
}

// One row of kEventsSql into `e`, the event at position `index`.
void read_event(sqlite3_stmt* s, TraceEvent& e, size_t index, size_t ntracks, const std::string& p) {
  auto kind = std::string_view(reinterpret_cast<const char*>(sqlite3_column_text(s, 1)),
                               size_t(sqlite3_column_bytes(s, 1)));
  if (!parse_kind(kind, e.kind)) fail("profile", "{}: event {} has an unknown kind '{}'", p, index, kind);
  e.t0 = sqlite3_column_int64(s, 2);
  e.t1 = sqlite3_column_int64(s, 3);
  e.id = uint64_t(sqlite3_column_int64(s, 4));
  e.parent = uint64_t(sqlite3_column_int64(s, 5));
  e.bytes = sqlite3_column_int64(s, 6);
  e.flops = sqlite3_column_int64(s, 7);
  e.value = sqlite3_column_int64(s, 8);
  assign_text(s, 9, e.name);
  e.track = sqlite3_column_int(s, 10);
  e.device = sqlite3_column_int(s, 11);
  e.stream = sqlite3_column_int(s, 12);
  assign_text(s, 13, e.shapes);
  assign_text(s, 14, e.source);
  if (e.track < 0 || size_t(e.track) >= ntracks)
    fail("profile", "{}: corrupt: event {} has track {} but there are {} tracks", p, index, e.track, ntracks);
}

// Every events row in order, appended to `out`.
void read_events(sqlite3* db, const std::string& p, size_t ntracks, std::vector<TraceEvent>& out) {
  Stmt s(db, (std::string(kEventsSql) + " ORDER BY event").c_str());
  if (!s) db_fail(p, db, sqlite3_errcode(db), "reading events");
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    TraceEvent& e = out.emplace_back();
    read_event(s.get(), e, out.size() - 1, ntracks, p);
  }
  if (rc != SQLITE_DONE) db_fail(p, db, rc, "reading events");
}

// Asks for transparent huge pages under a large buffer about to be filled: 2 MiB page
// faults instead of 4 KiB ones (page faults were a fifth of load_profile's time here).
void advise_huge_pages(const void* data, size_t bytes) {
  constexpr uintptr_t kHuge = uintptr_t(2) << 20;
  uintptr_t a = (reinterpret_cast<uintptr_t>(data) + kHuge - 1) & ~(kHuge - 1);
  uintptr_t b = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kHuge - 1);
  if (b > a) ::madvise(reinterpret_cast<void*>(a), b - a, MADV_HUGEPAGE);  // advice only
}

// A file's identity: a saved profile is replaced by renaming a new file onto its name.
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const FileId&) const = default;
};
std::optional<FileId> file_id(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino};
}

// The events of a profile with `n` rows (meta.event_count) read in chunks of rows on
// parallel connections, when it is large and the rows are numbered 0..n-1 as
// export_profile writes them. Returns false (and `out` empty) when the caller must read
// them in order: small, numbered otherwise (the in-order reader then gives the error),
// or replaced since `first` (the identity of `p` before the caller's connection opened
// it): each chunk's connection must read that same file.
// Errors are those the in-order reader would give first: of the earliest chunk.
bool read_events_parallel(sqlite3* db, const std::string& p, std::optional<FileId> first, size_t n,
                          size_t ntracks, std::vector<TraceEvent>& out) {
  constexpr size_t kMinChunk = size_t(1) << 14;
  size_t chunks = std::min<size_t>({std::max(1u, std::thread::hardware_concurrency()), 8, n / kMinChunk});
  if (chunks < 2 || !first) return false;
  {  // Rows outside 0..n-1: not our numbering.
    Stmt s(db, "SELECT 1 FROM events WHERE event < 0 OR event >= ?1 LIMIT 1");
    if (!s) db_fail(p, db, sqlite3_errcode(db), "reading events");
    s.i64(1, int64_t(n));
    int rc = s.step();
    if (rc == SQLITE_ROW) return false;
    if (rc != SQLITE_DONE) db_fail(p, db, rc, "reading events");
  }
  out.reserve(n);
  advise_huge_pages(out.data(), n * sizeof(TraceEvent));
  out.resize(n);

  std::latch opened{ptrdiff_t(chunks)};
  std::atomic<bool> give_up{false};
  std::vector<char> whole(chunks, 0);
  std::vector<std::exception_ptr> error(chunks);
  // Chunk k: rows event in [lo, hi) into out[lo, hi), on its own connection.
  auto run = [&](size_t k) {
    const size_t lo = n * k / chunks, hi = n * (k + 1) / chunks;
    bool counted = false;
    try {
      Connection c;
      int rc = sqlite3_open_v2(p.c_str(), &c.db, kReadFlags, nullptr);
      opened.count_down();
      counted = true;
      if (rc != SQLITE_OK) db_fail(p, c.db, rc, "opening");
      if (k == 0) {  // every connection is open: was it the same file for all?
        opened.wait();
        if (file_id(p) != first) give_up = true;
      }
      Stmt s(c.db, (std::string(kEventsSql) + " WHERE event >= ?1 AND event < ?2 ORDER BY event").c_str());
      if (!s) db_fail(p, c.db, sqlite3_errcode(c.db), "reading events");
      s.i64(1, int64_t(lo));
      s.i64(2, int64_t(hi));
      size_t i = lo;
      while ((rc = s.step()) == SQLITE_ROW) {
        if (sqlite3_column_int64(s.get(), 0) != int64_t(i) || give_up.load(std::memory_order_relaxed)) return;
        read_event(s.get(), out[i], i, ntracks, p);
        ++i;
      }
      if (rc != SQLITE_DONE) db_fail(p, c.db, rc, "reading events");
      whole[k] = i == hi;
    } catch (...) {
      if (!counted) opened.count_down();
      error[k] = std::current_exception();
    }
  };
  std::vector<std::thread> workers;
  for (size_t k = 1; k < chunks; ++k) workers.emplace_back(run, k);
  run(0);
  for (auto& w : workers) w.join();
  for (size_t k = 0; k < chunks && !give_up; ++k) {
    if (error[k]) std::rethrow_exception(error[k]);
    if (!whole[k]) break;
  }
  if (give_up || !std::all_of(whole.begin(), whole.end(), [](char w) { return w != 0; })) {
    out.clear();
    return false;
  }
  return true;
}

}  // namespace

// ---- ProfileDb ----

ProfileDb::ProfileDb(const std::string& path) : path_(resolve_db_path(path)) {
  check_header(path_);
  int rc = sqlite3_open_v2(path_.c_str(), &db_, kReadFlags, nullptr);
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
  // They are written side by side: the trace is only read, each writer has its own file,
  // and each fsyncs its file as soon as it is complete, while the other is still at work.
  std::string db_path = (fs::path(dir) / kProfileDbFile).string();
  AtomicPath db(db_path);
  StreamFile json((fs::path(dir) / kTraceJsonFile).string(), "profile");
  std::exception_ptr db_error;
  std::thread db_writer([&] {
    try {
      write_db(trace, db.temp(), db_path);
      db.sync("profile");
    } catch (...) {
      db_error = std::current_exception();
    }
  });
  try {
    write_chrome_trace(trace, json);
    json.sync();
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
  // Before any connection opens it (see read_events_parallel).
  std::optional<FileId> first = file_id(resolve_db_path(path));
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
  if (auto it = meta.find("device_tracing_json"); it != meta.end()) t.device_tracing_json = it->second;
  if (auto it = meta.find("sampling_json"); it != meta.end()) t.sampling_json = it->second;

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
  // `rank` came later (same schema version): a profile saved before it has one process.
  bool has_rank = false;
  rows("SELECT 1 FROM pragma_table_info('tracks') WHERE name = 'rank'", "the tracks' columns",
       [&](sqlite3_stmt*) { has_rank = true; });
  rows(has_rank ? "SELECT track, kind, name, os_tid, device, core, dropped, rank FROM tracks ORDER BY track"
                : "SELECT track, kind, name, os_tid, device, core, dropped, -1 FROM tracks ORDER BY track",
       "tracks", [&](sqlite3_stmt* s) {
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
         tr.rank = sqlite3_column_int(s, 7);
         t.tracks.push_back(std::move(tr));
         t.dropped_per_track.push_back(sqlite3_column_int64(s, 6));
       });
  if (expected_events < 0 ||
      !read_events_parallel(db, p, first, size_t(expected_events), t.tracks.size(), t.events)) {
    if (expected_events > 0) t.events.reserve(size_t(expected_events));
    read_events(db, p, t.tracks.size(), t.events);
  }
  if (expected_events >= 0 && int64_t(t.events.size()) != expected_events)
    fail("profile", "{}: truncated: {} events, its meta says {}", p, t.events.size(), expected_events);
  detail::read_samples_db(db, p, t);
  return t;
}

}  // namespace opscope::prof
