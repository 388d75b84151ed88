// The README's C++ example (its ```cpp block), built and run as written: the build copies
// it out of README.md (readme_snippet.cmake), so a README example that stops compiling
// fails the build and one that stops working fails here. The Python examples run in
// tests/python/test_readme.py; docs/TESTING.md maps the README's other claims to tests.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "readme_cpp_includes.inc"

namespace {

// The example's body; it ends with the values it read, `v`.
std::vector<float> readme_example() {
#include "readme_cpp_body.inc"
  return v;
}

}  // namespace

// rms_norm of 32 rows of 4096 with a weight of ones: every row comes out with an RMS of 1.
TEST(Readme, TheCppExampleRunsAndNormalizesEachRow) {
  std::vector<float> v = readme_example();
  ASSERT_EQ(v.size(), size_t(32 * 4096));
  for (int r = 0; r < 32; ++r) {
    double sum_sq = 0;
    for (int i = 0; i < 4096; ++i) sum_sq += double(v[size_t(r * 4096 + i)]) * v[size_t(r * 4096 + i)];
    EXPECT_NEAR(std::sqrt(sum_sq / 4096), 1.0, 1e-3) << "row " << r;
  }
}
