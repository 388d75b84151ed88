// A large output file produced front to back (trace.json), written atomically like
// AtomicFile (temp file + rename) but filled in place through big buffers that a
// background thread writes while the producer fills the next one. Where the filesystem
// allows it the temp file is written with O_DIRECT: no copy into the page cache, whose
// CPU time and fresh-page faults cost as much as formatting trace.json itself (perf on
// this machine); the last partial block goes through the page cache.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "opscope/profiler/atomic_file.h"

namespace opscope {

class StreamFile {
 public:
  // Creates the temp file beside `path`, with O_DIRECT where allowed and the filesystem
  // takes it. Errors name `where` and the folder.
  explicit StreamFile(std::string path, std::string_view where = "file", bool allow_direct = true);
  ~StreamFile();  // stops the writer; removes the temp file unless committed
  StreamFile(const StreamFile&) = delete;
  StreamFile& operator=(const StreamFile&) = delete;

  // Room for `n` more bytes: write them at the returned pointer, then advance(end).
  char* reserve(size_t n) {
    if (n > cap_ - pos_) next(n);
    return buf_ + pos_;
  }
  void advance(char* end) { pos_ = size_t(end - buf_); }
  void write(std::string_view bytes);

  // Writes what is left and closes the temp file. Throws Error "[where] <path>: write
  // failed (...)" (disk full, ...), after which the temp file is gone.
  void close();
  // close() if still open, then fsyncs the temp file (AtomicPath::sync).
  void sync();
  // close() if still open, then fsyncs the temp file (unless synced) and renames it onto path().
  void commit();

  const std::string& path() const { return tmp_.path(); }
  bool direct() const { return direct_.load(std::memory_order_relaxed); }  // with O_DIRECT (so far)

 private:
  struct Block {
    char* data = nullptr;
    size_t cap = 0;
    size_t len = 0;      // bytes to write
    int64_t offset = 0;  // where in the file
    ~Block();
  };

  void next(size_t n);
  Block* take(size_t min_cap);  // an idle block of at least min_cap bytes (waits for one)
  void submit(Block* b, size_t len);
  void run();  // the writer thread
  int write_at(const char* p, size_t len, int64_t offset);  // 0 or errno
  [[noreturn]] void fail_write(int err);
  void stop_writer();

  AtomicPath tmp_;
  std::string where_;
  int fd_ = -1;
  std::atomic<bool> direct_{false};  // cleared by the writer if the filesystem refuses it
  bool closed_ = false;

  Block* cur_ = nullptr;  // being filled
  char* buf_ = nullptr;
  size_t cap_ = 0, pos_ = 0;
  int64_t offset_ = 0;  // file offset of buf_[0]

  std::mutex m_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Block>> blocks_;  // all of them
  std::vector<Block*> idle_, queue_;            // queue_: oldest first
  bool stop_ = false;
  int error_ = 0;
  std::thread writer_;
};

}  // namespace opscope
