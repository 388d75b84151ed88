// Text reports built by appending formatted lines: what the listings of the analyses
// (kernel_profile, kernel_static, line_averages, analyze_text) share.
#pragma once
#include <fmt/format.h>

#include <cstdint>
#include <iterator>
#include <string>
#include <utility>

namespace opscope::analysis {

// Appends fmt's formatting of `a...` by `f` to `out`.
template <class... A>
void put(std::string& out, fmt::format_string<A...> f, A&&... a) {
  fmt::format_to(std::back_inserter(out), f, std::forward<A>(a)...);
}

// part of whole as "12.3%", "-" where whole is 0.
inline std::string pct_text(int64_t part, int64_t whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100.0 * double(part) / double(whole)) : "-";
}

}  // namespace opscope::analysis
