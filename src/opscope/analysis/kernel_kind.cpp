#include "opscope/analysis/kernel_kind.h"

#include <array>
#include <cctype>

namespace opscope::analysis {

namespace {

using M = KindRule::Match;

// Copies first (a peer-to-peer copy moves data; it is not a collective), then the
// collectives' libraries, then collectives named by what they do.
constexpr std::array kRules = {
    KindRule{KernelKind::mem, M::prefix, "Memcpy", "copies: Kineto's gpu_memcpy and CUPTI's records (Memcpy HtoD, DtoD, PtoP...)"},
    KindRule{KernelKind::mem, M::prefix, "Memset", "fills: Kineto's gpu_memset and CUPTI's records"},
    KindRule{KernelKind::mem, M::prefix, "hipMemcpy", "ROCm copies"},
    KindRule{KernelKind::mem, M::prefix, "hipMemset", "ROCm fills"},
    KindRule{KernelKind::mem, M::prefix, "CopyHostToDevice", "ROCm (roctracer) copies"},
    KindRule{KernelKind::mem, M::prefix, "CopyDeviceToHost", "ROCm (roctracer) copies"},
    KindRule{KernelKind::mem, M::prefix, "CopyDeviceToDevice", "ROCm (roctracer) copies"},
    KindRule{KernelKind::mem, M::prefix, "FillBuffer", "ROCm (roctracer) fills"},
    KindRule{KernelKind::mem, M::prefix, "dma", "MTIA DMA transfers"},
    KindRule{KernelKind::comm, M::contains, "nccl", "NCCL: ncclKernel_*, ncclDevKernel_* (NCCL 2.19+), ncclDev*"},
    KindRule{KernelKind::comm, M::contains, "rccl", "RCCL (ROCm's NCCL)"},
    KindRule{KernelKind::comm, M::contains, "msccl", "MSCCL / MSCCL++"},
    KindRule{KernelKind::comm, M::prefix, "hccl", "Habana / Ascend collectives"},
    KindRule{KernelKind::comm, M::contains, "nvshmem", "NVSHMEM"},
    KindRule{KernelKind::comm, M::contains, "cross_device_reduce", "vLLM's custom all-reduce"},
    KindRule{KernelKind::comm, M::contains, "all_reduce", "collectives by name (torch symmetric memory, custom all-reduce)"},
    KindRule{KernelKind::comm, M::contains, "allreduce", "collectives by name"},
    KindRule{KernelKind::comm, M::contains, "all_gather", "collectives by name"},
    KindRule{KernelKind::comm, M::contains, "allgather", "collectives by name"},
    KindRule{KernelKind::comm, M::contains, "reduce_scatter", "collectives by name"},
    KindRule{KernelKind::comm, M::contains, "reducescatter", "collectives by name"},
    KindRule{KernelKind::comm, M::contains, "all_to_all", "collectives by name"},
    KindRule{KernelKind::comm, M::contains, "alltoall", "collectives by name"},
};

char lower(char c) { return char(std::tolower(static_cast<unsigned char>(c))); }

bool same_at(std::string_view name, size_t at, std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i)
    if (lower(name[at + i]) != lower(text[i])) return false;
  return true;
}

bool matches(const KindRule& r, std::string_view name) {
  if (name.size() < r.text.size()) return false;
  if (r.match == M::prefix) return same_at(name, 0, r.text);
  for (size_t at = 0; at + r.text.size() <= name.size(); ++at)
    if (same_at(name, at, r.text)) return true;
  return false;
}

}  // namespace

const char* kernel_kind_name(KernelKind k) {
  switch (k) {
    case KernelKind::comp: return "COMP";
    case KernelKind::comm: return "COMM";
    case KernelKind::mem: return "MEM";
  }
  return "COMP";
}

std::span<const KindRule> kernel_kind_rules() { return kRules; }

KernelKind kernel_kind(std::string_view name) {
  for (const KindRule& r : kRules)
    if (matches(r, name)) return r.kind;
  return KernelKind::comp;
}

}  // namespace opscope::analysis
