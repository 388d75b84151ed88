// What a piece of device work is for, read from its name by one table of rules: the
// kernel breakdown's three kinds (HTA's COMM, COMP, MEM).
//
// Only device work gets a kind: kernels, memcpys and memsets (Kineto's kernel,
// gpu_memcpy and gpu_memset categories, CUPTI's records, the CPU device's launches);
// syncs and GPU-side annotations are not work and are never classified. Kineto and
// CUPTI name a copy "Memcpy HtoD (Pinned -> Device)" and a fill "Memset (Device)"
// whatever the GPU, so the category shows in the name and the name rules alone decide.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>

namespace opscope::analysis {

enum class KernelKind : uint8_t { comp, comm, mem };
constexpr int kKernelKinds = 3;
// "COMP", "COMM", "MEM"
const char* kernel_kind_name(KernelKind k);

struct KindRule {
  KernelKind kind;
  enum class Match : uint8_t { prefix, contains } match;
  std::string_view text;  // compared ignoring case
  std::string_view why;   // what the rule catches, for docs and `opscope analyze --rules`
};

// The rules in the order they are tried; the first match decides, and work no rule
// matches is COMP.
std::span<const KindRule> kernel_kind_rules();

KernelKind kernel_kind(std::string_view name);

}  // namespace opscope::analysis
