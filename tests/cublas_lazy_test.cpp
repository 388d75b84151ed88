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

// Read while the test program starts (static initialization, before any test ran a
// matmul), whatever order the tests then run in.
const std::string g_maps_at_start = mapped_files();

TEST(CublasLazy, NotMappedAtStart) {
  ASSERT_NE(g_maps_at_start.find("libopscope"), std::string::npos) << "the maps were not read";
  EXPECT_EQ(g_maps_at_start.find("libcublas"), std::string::npos) << "libcublas is mapped at start";
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
