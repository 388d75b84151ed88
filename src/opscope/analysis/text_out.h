// Text reports built by appending formatted lines: what the listings of the analyses
// (kernel_profile, kernel_static, line_averages) share.
#pragma once
#include <fmt/format.h>

#include <iterator>
#include <string>
#include <utility>

namespace opscope::analysis {

// Appends fmt's formatting of `a...` by `f` to `out`.
template <class... A>
void put(std::string& out, fmt::format_string<A...> f, A&&... a) {
  fmt::format_to(std::back_inserter(out), f, std::forward<A>(a)...);
}

}  // namespace opscope::analysis
