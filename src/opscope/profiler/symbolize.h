// Turns the return addresses recorded with with_stack into source locations, at
// collection (never on the hot path): dladdr finds the module, addr2line (binutils,
// when installed) the file, line and function from its debug info. Without debug info
// (a Release build without -g) the location is "module+0xoffset (function)".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace opscope::prof::detail {

// One string per address, in the same order.
std::vector<std::string> symbolize(const std::vector<uintptr_t>& addrs);

}  // namespace opscope::prof::detail
