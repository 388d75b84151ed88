#include "opscope/kernels/cpu/gemm_bf16.h"

#include "opscope/kernels/cpu/onednn.h"

namespace opscope::cpu_kernels {

bool gemm_bf16(const bf16_t* a, int64_t sam, int64_t sak, const bf16_t* b, int64_t sbk, int64_t sbn, bf16_t* c,
               int64_t ldc, int64_t m, int64_t n, int64_t k) {
  using md = dnnl::memory::desc;
  using dt = dnnl::memory::data_type;
  dnnl::engine& e = onednn_engine();
  try {
    md a_md({m, k}, dt::bf16, {sam, sak}), b_md({k, n}, dt::bf16, {sbk, sbn}), c_md({m, n}, dt::bf16, {ldc, 1});
    // oneDNN's primitive cache makes the primitive once per shape and layout.
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), e);
    if (reference_kernel(pd)) return false;  // brgemm, or the jit bf16 gemm for padded rows, or sgemm
    dnnl::matmul mm(pd);
    dnnl::memory am(a_md, e, const_cast<bf16_t*>(a)), bm(b_md, e, const_cast<bf16_t*>(b)), cm(c_md, e, c);
    dnnl::stream& s = onednn_core_stream();
    mm.execute(s, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
    s.wait();
  } catch (const dnnl::error&) {
    return false;  // no bf16 matmul on this CPU, or a layout it does not take
  }
  onednn_statics_made();
  return true;
}

}  // namespace opscope::cpu_kernels
