// What the CPU kernels that call oneDNN share (sgemm, gemm_bf16, packed_matmul): its CPU
// engine, each device core's stream with that core's OpenMP team kept to one thread,
// whether a primitive got only a reference kernel, and the order of teardown at exit.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

namespace opscope::cpu_kernels {

// Before oneDNN runs on a device core: its OpenMP team there is one thread.
void onednn_on_this_core();
// After a call into oneDNN has made its statics: registers the device's drain at exit after them.
void onednn_statics_made();
dnnl::engine& onednn_engine();
// This thread's stream on the engine, after onednn_on_this_core().
dnnl::stream& onednn_core_stream();
// Whether oneDNN found only a reference kernel for `pd` (slower than sgemm on f32 copies).
bool reference_kernel(const dnnl::primitive_desc_base& pd);

}  // namespace opscope::cpu_kernels
