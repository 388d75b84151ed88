// A command's whole output to stdout, ending in exactly one newline where it had none.
#pragma once
#include <cstdio>
#include <string>

namespace opscope::cli {

inline void print_text(const std::string& text) {
  std::fputs(text.c_str(), stdout);
  if (!text.empty() && text.back() != '\n') std::fputc('\n', stdout);
}

}  // namespace opscope::cli
