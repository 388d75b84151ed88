#include "opscope/compiler/build.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "opscope/compiler/cache.h"
#include "opscope/compiler/hash.h"
#include "opscope/core/error.h"

extern char** environ;

namespace opscope::compiler {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

// An executable named `name`: a path as is, else searched on PATH.
std::string which(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* p = std::getenv("PATH");
  std::string path = p ? p : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = end > start ? path.substr(start, end - start) : std::string(".");
    std::string cand = dir + "/" + name;
    struct stat st;
    if (::stat(cand.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(cand.c_str(), X_OK) == 0) return cand;
    start = end + 1;
  }
  return "";
}

std::vector<char*> c_argv(const std::vector<std::string>& argv) {
  std::vector<char*> a;
  for (auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  return a;
}

// Runs argv with stdout captured (stderr discarded); returns the exit code.
int capture(const std::vector<std::string>& argv, std::string& out) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  auto a = c_argv(argv);
  int rc = ::posix_spawnp(&pid, a[0], &fa, nullptr, a.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    return -1;
  }
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) out.append(buf, size_t(n));
  ::close(fds[0]);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

}  // namespace

CxxCompiler find_compiler(const std::string& requested, const std::string& cache_dir) {
  CxxCompiler cc;
  std::vector<std::string> cands;
  const char* env = std::getenv("CXX");
  if (!requested.empty()) cands.push_back(requested);
  else if (env && *env) cands.push_back(env);
  else cands = {"c++", "g++", "clang++"};
  for (const std::string& c : cands) {
    auto words = split_words(c);
    if (words.empty()) continue;
    std::string exe = which(words[0]);
    if (exe.empty()) continue;
    words[0] = exe;
    cc.command = words;
    std::error_code ec;
    fs::path real = fs::canonical(exe, ec);
    cc.path = ec ? exe : real.string();
    break;
  }
  if (cc.command.empty()) {
    if (!requested.empty()) fail("compile", "no C++ compiler: '{}' (the requested compiler) is not an executable", requested);
    if (env && *env) fail("compile", "no C++ compiler: $CXX is '{}', which is not an executable on PATH", env);
    fail("compile", "no C++ compiler: none of c++, g++, clang++ is on PATH (install one or set $CXX)");
  }
  // The version, cached by the executable's identity (a changed compiler has a new mtime).
  struct stat st{};
  ::stat(cc.path.c_str(), &st);
  std::string ident = fmt::format("{}|{}|{}|{}.{}", fmt::join(cc.command, " "), cc.path, int64_t(st.st_size),
                                  int64_t(st.st_mtim.tv_sec), int64_t(st.st_mtim.tv_nsec));
  std::string vfile = cache_dir + "/.compilers/" + hex64(fnv1a64(ident)) + ".txt";
  {
    std::ifstream in(vfile, std::ios::binary);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      std::string text = ss.str();
      size_t nl = text.find('\n');
      if (nl != std::string::npos && text.substr(0, nl) == ident) {
        cc.version = text.substr(nl + 1);
        return cc;
      }
    }
  }
  std::vector<std::string> argv = cc.command;
  argv.push_back("--version");
  std::string out;
  int rc = capture(argv, out);
  if (rc != 0 || out.empty())
    fail("compile", "the C++ compiler '{}' does not run ('{} --version' exited with {})", fmt::join(cc.command, " "),
         fmt::join(cc.command, " "), rc);
  cc.version = out;
  try {
    fs::create_directories(cache_dir + "/.compilers");
    write_atomic(vfile, ident + "\n" + out);
  } catch (...) {
    // A read-only cache still compiles; the version is asked again next time.
  }
  return cc;
}

BuildResult run_compiler(const CxxCompiler& cc, const std::vector<std::string>& flags, const std::string& source,
                         const std::string& output, const std::string& log_path,
                         const std::function<void()>& on_slow) {
  BuildResult r;
  r.argv = cc.command;
  for (auto& f : flags) r.argv.push_back(f);
  for (const char* a : {"-o", output.c_str(), source.c_str(), "-lm"}) r.argv.emplace_back(a);
  auto t0 = std::chrono::steady_clock::now();
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  auto a = c_argv(r.argv);
  int rc = ::posix_spawnp(&pid, a[0], &fa, nullptr, a.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    std::ofstream(log_path) << "cannot start " << r.argv[0] << ": " << std::strerror(rc) << "\n";
    r.exit_code = 127;
    return r;
  }
  bool told = false;
  int st = 0;
  for (;;) {
    pid_t w = ::waitpid(pid, &st, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    auto el = std::chrono::steady_clock::now() - t0;
    if (!told && el > std::chrono::seconds(1)) {
      told = true;
      if (on_slow) on_slow();
    }
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  return r;
}

std::shared_ptr<Library> Library::open(const std::string& path, std::string* error) {
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = ::dlerror();
    if (error) *error = e ? e : "dlopen failed";
    return nullptr;
  }
  return std::shared_ptr<Library>(new Library(h, path));
}

void* Library::symbol(const std::string& name) const { return ::dlsym(handle_, name.c_str()); }

std::string host_isa() {
  static const std::string isa = [] {
    std::string s;
    __builtin_cpu_init();
#define OPSCOPE_ISA(f) if (__builtin_cpu_supports(f)) s += std::string(s.empty() ? "" : " ") + f;
    OPSCOPE_ISA("sse4.2") OPSCOPE_ISA("avx") OPSCOPE_ISA("avx2") OPSCOPE_ISA("fma") OPSCOPE_ISA("bmi2")
    OPSCOPE_ISA("avx512f") OPSCOPE_ISA("avx512bw") OPSCOPE_ISA("avx512vl") OPSCOPE_ISA("avx512dq")
    OPSCOPE_ISA("avx512bf16")
#ifndef __clang__  // clang 16 (the fuzz build's compiler) does not know these two names
    OPSCOPE_ISA("avx512fp16") OPSCOPE_ISA("f16c")
#endif
#undef OPSCOPE_ISA
    return s;
  }();
  return isa;
}

}  // namespace opscope::compiler
