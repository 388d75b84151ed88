#include "opscope/profiler/stream_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "opscope/core/error.h"

namespace opscope {
namespace {

// O_DIRECT wants buffers, offsets and lengths in whole logical blocks; 4 KiB covers the
// 512-byte and 4 KiB blocks of today's disks.
constexpr size_t kAlign = 4096;
// Three blocks of 8 MiB: one being filled, one being written, one spare, so that neither
// side waits for the other on a hiccup. Writes this size keep the disk near its peak.
constexpr size_t kBlockBytes = size_t(8) << 20;
constexpr size_t kMaxBlocks = 3;
constexpr size_t kHugePage = size_t(2) << 20;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

StreamFile::Block::~Block() { std::free(data); }

StreamFile::StreamFile(std::string path, std::string_view where, bool allow_direct)
    : tmp_(std::move(path)), where_(where) {
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC;
  fd_ = allow_direct ? ::open(tmp_.temp().c_str(), flags | O_DIRECT, 0666) : -1;
  if (fd_ >= 0) {
    direct_ = true;
  } else if (!allow_direct || errno == EINVAL) {  // EINVAL: a filesystem without O_DIRECT
    fd_ = ::open(tmp_.temp().c_str(), flags, 0666);
  }
  if (fd_ < 0) {
    int err = errno;
    fail(where_, "{}: cannot write in folder {} ({})", tmp_.path(), tmp_.folder(),
         std::strerror(err));
  }
  try {
    cur_ = take(kBlockBytes);
    buf_ = cur_->data;
    cap_ = cur_->cap;
    writer_ = std::thread([this] { run(); });
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

StreamFile::~StreamFile() {
  if (!closed_) {  // abandoned (an exception): the writer drops what is queued
    std::lock_guard lock(m_);
    if (!error_) error_ = ECANCELED;
  }
  stop_writer();
  if (fd_ >= 0) ::close(fd_);
}

void StreamFile::write(std::string_view bytes) {
  char* w = reserve(bytes.size());
  std::memcpy(w, bytes.data(), bytes.size());
  advance(w + bytes.size());
}

StreamFile::Block* StreamFile::take(size_t min_cap) {
  std::unique_lock lock(m_);
  for (;;) {
    if (error_) {
      int err = error_;
      lock.unlock();
      fail_write(err);
    }
    auto fits = std::find_if(idle_.begin(), idle_.end(), [&](Block* b) { return b->cap >= min_cap; });
    if (fits != idle_.end()) {
      Block* b = *fits;
      idle_.erase(fits);
      return b;
    }
    if (blocks_.size() < kMaxBlocks || !idle_.empty()) {
      if (!idle_.empty()) {  // too small for this one: replaced by a larger block
        Block* small = idle_.back();
        idle_.pop_back();
        std::erase_if(blocks_, [&](const auto& b) { return b.get() == small; });
      }
      auto b = std::make_unique<Block>();
      b->cap = round_up(std::max(min_cap, kBlockBytes), kHugePage);
      b->data = static_cast<char*>(std::aligned_alloc(kHugePage, b->cap));
      if (!b->data) throw std::bad_alloc();
      ::madvise(b->data, b->cap, MADV_HUGEPAGE);  // advice only: 2 MiB page faults
      blocks_.push_back(std::move(b));
      return blocks_.back().get();
    }
    cv_.wait(lock);
  }
}

void StreamFile::submit(Block* b, size_t len) {
  b->len = len;
  b->offset = offset_;
  offset_ += int64_t(len);
  {
    std::lock_guard lock(m_);
    queue_.push_back(b);
  }
  cv_.notify_all();
}

void StreamFile::next(size_t n) {
  // O_DIRECT writes whole blocks: the partial last one moves to the front of the next buffer.
  const size_t tail = direct() ? pos_ % kAlign : 0;
  const size_t full = pos_ - tail;
  Block* fresh = take(tail + n);
  std::memcpy(fresh->data, buf_ + full, tail);
  if (full > 0) {
    submit(cur_, full);
  } else {
    std::lock_guard lock(m_);
    idle_.push_back(cur_);
  }
  cur_ = fresh;
  buf_ = fresh->data;
  cap_ = fresh->cap;
  pos_ = tail;
}

int StreamFile::write_at(const char* p, size_t len, int64_t offset) {
  size_t left = len;
  int64_t at = offset;
  while (left > 0) {
    ssize_t w = ::pwrite(fd_, p, left, at);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EINVAL && direct()) {  // O_DIRECT refused after all: go buffered
      ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_DIRECT);
      direct_ = false;
      continue;
    }
    if (w < 0) return errno;
    if (w == 0) return EIO;
    p += w, left -= size_t(w), at += w;
  }
  // Buffered: start the disk on it now, so the final fsync has little left to wait for.
  if (!direct()) ::sync_file_range(fd_, offset, off_t(len), SYNC_FILE_RANGE_WRITE);
  return 0;
}

void StreamFile::run() {
  std::unique_lock lock(m_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopped, nothing left
    Block* b = queue_.front();
    queue_.erase(queue_.begin());
    int err = error_;
    lock.unlock();
    if (!err) err = write_at(b->data, b->len, b->offset);
    lock.lock();
    if (err && !error_) error_ = err;
    idle_.push_back(b);
    cv_.notify_all();
  }
}

void StreamFile::stop_writer() {
  if (!writer_.joinable()) return;
  {
    std::lock_guard lock(m_);
    stop_ = true;
  }
  cv_.notify_all();
  writer_.join();
}

void StreamFile::fail_write(int err) {
  stop_writer();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  closed_ = true;
  tmp_.discard();
  fail(where_, "{}: write failed ({})", tmp_.path(), std::strerror(err));
}

void StreamFile::close() {
  if (closed_) return;
  const size_t tail = direct() ? pos_ % kAlign : 0;
  if (pos_ > tail) {
    submit(cur_, pos_ - tail);  // offset_ is now the tail's
  }
  stop_writer();  // writes everything queued first
  int err = error_;
  if (!err && tail > 0) {
    // The last partial block through the page cache: O_DIRECT cannot write it.
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_DIRECT);
    direct_ = false;
    err = write_at(buf_ + (pos_ - tail), tail, offset_);
  }
  if (::close(fd_) != 0 && !err) err = errno;
  fd_ = -1;
  closed_ = true;
  if (err) {
    tmp_.discard();
    fail(where_, "{}: write failed ({})", tmp_.path(), std::strerror(err));
  }
}

void StreamFile::sync() {
  close();
  tmp_.sync(where_);
}

void StreamFile::commit() {
  close();
  tmp_.commit(where_);
}

}  // namespace opscope
