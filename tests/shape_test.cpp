// Element counts that do not fit an int64: an error naming the shape (the op, the flag),
// never a wrapped count that sizes an allocation or a loop. The README's
// `--shape 99999999999x99999999999` among them.
#include <gtest/gtest.h>

#include <string>

#include "cli_util.h"
#include "opscope/core/error.h"
#include "opscope/core/shape.h"
#include "opscope/ops/ops.h"
#include "opscope/runtime/tensor.h"
#include "test_util.h"

using namespace opscope;
using test_util::error_of;

TEST(Shape, NumelThatDoesNotFitAnInt64IsAnError) {
  EXPECT_EQ(Dims().numel(), 1);  // a scalar
  EXPECT_EQ(Dims({4, 4096}).numel(), 4 * 4096);
  EXPECT_EQ(Dims({int64_t(1) << 31, int64_t(1) << 31}).numel(), int64_t(1) << 62);
  EXPECT_EQ(error_of([] { Dims({99999999999, 99999999999}).numel(); }),
            "[shape] (99999999999, 99999999999) has more elements than an int64 can count (2^63 - 1)");
  EXPECT_EQ(error_of([] { Dims({int64_t(1) << 32, int64_t(1) << 32}).numel(); }).rfind("[shape] ", 0), 0u);
  // A zero dim anywhere makes it empty, however large the others.
  EXPECT_EQ(Dims({int64_t(1) << 40, int64_t(1) << 40, 0}).numel(), 0);
  EXPECT_EQ(Dims({0, int64_t(1) << 40, int64_t(1) << 40}).numel(), 0);
}

TEST(Shape, AnAllocationPast2To63BytesIsAnErrorNamingTheOp) {
  // 2^61 f32 elements count fine but need 2^63 bytes.
  std::string e = error_of([] { empty({int64_t(1) << 61}, DType::f32); });
  EXPECT_EQ(e, "[empty] shape (2305843009213693952) of f32 is more than 2^63 bytes");
  e = error_of([] { randn({99999999999, 99999999999}, 0); });
  EXPECT_NE(e.find("(99999999999, 99999999999)"), std::string::npos) << e;
  EXPECT_EQ(e[0], '[') << e;
}

TEST(Shape, CliShapeTooLargeIsNamed) {
  testutil::CliResult r =
      testutil::run_opscope({"profile", "rmsnorm", "--shape", "99999999999x99999999999", "--out", "/nonexistent/x"});
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("opscope: [--shape] '99999999999x99999999999' is 99999999999 x 99999999999 elements: more "
                       "than 2^60, past what a tensor can address"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("device peaks"), std::string::npos) << "checked before the probe:\n" << r.out;
  r = testutil::run_opscope({"compile", "rmsnorm", "--shape", "4611686018427387904x4"});
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("[--shape] '4611686018427387904x4' is"), std::string::npos) << r.out;
}
