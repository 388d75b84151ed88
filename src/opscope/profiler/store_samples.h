// The instructions layer's tables in profile.db (docs/PROFILE_SCHEMA.md): code_modules,
// code_sites, samples and the view sample_chain. Written and read by store.cpp.
#pragma once
#include <string>

#include "opscope/profiler/trace.h"

struct sqlite3;

namespace opscope::prof::detail {

// Creates the tables and inserts the trace's samples (inside the caller's transaction).
// Throws "[profile] <shown>: ..." on a SQLite error.
void write_samples_db(sqlite3* db, const Trace& trace, const std::string& shown);
// Reads them back when the profile has them (a profile saved before them has none).
void read_samples_db(sqlite3* db, const std::string& path, Trace& trace);

}  // namespace opscope::prof::detail
