// cuBLAS is loaded by the first GPU matmul, not at start (src/opscope/cuda/cublas_lib.h):
// a process that links opscope but multiplies nothing on a GPU never maps libcublas or
// libcublasLt, whose constructors would cost it ~0.3 s of CPU.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#if OPSCOPE_TEST_HAVE_CUDA
#include "opscope/cuda/cublas_lib.h"
#endif

namespace {

std::string mapped_files() {
  std::ifstream in("/proc/self/maps");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Before any test of this process ran a matmul: gtest runs each test in its own process
// under ctest (gtest_discover_tests), so this one sees the state at start.
TEST(CublasLazy, NotMappedAtStart) {
  std::string maps = mapped_files();
  ASSERT_FALSE(maps.empty());
  EXPECT_EQ(maps.find("libcublas"), std::string::npos) << "libcublas is mapped at start";
}

#if OPSCOPE_TEST_HAVE_CUDA
TEST(CublasLazy, LoadsEveryEntryPointOnFirstUse) {
  const auto& lib = opscope::cuda_impl::cublas();
  EXPECT_TRUE(lib.create && lib.destroy && lib.set_stream && lib.set_workspace && lib.gemm_ex &&
              lib.gemm_strided_batched_ex && lib.status_string);
  // A call through the table reaches the library (its own words for two statuses).
  std::string ok = lib.status_string(CUBLAS_STATUS_SUCCESS), bad = lib.status_string(CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_FALSE(bad.empty());
  EXPECT_NE(ok, bad);
  EXPECT_NE(mapped_files().find(opscope::cuda_impl::cublas_file()), std::string::npos);
  EXPECT_EQ(&opscope::cuda_impl::cublas(), &lib);  // once per process
}
#endif

}  // namespace
