#include "opscope/importer/trace_file.h"

#include <zlib.h>

#include <cstdio>
#include <memory>

#include "opscope/core/error.h"

namespace opscope::importer {

namespace {

std::string read_all(const std::string& path, size_t padding) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!f) fail("import", "{}: cannot open the file", path);
  if (std::fseek(f.get(), 0, SEEK_END) != 0) fail("import", "{}: cannot read the file (not a regular file?)", path);
  long size = std::ftell(f.get());
  if (size < 0) fail("import", "{}: cannot read the file (not a regular file?)", path);
  std::rewind(f.get());
  std::string s;
  s.reserve(size_t(size) + padding);
  s.resize(size_t(size));
  if (size > 0 && std::fread(s.data(), 1, s.size(), f.get()) != s.size())
    fail("import", "{}: read failed after fewer than {} bytes", path, size);
  return s;
}

bool gzipped(const std::string& s) { return s.size() >= 2 && uint8_t(s[0]) == 0x1f && uint8_t(s[1]) == 0x8b; }

// Inflates every gzip member of `in`; the trailer's size (mod 2^32) sizes the output.
std::string inflate_gzip(const std::string& path, const std::string& in, size_t padding) {
  std::string out;
  size_t hint = in.size() >= 4 ? size_t(uint8_t(in[in.size() - 4])) | size_t(uint8_t(in[in.size() - 3])) << 8 |
                                     size_t(uint8_t(in[in.size() - 2])) << 16 | size_t(uint8_t(in[in.size() - 1])) << 24
                               : 0;
  // The trailer is a hint only (a cut file has none): trusted within 64x the input.
  if (hint < in.size() || hint / 64 > in.size()) hint = in.size() * 8;
  out.reserve(hint + padding);
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) fail("import", "{}: zlib could not start", path);
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&z, inflateEnd);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  size_t left = in.size();
  constexpr size_t kChunk = size_t(1) << 30;  // avail_in is 32-bit
  for (;;) {
    if (z.avail_in == 0 && left > 0) {
      z.avail_in = uInt(std::min(left, kChunk));
      left -= z.avail_in;
    }
    if (out.capacity() - out.size() < (size_t(1) << 16) + padding) out.reserve(out.capacity() * 2 + padding);
    size_t have = out.size();
    // At most 16 MiB at a time: resize() zero-fills what it adds.
    size_t room = std::min(out.capacity() - have - padding, size_t(16) << 20);
    out.resize(have + room);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + have);
    z.avail_out = uInt(room);
    int rc = inflate(&z, Z_NO_FLUSH);
    out.resize(have + room - z.avail_out);
    if (rc == Z_STREAM_END) {
      if (z.avail_in == 0 && left == 0) break;
      inflateReset(&z);  // another gzip member follows
      continue;
    }
    if (rc == Z_BUF_ERROR && z.avail_in == 0 && left == 0)
      fail("import", "{}: the gzip stream ends early after {} bytes (a truncated file?)", path, out.size());
    if (rc != Z_OK && rc != Z_BUF_ERROR)
      fail("import", "{}: corrupt gzip data ({}) after {} bytes", path, z.msg ? z.msg : "zlib error", out.size());
  }
  return out;
}

}  // namespace

std::string read_trace_file(const std::string& path, size_t padding) {
  std::string s = read_all(path, padding);
  if (gzipped(s)) s = inflate_gzip(path, s, padding);
  if (s.empty()) fail("import", "{}: the file is empty", path);
  if (s.capacity() < s.size() + padding) s.reserve(s.size() + padding);
  return s;
}

bool is_trace_file_name(const std::string& path) {
  auto ends = [&](std::string_view suffix) {
    return path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends(".json") || ends(".json.gz");
}

}  // namespace opscope::importer
