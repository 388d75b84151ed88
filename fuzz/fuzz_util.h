// What the fuzz targets share. Readers that take a path get the input as a file in a
// scratch folder (in /dev/shm where there is one: no disk per run). The rules each target
// checks beyond "no crash, no sanitizer report":
//   - a reader fails only with opscope::Error whose message starts "[" (the op, flag or
//     file in brackets); any other exception is a finding (std::out_of_range, a JSON
//     library's type error, bad_alloc from a size read out of the file...);
//   - what it loads, the explorer can serve: every API view answers 200, 400, 404 or 409,
//     never 500 (an exception escaped a view).
#pragma once
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "opscope/core/error.h"
#include "opscope/explorer/api.h"
#include "opscope/explorer/profile.h"
#include "opscope/profiler/trace.h"

namespace opscope::fuzz {

// Reports a broken rule and aborts, so libFuzzer keeps the input as a crash.
[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "opscope fuzz finding: %s\n", what.c_str());
  std::abort();
}

// A per-process scratch folder, removed at exit.
class Scratch {
 public:
  Scratch() {
    std::error_code ec;
    std::filesystem::path base = std::filesystem::is_directory("/dev/shm", ec) ? "/dev/shm"
                                                                               : std::filesystem::temp_directory_path();
    dir_ = base / ("opscope-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  // Writes `bytes` to <scratch>/<name> (subfolders made) and returns its path.
  std::string write(const std::string& name, std::string_view bytes) const {
    std::filesystem::path p = dir_ / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
    return p.string();
  }
  // Removes <scratch>/<name>, file or folder.
  void remove(const std::string& name) const {
    std::error_code ec;
    std::filesystem::remove_all(dir_ / name, ec);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

// Runs `load`, which may fail only with a bracketed opscope::Error; returns whether it
// loaded.
template <class F>
bool clear_errors_only(const char* what, F&& load) {
  try {
    load();
    return true;
  } catch (const Error& e) {
    if (e.what()[0] != '[') finding(std::string(what) + ": an error without its [op/file]: " + e.what());
    return false;
  } catch (const std::exception& e) {
    finding(std::string(what) + ": not an opscope error: " + e.what());
  }
}

// Every view of the explorer over a loaded trace, as a user clicking through it would
// ask for them; each must answer, none with 500.
inline void serve_every_view(prof::Trace trace) {
  using explorer::Profile;
  explorer::ProfilePtr p;
  clear_errors_only("explorer profile", [&] { p = std::make_shared<Profile>("fuzz", "fuzz", std::move(trace)); });
  if (!p) return;
  explorer::ExplorerApi api({p, p});
  const size_t events = p->trace().events.size();
  const explorer::Params none;
  auto get = [&](const std::string& path, const explorer::Params& params) {
    explorer::ApiResponse r = api.get(path, params);
    if (r.status == 500) finding(path + " answered 500: " + r.body.dump());
  };
  for (const char* view : {"", "/summary", "/tracks", "/timeline", "/range", "/memory", "/ops"})
    get(std::string("/api/profiles/0") + view, none);
  get("/api/profiles", none);
  get("/api/profiles/0/ops", {{"group_by_shape", "1"}});
  get("/api/profiles/0/timeline", {{"px", "7"}});
  get("/api/profiles/0/memory", {{"points", "3"}});
  get("/api/profiles/0/search", {{"q", "a"}});
  get("/api/compare", {{"a", "0"}, {"b", "1"}});
  for (size_t e : {size_t(0), events / 2, events ? events - 1 : 0})
    if (e < events) get("/api/profiles/0/event/" + std::to_string(e), none);
}

}  // namespace opscope::fuzz
