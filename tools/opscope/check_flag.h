// Runs `check`; an Error "[param] what" from it becomes "[--flag] what", so the
// message names the flag the user typed.
#pragma once
#include <string>

#include "opscope/core/error.h"

namespace opscope::cli {

template <class F>
void check_flag(const char* flag, F&& check) {
  try {
    check();
  } catch (const Error& e) {
    std::string msg = e.what();
    size_t close = msg.rfind('[', 0) == 0 ? msg.find("] ") : std::string::npos;
    throw Error(std::string("[") + flag + "] " + (close == std::string::npos ? msg : msg.substr(close + 2)));
  }
}

}  // namespace opscope::cli
