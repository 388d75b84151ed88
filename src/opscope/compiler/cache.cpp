#include "opscope/compiler/cache.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "opscope/compiler/hash.h"
#include "opscope/core/error.h"

namespace opscope::compiler {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kManifestVersion = 1;
std::atomic<uint64_t> g_counter{0};

std::string unique_suffix() {
  return fmt::format("{}-{}", ::getpid(), g_counter.fetch_add(1, std::memory_order_relaxed));
}

bool fsync_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok;
}


// Moves a damaged entry out of the way (a reader may still have its library loaded).
void discard_entry(const std::string& root, const std::string& dir, const std::string& hash) {
  std::string trash = root + "/.trash-" + hash + "-" + unique_suffix();
  std::error_code ec;
  fs::rename(dir, trash, ec);
  remove_quietly(ec ? dir : trash);
}

// Reads and checks an entry; on success fills `a` (library loaded, entries resolved).
std::string try_load(const std::string& dir, const ArtifactSpec& spec, Artifact& a) {
  auto t0 = std::chrono::steady_clock::now();
  std::string text;
  if (!read_file(dir + "/manifest.json", text)) {
    std::error_code ec;
    return fs::exists(dir, ec) ? "manifest.json is missing" : "missing";
  }
  json m;
  try {
    m = json::parse(text);
  } catch (const std::exception& e) {
    return "manifest.json is not valid JSON";
  }
  try {
    if (m.value("format", "") != "opscope-artifact" || m.value("version", 0) != kManifestVersion)
      return "manifest.json has an unknown format";
    if (m.value("hash", "") != spec.hash) return "manifest.json is for another hash";
    std::vector<std::string> syms;
    for (auto& k : m.at("kernels")) syms.push_back(k.at("symbol").get<std::string>());
    std::vector<std::string> want = spec.symbols;
    std::sort(syms.begin(), syms.end());
    std::sort(want.begin(), want.end());
    want.erase(std::unique(want.begin(), want.end()), want.end());
    syms.erase(std::unique(syms.begin(), syms.end()), syms.end());
    if (syms != want) return "manifest.json lists other kernels";
    std::string lib_path = dir + "/" + m.at("library").get<std::string>();
    std::string bytes;
    if (!read_file(lib_path, bytes)) return "the library is missing";
    if (int64_t(bytes.size()) != m.at("library_bytes").get<int64_t>() ||
        hex64(fnv1a64(bytes)) != m.at("library_fnv").get<std::string>())
      return "the library does not match its manifest (partly written or changed)";
    std::string err;
    auto lib = Library::open(lib_path, &err);
    if (!lib) return "dlopen failed: " + err;
    std::vector<void*> entries;
    for (auto& s : spec.symbols) {
      void* f = lib->symbol(s);
      if (!f) return "the library has no kernel " + s;
      entries.push_back(f);
    }
    a.dir = dir;
    a.library = std::move(lib);
    a.entries = std::move(entries);
    a.load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return "";
  } catch (const std::exception& e) {
    return std::string("manifest.json is incomplete (") + e.what() + ")";
  }
}

std::string log_head(const std::string& path, int lines) {
  std::ifstream in(path);
  std::string line, out;
  for (int i = 0; i < lines && std::getline(in, line); ++i) out += "\n  " + line;
  return out;
}

}  // namespace

std::string cache_root(const std::string& requested) {
  if (!requested.empty()) return requested;
  if (const char* e = std::getenv("OPSCOPE_CACHE_DIR"); e && *e) return e;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/opscope";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/opscope";
  return fmt::format("/tmp/opscope-cache-{}", ::getuid());
}

bool read_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return !in.bad();
}

void write_atomic(const std::string& path, std::string_view content) {
  fs::path p(path);
  std::string tmp = (p.parent_path() / fmt::format(".{}.tmp-{}", p.filename().string(), unique_suffix())).string();
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail("compile", "cannot write {} ({})", tmp, std::strerror(errno));
    out.write(content.data(), std::streamsize(content.size()));
    out.flush();
    if (!out) {
      out.close();
      ::unlink(tmp.c_str());
      fail("compile", "cannot write {}", tmp);
    }
  }
  fsync_file(tmp);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    fail("compile", "cannot rename {} onto {} ({})", tmp, path, std::strerror(e));
  }
}

std::string check_entry(const std::string& dir) {
  std::string text;
  if (!read_file(dir + "/manifest.json", text)) return "manifest.json is missing";
  try {
    json m = json::parse(text);
    std::string bytes;
    if (!read_file(dir + "/" + m.at("library").get<std::string>(), bytes)) return "the library is missing";
    if (int64_t(bytes.size()) != m.at("library_bytes").get<int64_t>() ||
        hex64(fnv1a64(bytes)) != m.at("library_fnv").get<std::string>())
      return "the library does not match its manifest";
  } catch (const std::exception&) {
    return "manifest.json is not valid";
  }
  return "";
}

Artifact load_or_build(const std::string& root, const ArtifactSpec& spec, const std::function<void()>& on_slow) {
  Artifact a;
  std::string dir = root + "/" + spec.hash;
  std::string why = try_load(dir, spec, a);
  if (why.empty()) {
    a.hit = true;
    return a;
  }
  std::error_code ec;
  fs::create_directories(root + "/.locks", ec);
  if (ec) fail("compile", "cannot create the cache folder {} ({})", root, ec.message());
  FileLock lock(root + "/.locks/" + spec.hash + ".lock", "compile");
  // Another process may have built it while we waited for the lock.
  why = try_load(dir, spec, a);
  if (why.empty()) {
    a.hit = true;
    return a;
  }
  if (why != "missing") {
    a.damage = why;
    discard_entry(root, dir, spec.hash);
  }
  std::string tmp = root + "/.tmp-" + spec.hash + "-" + unique_suffix();
  fs::create_directories(tmp, ec);
  if (ec) fail("compile", "cannot create {} ({})", tmp, ec.message());
  try {
    std::string src = tmp + "/kernels.cpp", lib = tmp + "/kernels.so", log = tmp + "/compiler.log";
    write_atomic(src, spec.source);
    BuildResult br = run_compiler(spec.compiler, spec.flags, src, lib, log, on_slow);
    a.build_ms = br.ms;
    json m = spec.manifest_json.empty() ? json::object() : json::parse(spec.manifest_json);
    m["format"] = "opscope-artifact";
    m["version"] = kManifestVersion;
    m["hash"] = spec.hash;
    m["name"] = spec.name;
    m["created"] = iso_now();
    m["source"] = "kernels.cpp";
    m["compiler"] = {{"command", br.argv}, {"version", spec.compiler.version}, {"path", spec.compiler.path},
                     {"flags", spec.flags}, {"exit_code", br.exit_code}, {"ms", br.ms}};
    if (br.exit_code != 0) {
      std::string failed = root + "/failed-" + spec.hash;
      remove_quietly(failed);
      m["compiler_log"] = "compiler.log";
      write_atomic(tmp + "/manifest.json", m.dump(2) + "\n");
      fs::rename(tmp, failed, ec);
      std::string where = ec ? tmp : failed;
      fail("compile", "{}: the C++ compiler failed (exit code {}) on the generated kernels; source: {}/kernels.cpp, "
           "compiler output: {}/compiler.log{}",
           spec.name, br.exit_code, where, where, log_head(where + "/compiler.log", 12));
    }
    std::string bytes;
    if (!read_file(lib, bytes)) fail("compile", "{}: the compiler wrote no library at {}", spec.name, lib);
    fsync_file(lib);
    m["library"] = "kernels.so";
    m["library_bytes"] = int64_t(bytes.size());
    m["library_fnv"] = hex64(fnv1a64(bytes));
    write_atomic(tmp + "/manifest.json", m.dump(2) + "\n");
    ::unlink(log.c_str());  // nothing to keep: it built (warnings stay in failed builds only)
    if (::rename(tmp.c_str(), dir.c_str()) != 0) {
      // Someone renamed an entry into place without the lock (rename-wins): use theirs.
      remove_quietly(tmp);
    }
  } catch (...) {
    std::error_code ec2;
    if (fs::exists(tmp, ec2)) remove_quietly(tmp);
    throw;
  }
  why = try_load(dir, spec, a);
  if (!why.empty()) fail("compile", "{}: the freshly built entry {} does not load: {}", spec.name, dir, why);
  a.hit = false;
  return a;
}

std::string iso_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

FileLock::FileLock(const std::string& path, const char* op) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) fail(op, "cannot create the lock file {} ({})", path, std::strerror(errno));
  while (::flock(fd_, LOCK_EX) != 0)
    if (errno != EINTR) fail(op, "cannot lock {} ({})", path, std::strerror(errno));
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

void remove_quietly(const std::string& dir) {
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace opscope::compiler
