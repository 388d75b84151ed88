// Building generated source: finding the system C++ compiler (and its version, which is
// part of every artifact's key), running it, and loading the result with dlopen.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace opscope::compiler {

struct CxxCompiler {
  std::vector<std::string> command;  // e.g. {"/usr/bin/c++"} or {"ccache", "g++"}
  std::string path;                  // the executable, symlinks resolved
  std::string version;               // `command --version` output
};

// The compiler: `requested` (a command line) if set, else $CXX, else c++, g++ or clang++
// on PATH. Its version is cached under `cache_dir` by the executable's path, size and
// mtime, so a warm start runs no process. Throws "[compile] no C++ compiler ..." when
// there is none, or when it does not run.
CxxCompiler find_compiler(const std::string& requested, const std::string& cache_dir);

struct BuildResult {
  int exit_code = -1;         // 0: built
  std::vector<std::string> argv;
  double ms = 0;
};

// Runs `cc` on `source` into the shared library `output`, with the compiler's output
// in `log_path`. Calls `on_slow` once if it has not finished after one second.
BuildResult run_compiler(const CxxCompiler& cc, const std::vector<std::string>& flags, const std::string& source,
                         const std::string& output, const std::string& log_path,
                         const std::function<void()>& on_slow);

// A loaded shared library. Never unloaded: queued launches may still call into it.
class Library {
 public:
  // Null on failure, with dlerror's message in `error`.
  static std::shared_ptr<Library> open(const std::string& path, std::string* error);
  // Null when the library has no such symbol.
  void* symbol(const std::string& name) const;
  const std::string& path() const { return path_; }

 private:
  Library(void* h, std::string path) : handle_(h), path_(std::move(path)) {}
  void* handle_;
  std::string path_;
};

// "avx2 avx512f ..." features of this host: -march=native code depends on them, so they
// are part of the key.
std::string host_isa();

}  // namespace opscope::compiler
