// Small helpers the test files share.
#pragma once
#include <cstdlib>
#include <optional>
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

// Sets (or, with no value, removes) an environment variable for a scope; restores it after.
class ScopedEnv {
 public:
  explicit ScopedEnv(std::string name, std::optional<std::string> value = std::nullopt) : name_(std::move(name)) {
    if (const char* v = std::getenv(name_.c_str())) old_ = v;
    if (value) ::setenv(name_.c_str(), value->c_str(), 1);
    else ::unsetenv(name_.c_str());
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_.c_str(), old_->c_str(), 1);
    else ::unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

inline bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

}  // namespace opscope::test_util
