// Kernel breakdown (HTA's get_gpu_kernel_breakdown): one rank's device time by kind
// (COMM, COMP, MEM: kernel_kind.h's rules) and by kernel name. Times are summed per
// piece of work, not merged: two streams busy at once count twice, so each kind's share
// is of all device work time, as HTA reports it. Only device work is listed, by the
// kernel's own name: the runtime calls that launched it (cudaLaunchKernel, ...) never
// appear.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "opscope/analysis/rank_view.h"

namespace opscope::analysis {

struct KernelStat {
  std::string name;
  KernelKind kind = KernelKind::comp;
  int64_t count = 0, total_ns = 0, min_ns = 0, max_ns = 0;
  int64_t longest_t0 = 0, longest_t1 = 0;  // its longest run, in the trace's time
  int64_t mean_ns() const { return count ? total_ns / count : 0; }
};

struct KernelBreakdown {
  std::array<int64_t, kKernelKinds> kind_ns{};     // by KernelKind
  std::array<int64_t, kKernelKinds> kind_count{};
  std::vector<KernelStat> kernels;                 // by total_ns, largest first
  int64_t total_ns() const { return kind_ns[0] + kind_ns[1] + kind_ns[2]; }
  int64_t of(KernelKind k) const { return kind_ns[size_t(k)]; }
};

KernelBreakdown kernel_breakdown(const RankView& view);

}  // namespace opscope::analysis
