// What the compiler cannot compile runs eagerly, right, with one warning per cause for
// the process: a node without generated code runs as its eager op inside the compiled
// function; an op the compiler does not know makes the whole function run eagerly.
// The warnings are once per process, so each check runs in a fresh process (a gtest
// death test re-executes the binary) and counts the lines it printed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "opscope/compiler/compile.h"
#include "opscope/compiler/trace.h"
#include "opscope/ops/ops.h"

using namespace opscope;
namespace fs = std::filesystem;

namespace {

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

double max_diff(const Tensor& a, const Tensor& b) {
  auto x = a.to_float_vector(), y = b.to_float_vector();
  if (x.size() != y.size()) return INFINITY;
  double d = 0;
  for (size_t i = 0; i < x.size(); ++i) d = std::max(d, double(std::fabs(x[i] - y[i])));
  return d;
}

// Exit codes of the child: 0 all right, else which check failed.
enum Check { kOk = 0, kWarnings = 10, kWrong = 20, kNotCompiled = 30 };

std::string child_cache() {
  return fs::temp_directory_path().string() + "/opscope-fallback-" + std::to_string(::getpid());
}

}  // namespace

// var has no generated code and argmax makes integers: they stay eager nodes between
// fused kernels.
int nodes_without_code_run_eagerly() {
  std::string cache = child_cache();
  ::setenv("OPSCOPE_CACHE_DIR", cache.c_str(), 1);
  auto fn = [](const Tensor& x) {
    Tensor v = var(x * 2.0, {-1}, true);
    Tensor i = argmax(x, -1, true).to(DType::f32);
    return exp(x) * v + i;
  };
  testing::internal::CaptureStderr();
  int rc = kOk;
  for (const Shape& s : {Shape{4, 16}, Shape{3, 5}}) {
    auto f = compile(fn, "partly_compiled");
    for (int k = 0; k < 3; ++k) {
      Tensor x = randn(s, uint64_t(k + 1));
      if (max_diff(f(x), fn(x)) > 1e-5) rc = kWrong;
    }
    CompileReport rep = f.report({randn(s, 1)});
    if (rep.eager_fallback || rep.kernels.empty() || rep.eager_nodes < 2) rc = kNotCompiled;
  }
  std::string err = testing::internal::GetCapturedStderr();
  std::fputs(err.c_str(), stderr);  // shown by gtest when the check fails
  fs::remove_all(cache);
  if (rc != kOk) return rc;
  return count(err, "var is not fused") == 1 && count(err, "argmax making i64 is not fused") == 1 ? kOk : kWarnings;
}

// An op name the compiler does not know: the function runs eagerly, warned once.
int unknown_ops_run_the_function_eagerly() {
  std::string cache = child_cache();
  ::setenv("OPSCOPE_CACHE_DIR", cache.c_str(), 1);
  auto fn = [](const Tensor& x) {
    Tensor y = exp(x);
    compiler::record("frobnicate", {&x}, y);
    return y * 2.0 + 1.0;
  };
  testing::internal::CaptureStderr();
  int rc = kOk;
  auto f = compile(fn, "with_unknown_op");
  for (const Shape& s : {Shape{4, 16}, Shape{7}})
    for (int k = 0; k < 3; ++k) {
      Tensor x = randn(s, uint64_t(k + 1));
      if (max_diff(f(x), exp(x) * 2.0 + 1.0) != 0) rc = kWrong;
    }
  if (!f.report({randn({7}, 1)}).eager_fallback) rc = kNotCompiled;
  std::string err = testing::internal::GetCapturedStderr();
  std::fputs(err.c_str(), stderr);  // shown by gtest when the check fails
  fs::remove_all(cache);
  if (rc != kOk) return rc;
  return count(err, "op 'frobnicate' is not known to the compiler; it runs eagerly") == 1 ? kOk : kWarnings;
}

TEST(CompilerFallback, NodesWithoutGeneratedCodeRunEagerlyWithOneWarning) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::_Exit(nodes_without_code_run_eagerly()), testing::ExitedWithCode(kOk), "");
}

TEST(CompilerFallback, UnknownOpsRunTheFunctionEagerlyWithOneWarning) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::_Exit(unknown_ops_run_the_function_eagerly()), testing::ExitedWithCode(kOk), "");
}
