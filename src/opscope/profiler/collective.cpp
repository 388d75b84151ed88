#include "opscope/profiler/collective.h"

#include <cctype>
#include <charconv>

namespace opscope::prof {

namespace {

// ", group of 2" -> 2: the integer after `key` in `s`, or -1.
int64_t int_after(std::string_view s, std::string_view key) {
  size_t at = s.find(key);
  if (at == std::string_view::npos) return -1;
  std::string_view rest = s.substr(at + key.size());
  int64_t v = -1;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), v);
  return ec == std::errc() ? v : -1;
}

// "_allgather_base" / "AllGather" / "all_gather" -> "allgather".
std::string canonical(std::string_view kind) {
  std::string k;
  for (char c : kind)
    if (c != '_') k += char(std::tolower(static_cast<unsigned char>(c)));
  if (k.size() > 4 && k.compare(k.size() - 4, 4, "base") == 0) k.resize(k.size() - 4);
  if (k.size() > 6 && k.compare(k.size() - 6, 6, "single") == 0) k.resize(k.size() - 6);
  return k;
}

}  // namespace

std::optional<CollectiveInfo> parse_collective(std::string_view shapes) {
  if (shapes.rfind(kCollectivePrefix, 0) != 0) return std::nullopt;
  std::string_view rest = shapes.substr(kCollectivePrefix.size());
  CollectiveInfo c;
  c.kind = std::string(rest.substr(0, rest.find(',')));
  int64_t n = int_after(rest, ", group of ");
  c.group_size = n > 0 ? n : 0;
  c.seq = int_after(rest, ", seq ");
  if (size_t at = rest.find(", pg "); at != std::string_view::npos) {
    std::string_view g = rest.substr(at + 5);
    c.group = std::string(g.substr(0, g.find(',')));
  }
  return c;
}

double bus_factor(std::string_view kind, int64_t n) {
  if (n < 1) return 0;
  std::string k = canonical(kind);
  double nd = double(n);
  if (k == "allreduce") return 2 * (nd - 1) / nd;
  if (k == "allgather" || k == "reducescatter" || k == "alltoall" || k == "gather" || k == "scatter")
    return (nd - 1) / nd;
  if (k == "broadcast" || k == "reduce" || k == "send" || k == "recv" || k == "sendrecv") return 1;
  return 0;
}

}  // namespace opscope::prof
