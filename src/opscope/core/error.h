// Errors. Every message starts with the op (or flag, or file) in brackets, as in
// "[rms_norm] weight has shape (4095) but x's last axis is 4096".
#pragma once
#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <string_view>

namespace opscope {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <class... Args>
[[noreturn]] void fail(std::string_view where, fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format("[{}] {}", where, fmt::format(f, std::forward<Args>(args)...)));
}

}  // namespace opscope

// Checks a condition of an op's input; on failure throws "[op] message".
#define OPSCOPE_CHECK(cond, op, ...)           \
  do {                                         \
    if (!(cond)) ::opscope::fail(op, __VA_ARGS__); \
  } while (0)
