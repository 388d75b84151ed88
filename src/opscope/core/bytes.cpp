#include "opscope/core/bytes.h"

#include <fmt/format.h>

#include <cmath>

namespace opscope {

std::string format_memory(int64_t bytes, int decimals) {
  double a = std::abs(double(bytes));
  const char* sign = bytes < 0 ? "-" : "";
  if (a >= 1024.0 * 1024 * 1024) return fmt::format("{}{:.{}f} GB", sign, a / (1024.0 * 1024 * 1024), decimals);
  if (a >= 1024.0 * 1024) return fmt::format("{}{:.{}f} MB", sign, a / (1024.0 * 1024), decimals);
  if (a >= 1024.0) return fmt::format("{}{:.{}f} KB", sign, a / 1024.0, decimals);
  return fmt::format("{} B", bytes);
}

}  // namespace opscope
