#include "opscope/profiler/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "opscope/core/error.h"

namespace opscope {
namespace {

std::string folder_of(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

std::string make_temp_name(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  std::filesystem::path p(path);
  std::string name = fmt::format(".{}.tmp-{}-{}", p.filename().string(), ::getpid(),
                                 counter.fetch_add(1, std::memory_order_relaxed));
  return (p.parent_path() / name).string();
}

// fsync so that after the rename a crash leaves the old file or the whole new one.
bool fsync_path(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

AtomicPath::AtomicPath(std::string path) : path_(std::move(path)), temp_(make_temp_name(path_)) {}

AtomicPath::AtomicPath(AtomicPath&& o) noexcept
    : path_(std::move(o.path_)), temp_(std::move(o.temp_)), done_(o.done_), synced_(o.synced_) {
  o.done_ = true;
}

AtomicPath::~AtomicPath() { discard(); }

std::string AtomicPath::folder() const { return folder_of(path_); }

void AtomicPath::discard() noexcept {
  if (done_) return;
  done_ = true;
  ::unlink(temp_.c_str());
}

void AtomicPath::sync(std::string_view where) {
  if (done_) fail(where, "{}: already committed or discarded", path_);
  if (!fsync_path(temp_, O_RDONLY)) {
    int err = errno;
    discard();
    fail(where, "{}: cannot sync the temp file ({})", path_, std::strerror(err));
  }
  synced_ = true;
}

void AtomicPath::commit(std::string_view where) {
  if (!synced_) sync(where);
  if (::rename(temp_.c_str(), path_.c_str()) != 0) {
    int err = errno;
    discard();
    fail(where, "{}: cannot rename the temp file onto it ({})", path_, std::strerror(err));
  }
  done_ = true;
  fsync_path(folder_of(path_), O_RDONLY | O_DIRECTORY);  // best effort: the rename itself
}

AtomicFile::AtomicFile(std::string path, std::string_view where)
    : tmp_(std::move(path)), where_(where) {
  int fd = ::open(tmp_.temp().c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    int err = errno;
    fail(where_, "{}: cannot write in folder {} ({})", tmp_.path(), folder_of(tmp_.path()),
         std::strerror(err));
  }
  f_ = ::fdopen(fd, "wb");
  if (!f_) {
    ::close(fd);
    fail(where_, "{}: cannot open the temp file", tmp_.path());
  }
}

AtomicFile::~AtomicFile() {
  if (f_) std::fclose(f_);
}

void AtomicFile::write(std::string_view bytes) {
  if (!f_) fail(where_, "{}: write after close", tmp_.path());
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f_) != bytes.size())
    fail(where_, "{}: write failed ({})", tmp_.path(), std::strerror(errno));
}

void AtomicFile::close() {
  if (!f_) return;
  int err = 0;
  errno = 0;
  if (std::fflush(f_) != 0 || std::ferror(f_)) err = errno ? errno : EIO;
  if (std::fclose(f_) != 0 && err == 0) err = errno ? errno : EIO;
  f_ = nullptr;
  if (err != 0) {
    tmp_.discard();
    fail(where_, "{}: write failed ({})", tmp_.path(), std::strerror(err));
  }
}

void AtomicFile::commit() {
  close();
  tmp_.commit(where_);
}

void write_file_atomic(const std::string& path, std::string_view content, std::string_view where) {
  AtomicFile f(path, where);
  f.write(content);
  f.commit();
}

}  // namespace opscope
