#include "opscope/importer/trace_file.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "opscope/core/error.h"

namespace opscope::importer {

TraceFile::TraceFile(const std::string& path) : path_(path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail("import", "{}: cannot open the file", path);
  if (!S_ISREG(st.st_mode)) fail("import", "{}: not a regular file", path);
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) fail("import", "{}: cannot open the file", path);
  gzbuffer(f, 1 << 20);
  gz_ = f;
  // A trace's JSON deflates about 10x.
  hint_ = size_t(st.st_size) * (gzdirect(f) ? 1 : 10);
}

TraceFile::~TraceFile() {
  if (gz_) gzclose_r(static_cast<gzFile>(gz_));
}

size_t TraceFile::read(char* dst, size_t n) {
  gzFile f = static_cast<gzFile>(gz_);
  int got = gzread(f, dst, unsigned(std::min<size_t>(n, INT_MAX / 2)));
  int err = Z_OK;
  const char* msg = gzerror(f, &err);
  if (got < 0 || (err != Z_OK && err != Z_STREAM_END)) {
    if (err == Z_BUF_ERROR)
      fail("import", "{}: the gzip stream ends early after {} bytes (a truncated file?)", path_, total_ + size_t(std::max(got, 0)));
    if (err == Z_ERRNO) fail("import", "{}: read failed: {}", path_, std::strerror(errno));
    fail("import", "{}: corrupt gzip data ({}) after {} bytes", path_, msg ? msg : "zlib error", total_);
  }
  total_ += size_t(got);
  return size_t(got);
}

size_t MemorySource::read(char* dst, size_t n) {
  size_t k = std::min({n, bytes_.size() - at_, max_read_});
  std::memcpy(dst, bytes_.data() + at_, k);
  at_ += k;
  return k;
}

bool is_trace_file_name(const std::string& path) {
  auto ends = [&](std::string_view suffix) {
    return path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends(".json") || ends(".json.gz");
}

}  // namespace opscope::importer
