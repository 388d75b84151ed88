// A saved profile folder as `opscope explore|table|diff|advise|query` open it: input that
// starts with SQLite's header is the folder's profile.db (load_profile, and ProfileDb as
// `opscope query` opens it); any other input is the folder's only file, trace.json
// (opscope's Chrome trace, read back by the importer). Then every explorer view.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fuzz_util.h"
#include "opscope/importer/import.h"
#include "opscope/profiler/store.h"

using namespace opscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::Scratch scratch;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const bool sqlite = size >= 16 && std::memcmp(data, "SQLite format 3", 16) == 0;
  scratch.remove("profile");
  scratch.write(std::string("profile/") + (sqlite ? prof::kProfileDbFile : prof::kTraceJsonFile), bytes);
  const std::string dir = scratch.path("profile");
  if (sqlite) fuzz::clear_errors_only("ProfileDb", [&] { prof::ProfileDb db(dir); });
  prof::Trace trace;
  if (fuzz::clear_errors_only("load_profile_or_trace", [&] { trace = importer::load_profile_or_trace(dir); }))
    fuzz::serve_every_view(std::move(trace));
  return 0;
}
