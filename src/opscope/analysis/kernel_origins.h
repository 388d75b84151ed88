// What a compiled kernel came from, read back from a finished trace: opscope.compile (and
// the C++ compiler) record, for each fused kernel launched, the framework ops it computes
// and the module calls they ran in (compiler/origins.h writes them into the trace's
// config as "kernel_origins"). Inductor names its kernels after their origin ops; Neuron's
// hierarchy view maps instructions to layers. The table, the advisor and the explorer read
// them here.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "opscope/analysis/trace.h"

namespace opscope::analysis {

struct KernelOrigins {
  std::vector<std::string> ops;      // "aten::pow", "aten::mean", ... in first-seen order
  std::vector<std::string> modules;  // the innermost module of each origin: "layers.3.ffn_norm"
  bool shared = false;               // one launch computes ops of two modules

  // "aten::pow, aten::mean, aten::rsqrt in layers.3.ffn_norm"; a kernel every layer runs
  // alike reads "in layers.N.ffn_norm (×4)"; "(shared by modules)" when shared.
  std::string text() const;
};

// Kernel name → origins; empty for a trace of eager code, or one whose config is not
// JSON (an imported trace).
std::map<std::string, KernelOrigins> kernel_origins(const Trace& trace);

}  // namespace opscope::analysis
