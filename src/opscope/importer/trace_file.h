// Reading a torch.profiler trace file as a stream of bytes: `.json` as it is,
// `.json.gz` (torch.profiler's `*.pt.trace.json.gz`) inflated as it is read (zlib's
// gz reader takes both). Nothing holds the whole file.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace opscope::importer {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Up to n bytes into dst; 0 at the end. Throws "[import] <file>: ..." on a read error,
  // a corrupt gzip stream, or one that ends early (a truncated download).
  virtual size_t read(char* dst, size_t n) = 0;
  virtual const std::string& name() const = 0;
  // About how many bytes it will give (0: unknown), to size what grows with it.
  virtual size_t size_hint() const { return 0; }
};

class TraceFile final : public ByteSource {
 public:
  explicit TraceFile(const std::string& path);  // "[import] <path>: cannot open the file"
  ~TraceFile() override;
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;
  size_t read(char* dst, size_t n) override;
  const std::string& name() const override { return path_; }
  size_t size_hint() const override { return hint_; }

 private:
  std::string path_;
  void* gz_ = nullptr;  // gzFile
  size_t total_ = 0, hint_ = 0;
};

// Bytes already in memory (tests).
class MemorySource final : public ByteSource {
 public:
  // At most `max_read` bytes per read (tests: pieces that split tokens).
  MemorySource(std::string name, std::string_view bytes, size_t max_read = SIZE_MAX)
      : name_(std::move(name)), bytes_(bytes), max_read_(max_read) {}
  size_t read(char* dst, size_t n) override;
  const std::string& name() const override { return name_; }
  size_t size_hint() const override { return bytes_.size(); }

 private:
  std::string name_;
  std::string_view bytes_;
  size_t max_read_;
  size_t at_ = 0;
};

// Whether `path` names a trace file by its extension (.json, .json.gz).
bool is_trace_file_name(const std::string& path);

}  // namespace opscope::importer
