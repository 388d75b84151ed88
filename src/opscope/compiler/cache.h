// The artifact cache (the analog of Neuron's NEFF cache): one folder per compiled graph,
// named by the 64-bit stable hash of its key (graph, generated source, flags, compiler
// and its version, host ISA):
//
//   <root>/<hash>/kernels.so      the kernels, loaded with dlopen
//   <root>/<hash>/kernels.cpp     the generated source
//   <root>/<hash>/manifest.json   graph, kernels, inputs/outputs, compiler command and version
//
// An entry is built in a temp folder and renamed into place, under an flock on
// <root>/.locks/<hash>.lock, so that two processes compiling the same graph both
// succeed (the second finds the first's entry). A damaged entry (bad manifest, missing
// or changed library, dlopen failure) is moved away and rebuilt. A failed build keeps
// its source and compiler output in <root>/failed-<hash>/.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "opscope/compiler/build.h"

namespace opscope::compiler {

// The cache folder: `requested` if set, else $OPSCOPE_CACHE_DIR, else
// $XDG_CACHE_HOME/opscope, else ~/.cache/opscope.
std::string cache_root(const std::string& requested = "");

// Writes `content` to a temp file beside `path` and renames it over `path`.
void write_atomic(const std::string& path, std::string_view content);
// The whole file, or false when it cannot be read.
bool read_file(const std::string& path, std::string& out);
// UTC now as "2026-12-02T21:44:56Z", for manifests.
std::string iso_now();
// Removes a folder and what it holds, ignoring errors (a half-built entry).
void remove_quietly(const std::string& dir);

// An exclusive flock on `path` (created if missing) for the life of the object, so that
// two processes never build one cache entry at once. Errors start with "[op]".
class FileLock {
 public:
  FileLock(const std::string& path, const char* op);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

struct ArtifactSpec {
  std::string name;                  // the compiled function's name (messages, manifest)
  std::string hash;                  // 16 hex digits: the folder name
  std::string source;                // generated C++
  std::vector<std::string> symbols;  // kernel entry points the library must export
  std::string manifest_json;         // the caller's part of the manifest (a JSON object)
  CxxCompiler compiler;
  std::vector<std::string> flags;
};

struct Artifact {
  std::string dir;
  std::shared_ptr<Library> library;
  std::vector<void*> entries;  // in ArtifactSpec::symbols order
  bool hit = false;            // loaded without running the compiler
  std::string damage;          // why an existing entry was rebuilt ("" if it was not)
  double build_ms = 0;         // compiler run
  double load_ms = 0;          // manifest check + dlopen + dlsym
};

// Loads the entry for spec.hash, building it first if it is missing or damaged.
// `on_slow` runs once if the compiler takes more than a second. Throws
// "[compile] ..." when the compiler fails (pointing to the kept source and output).
Artifact load_or_build(const std::string& root, const ArtifactSpec& spec, const std::function<void()>& on_slow);

// Checks an entry without loading it: "" when it is whole, else what is wrong.
std::string check_entry(const std::string& dir);

}  // namespace opscope::compiler
