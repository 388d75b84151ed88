// Atomic file writes: write a hidden temp file in the target's folder, then rename it
// over the target, so a reader sees the old file or the whole new one, never a part.
// A temp file not committed (an error, an exception) is removed by the destructor.
#pragma once
#include <cstdio>
#include <string>
#include <string_view>

namespace opscope {

// A unique temp path beside `path` ("<dir>/.<name>.tmp-<pid>-<n>"), renamed onto `path`
// by commit(). The caller writes the temp file by any means (stdio, SQLite, ...).
class AtomicPath {
 public:
  explicit AtomicPath(std::string path);
  ~AtomicPath();  // removes the temp file unless committed
  AtomicPath(AtomicPath&& o) noexcept;
  AtomicPath& operator=(AtomicPath&&) = delete;
  AtomicPath(const AtomicPath&) = delete;
  AtomicPath& operator=(const AtomicPath&) = delete;

  const std::string& path() const { return path_; }
  const std::string& temp() const { return temp_; }
  // The folder both lie in ("." for a bare name).
  std::string folder() const;
  // fsyncs the temp file, renames it onto path() and fsyncs the folder.
  // Throws Error "[where] <path>: ..." on failure (the temp file is then removed).
  void commit(std::string_view where = "file");
  // fsyncs the temp file now, once it is complete, so that commit() only renames: lets
  // one file reach the disk while another is still being written. Errors as commit().
  void sync(std::string_view where = "file");
  // Removes the temp file now (idempotent).
  void discard() noexcept;

 private:
  std::string path_, temp_;
  bool done_ = false;
  bool synced_ = false;
};

// A temp file opened for writing with a large stdio buffer; commit() flushes, closes
// and renames it. Errors name `where` and the target path.
class AtomicFile {
 public:
  AtomicFile(std::string path, std::string_view where = "file");
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  std::FILE* file() { return f_; }
  const std::string& path() const { return tmp_.path(); }
  void write(std::string_view bytes);
  // Flushes and closes the temp file (errors: disk full, ...); the rename waits for commit().
  void close();
  // close() if still open, then renames the temp file onto path().
  void commit();

 private:
  AtomicPath tmp_;
  std::string where_;
  std::FILE* f_ = nullptr;
};

// Writes `content` to `path` atomically.
void write_file_atomic(const std::string& path, std::string_view content,
                       std::string_view where = "file");

}  // namespace opscope
