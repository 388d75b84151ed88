// What the fallback recorded: per aten op (with overload), how often and how long.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace opscope::torch_bridge {

struct FallbackStat {
  int64_t count = 0;
  int64_t total_ns = 0;  // synchronize + CPU kernel + copies back
};

std::vector<std::pair<std::string, FallbackStat>> fallback_stats();
void reset_fallback_stats();
// The one-time warning per op (on by default).
void set_fallback_warnings(bool on);

}  // namespace opscope::torch_bridge
