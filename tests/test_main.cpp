// The suite's main, in place of gtest_main, for two things it does not do:
// - Child entries (child_process.h): with OPSCOPE_TEST_CHILD=NAME the binary runs that
//   entry instead of the tests.
// - Skips that cannot hide a failure. ctest runs one test per process; GoogleTest marks
//   every test of a suite SKIPPED when the suite's shared setup fails, and the rule
//   gtest_discover_tests gives ctest (any "[  SKIPPED ]" in the output is a skip, whatever
//   the exit status) turned such failures into skips; tests/ctest_skip_rule.cmake removes
//   it. Under ctest (OPSCOPE_TEST_SKIP_EXIT=77, tests/CMakeLists.txt) a run exits 77,
//   ctest's SKIP_RETURN_CODE, only when its tests all skipped and nothing failed; a
//   failure exits 1. Run by hand, the exit status is GoogleTest's. Each skip prints one
//   line, "opscope-test skip: Suite.Name: reason", which scripts/check_skips.py checks
//   against the allow-list in docs/TESTING.md.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "child_process.h"

namespace {

class SkipReasons : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo& info) override {
    const ::testing::TestResult& r = *info.result();
    if (!r.Skipped()) return;
    std::string why;
    for (int i = 0; i < r.total_part_count(); ++i)
      if (r.GetTestPartResult(i).skipped()) why = r.GetTestPartResult(i).message();
    if (why.empty()) why = "(no reason given)";
    for (char& c : why)
      if (c == '\n') c = ' ';
    std::printf("opscope-test skip: %s.%s: %s\n", info.test_suite_name(), info.name(), why.c_str());
    std::fflush(stdout);
  }
};

}  // namespace

int main(int argc, char** argv) {
  try {
    if (opscope::testutil::ChildEntry child = opscope::testutil::child_entry_from_env()) return child();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "opscope_tests child: %s\n", e.what());
    return 2;
  }
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  unit.listeners().Append(new SkipReasons);
  int rc = RUN_ALL_TESTS();
  const char* skip_exit = std::getenv("OPSCOPE_TEST_SKIP_EXIT");
  if (skip_exit && rc == 0 && unit.skipped_test_count() > 0 && unit.successful_test_count() == 0) {
    std::printf("opscope-test: every test skipped, none failed\n");
    return std::atoi(skip_exit);
  }
  return rc;
}
