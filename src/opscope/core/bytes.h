// Byte counts in human units, as torch's tables print them.
#pragma once
#include <cstdint>
#include <string>

namespace opscope {

// Base 1024: "512 B", "1.50 KB", "-4.00 MB", "2.00 GB" (`decimals` digits after the point
// above bytes).
std::string format_memory(int64_t bytes, int decimals = 2);

}  // namespace opscope
