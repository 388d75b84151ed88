// Small helpers the test files share.
#pragma once
#include <string>

#include "opscope/core/error.h"

namespace opscope::test_util {

// Runs `f` and returns the message of the opscope::Error it throws ("(no error)" if none,
// which reads plainly in a failed expectation).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

inline bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

}  // namespace opscope::test_util
