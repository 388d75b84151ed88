#include "opscope/kernels/cpu/triangle.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace opscope::cpu_kernels {

LaunchSpec triangle_spec(const Tensor& out, const Tensor& x, int64_t diagonal, bool upper) {
  const int64_t R = x.shape()[size_t(x.ndim() - 2)], C = x.shape()[size_t(x.ndim() - 1)];
  const size_t item = size_t(x.itemsize());
  const char* xp = static_cast<const char*>(x.data_ptr());
  char* yp = static_cast<char*>(out.data_ptr());
  LaunchSpec spec;
  spec.name = fmt::format("{}_{}", upper ? "triu" : "tril", dtype_name(x.dtype()));
  spec.work = R && C ? x.numel() / C : 0;
  spec.grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(C, 1));
  spec.bytes = 2 * x.nbytes();
  spec.body = [=](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t i = r % R;
      // The kept columns [lo, hi) of row i.
      int64_t lo = upper ? std::clamp<int64_t>(i + diagonal, 0, C) : 0;
      int64_t hi = upper ? C : std::clamp<int64_t>(i + diagonal + 1, 0, C);
      hi = std::max(hi, lo);
      char* y = yp + size_t(r * C) * item;
      const char* xr = xp + size_t(r * C) * item;
      std::memset(y, 0, size_t(lo) * item);
      std::memcpy(y + size_t(lo) * item, xr + size_t(lo) * item, size_t(hi - lo) * item);
      std::memset(y + size_t(hi) * item, 0, size_t(C - hi) * item);
    }
  };
  return spec;
}

}  // namespace opscope::cpu_kernels
