// The system trace: a saved profile folder holds trace.json (for the eye, in Perfetto)
// and profile.db (for queries and reloading), a SQLite database with every event, the
// correlation links, the config, the devices and the dropped counts. Its schema is
// versioned (Trace::schema_version, kSchemaVersion) and documented in docs/PROFILE_SCHEMA.md.
#pragma once
#include <string>

#include "opscope/profiler/trace.h"

struct sqlite3;

namespace opscope::prof {

inline constexpr const char* kTraceJsonFile = "trace.json";
inline constexpr const char* kProfileDbFile = "profile.db";

// Writes <dir>/trace.json and <dir>/profile.db, creating `dir` if missing. Each file is
// written to a temp file and renamed only when both are complete, so a failure leaves
// the folder as it was. Errors: "[profile] <dir>: ..." naming the folder or the file.
void export_profile(const Trace& trace, const std::string& dir);

// Writes only the SQLite system trace, atomically, at `db_path`.
void save_profile_db(const Trace& trace, const std::string& db_path);

// Reads a saved profile: `path` is a profile folder or a profile.db file. Every field of
// the saved Trace comes back; dropped_per_track has one entry per track.
// Errors ("[profile] <path>: <what>"): missing file or folder, not a SQLite database,
// truncated or corrupt file, missing tables, a schema version newer than this build's.
Trace load_profile(const std::string& path);

// A saved profile's database, checked as load_profile does and opened read-only
// (writes fail), for `opscope query` and other readers of the SQL tables. The connection
// is for one thread at a time (opened without SQLite's per-call locking).
class ProfileDb {
 public:
  explicit ProfileDb(const std::string& path);  // folder or db file
  ~ProfileDb();
  ProfileDb(const ProfileDb&) = delete;
  ProfileDb& operator=(const ProfileDb&) = delete;

  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }  // the db file
  int schema_version() const { return schema_version_; }

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
  int schema_version_ = 0;
};

}  // namespace opscope::prof
