#include "opscope/runtime/host_memory.h"

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <string>

#include "opscope/core/error.h"

namespace opscope {

int64_t parse_memory_size(std::string_view text, std::string_view what) {
  auto bad = [&]() {
    fail(what, "'{}' is not a size (bytes, or a number with K, M, G or T: 1073741824, 512M, 16G)", text);
  };
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end == text.data()) bad();
  std::string unit(end, text.data() + text.size());
  for (char& c : unit) c = char(std::toupper(static_cast<unsigned char>(c)));
  int shift = 0;
  if (!unit.empty()) {
    const std::string_view units = "KMGT";
    size_t at = units.find(unit[0]);
    std::string_view rest = std::string_view(unit).substr(1);
    if (at == units.npos || !(rest.empty() || rest == "B" || rest == "IB")) bad();
    shift = 10 * int(at + 1);
  }
  if (n == 0 || n > (uint64_t(std::numeric_limits<int64_t>::max()) >> shift)) bad();
  return int64_t(n << shift);
}

int64_t mem_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("MemAvailable:", 0) == 0) return std::strtoll(line.c_str() + 13, nullptr, 10) * 1024;  // in kB
  return 0;
}

int64_t cpu_memory_capacity() {
  const char* v = std::getenv("OPSCOPE_CPU_MEMORY");
  if (v && *v) return parse_memory_size(v, "OPSCOPE_CPU_MEMORY");
  return mem_available_bytes();
}

}  // namespace opscope
