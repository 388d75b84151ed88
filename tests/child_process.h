// Tests that need a process of their own (an environment read before main, another user,
// two processes racing for one cache entry) run this test binary again as a *child
// entry*: a function registered by name, which main() (test_main.cpp) runs instead of the
// tests when OPSCOPE_TEST_CHILD names it. A child is not a test, so it never shows up as
// a skipped one; its stdout and stderr go to a log file, never into the parent test's
// output (where a child's "[  SKIPPED ]" once made ctest count the parent as skipped),
// and the parent asserts on its exit status and on what it printed.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

namespace opscope::testutil {

// A child entry returns the process's exit status (0: it did its part).
using ChildEntry = int (*)();

// Registers `fn` under `name`; use OPSCOPE_CHILD_ENTRY, which does it at static init.
bool register_child_entry(const char* name, ChildEntry fn);
// For main(): the entry OPSCOPE_TEST_CHILD names. Throws when it names none.
ChildEntry child_entry_from_env();

struct ChildResult {
  int status = -1;  // exit status; 128 + signal when it was killed
  std::string log;  // its stdout and stderr
};

class Child {
 public:
  // Starts entry `name` in a new process of this binary, with this process's environment
  // changed by `env`: "KEY=VALUE" sets a variable, a bare "KEY" removes it.
  Child(const std::string& name, const std::vector<std::string>& env = {});
  // Starts the test now running again, alone, in a new process with `env` applied (a GPU
  // hidden, say). It exits 0 when the test passed (77 when it skipped).
  static Child this_test(const std::vector<std::string>& env);
  Child(Child&& other) noexcept;
  ~Child();  // waits if wait() was not called
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ChildResult wait();

 private:
  Child(const std::string& name, const std::string& gtest_filter, const std::vector<std::string>& env);
  std::string name_, log_path_;
  pid_t pid_ = -1;
  int spawn_error_ = 0;
};

// Starts entry `name` and waits for it.
ChildResult run_child(const std::string& name, const std::vector<std::string>& env = {});
// Runs the test now running again in a child (Child::this_test) and waits for it.
ChildResult rerun_this_test(const std::vector<std::string>& env);

}  // namespace opscope::testutil

#define OPSCOPE_CHILD_ENTRY(name)                                                                   \
  static int opscope_child_##name();                                                                \
  [[maybe_unused]] static const bool opscope_child_registered_##name =                            \
      ::opscope::testutil::register_child_entry(#name, opscope_child_##name);                       \
  static int opscope_child_##name()
