// F.pad's "reflect" and "replicate" modes (reflection_pad{1,2,3}d, replication_pad{1,2,3}d):
// each padded dim is one index_select of the input along it, the indices made on the host
// (edge rows read again, or mirrored without the edge), so values are copied exactly.
#include <vector>

#include "opscope/ops/indexing.h"
#include "opscope/torch/kernels.h"

namespace opscope::torch_bridge {

namespace {

// Source index along a dim of n for the output position j in [-left, n + right).
int64_t source(PadMode mode, int64_t j, int64_t n) {
  if (mode == PadMode::replicate) return j < 0 ? 0 : (j >= n ? n - 1 : j);
  return j < 0 ? -j : (j >= n ? 2 * (n - 1) - j : j);  // reflect: the edge is not repeated
}

}  // namespace

template <PadMode M, int D, Form F>
void pad_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  std::vector<int64_t> pads = c.arg(1).toIntVector();
  if (!has_kernels({&self}, false) || int64_t(pads.size()) != 2 * D || self.dim() < D + 1 || self.dim() > D + 2)
    return c.fall_back();  // torch's own error for a wrong rank or padding length
  for (int i = 0; i < D; ++i) {
    int64_t n = self.size(self.dim() - 1 - i), left = pads[size_t(2 * i)], right = pads[size_t(2 * i + 1)];
    // negative pads (cropping), an empty dim, reflect's pad >= n: torch's kernel (or its error)
    if (left < 0 || right < 0 || n == 0 || (M == PadMode::reflect && (left >= n || right >= n))) return c.fall_back();
  }
  try {
    Tensor x = from_torch(self, c.name());
    AtenScope scope(c.name(), {&x});
    bool padded = false;
    for (int i = 0; i < D; ++i) {
      const int dim = x.ndim() - 1 - i;
      int64_t n = x.shape()[dim], left = pads[size_t(2 * i)], right = pads[size_t(2 * i + 1)];
      if (left == 0 && right == 0) continue;
      std::vector<int64_t> idx;
      idx.reserve(size_t(n + left + right));
      for (int64_t j = -left; j < n + right; ++j) idx.push_back(source(M, j, n));
      x = index_select(x, dim, from_host_i64(idx, {int64_t(idx.size())}, &x.device()));
      padded = true;
    }
    if (!padded) x = x.clone();  // all pads 0: still a new tensor, as torch's
    c.ret(deliver(F, x, F == Form::out ? c.out() : self, c.name()));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

#define OPSCOPE_PAD_FORMS(M, D)                                                      \
  template void pad_kernel<M, D, Form::functional>(const c10::OperatorHandle&, Stack*); \
  template void pad_kernel<M, D, Form::out>(const c10::OperatorHandle&, Stack*);
OPSCOPE_PAD_FORMS(PadMode::reflect, 1)
OPSCOPE_PAD_FORMS(PadMode::reflect, 2)
OPSCOPE_PAD_FORMS(PadMode::reflect, 3)
OPSCOPE_PAD_FORMS(PadMode::replicate, 1)
OPSCOPE_PAD_FORMS(PadMode::replicate, 2)
OPSCOPE_PAD_FORMS(PadMode::replicate, 3)
#undef OPSCOPE_PAD_FORMS

}  // namespace opscope::torch_bridge
