// How much memory the CPU device may hold: the machine's MemAvailable when the device is
// made, or OPSCOPE_CPU_MEMORY. Past it the allocator raises its out-of-memory error, so
// an op too big for the machine fails with the op's name instead of the kernel's OOM
// killer ending the process (host memory is overcommitted: malloc itself rarely fails).
#pragma once
#include <cstdint>
#include <string_view>

namespace opscope {

// "1073741824", "512K", "64M", "16G", "1T" (also "16GB", "16GiB", any case; K = 1024).
// Throws "[what] 'text' is not a size (...)" on anything else, on 0 and on overflow.
int64_t parse_memory_size(std::string_view text, std::string_view what);

// MemAvailable from /proc/meminfo, in bytes; 0 when it cannot be read.
int64_t mem_available_bytes();

// OPSCOPE_CPU_MEMORY when set (a bad value throws naming the variable), else
// mem_available_bytes().
int64_t cpu_memory_capacity();

}  // namespace opscope
