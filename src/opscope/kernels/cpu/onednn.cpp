#include "opscope/kernels/cpu/onednn.h"

#include <cstring>

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

dnnl::engine& onednn_engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& onednn_core_stream() {
  onednn_on_this_core();
  thread_local dnnl::stream s(onednn_engine());
  return s;
}

bool reference_kernel(const dnnl::primitive_desc_base& pd) { return std::strncmp(pd.impl_info_str(), "ref", 3) == 0; }

}  // namespace opscope::cpu_kernels
