#include "opscope/kernels/cpu/sgemm.h"

#include <oneapi/dnnl/dnnl.h>

#include "opscope/core/error.h"
#include "opscope/runtime/device.h"

// libgomp's, declared here: GCC's omp.h is not on clang's include path (the fuzz build).
extern "C" void omp_set_num_threads(int) noexcept;

namespace opscope::cpu_kernels {

void onednn_on_this_core() {
  // oneDNN threads through OpenMP; its team would take both CPUs from each core (and a
  // thread started by a pinned core inherits that core's CPU). The OpenMP thread count is
  // per thread: one on each of the device's cores, set once.
  thread_local const bool sequential = (omp_set_num_threads(1), true);
  (void)sequential;
}

void onednn_statics_made() {
  // The device's exit drain, registered after oneDNN's statics, runs before they go.
  static const bool drained_before_onednn_exits = (drain_cpu_at_exit(), true);
  (void)drained_before_onednn_exits;
}

void sgemm(const char* op, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  onednn_on_this_core();
  dnnl_status_t s = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
  onednn_statics_made();
  if (s != dnnl_success)
    fail(op, "sgemm of {}x{} by {}x{} failed in oneDNN (status {}; lda {}, ldb {}, ldc {})", m, k, k, n, int(s), lda,
         ldb, ldc);
}

}  // namespace opscope::cpu_kernels
