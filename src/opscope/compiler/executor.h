// Running a compiled graph: fused nodes launch their generated kernel through the
// runtime (rows split across the device's cores, like any kernel); every other node
// calls its eager op (matmul, concat, custom ops, ...).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "opscope/compiler/build.h"
#include "opscope/compiler/graph.h"
#include "opscope/compiler/origins.h"
#include "opscope/compiler/packed_weights.h"
#include "opscope/runtime/tensor.h"

namespace opscope {
class Device;
}

namespace opscope::compiler {

// A fused kernel compiled for a GPU (src/opscope/cuda/compiled.h): the body of its
// launch enqueues it on the launching stream with `args` (operands, then results).
class DeviceKernel {
 public:
  virtual ~DeviceKernel() = default;
  virtual void launch(void* const* args) const = 0;
};

// A generated kernel's entry point: rows (or element blocks) [begin, end). Returns 0, or
// 1 when it could not allocate its scratch rows.
using KernelEntry = int (*)(void* const* args, long long begin, long long end);

struct Executable {
  std::string name;
  Graph graph;
  std::vector<KernelEntry> entries;  // per node (null unless fused)
  std::shared_ptr<Library> library;  // keeps the entries loaded
  // Per node, for a graph compiled for a GPU (null elsewhere); used instead of entries.
  std::vector<std::shared_ptr<const DeviceKernel>> device_kernels;
  // Per node, the module ranges its launch runs in while a profile records the
  // framework layer (origins.h); empty for nodes that launch nothing.
  std::vector<LaunchScope> scopes;
  // The matmuls whose B is a weight, packed once (packed_weights.h); null off the CPU.
  std::shared_ptr<PackedWeights> packed;

  // Runs the graph on `inputs` (the signature it was compiled for): its outputs.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
};

// The value of node `n` computed by its eager op from `vals` (a fused node runs its body
// op by op). Writes its results into `vals`.
void eval_eager(const Graph& g, const Node& n, std::vector<Tensor>& vals, Device& dev);

}  // namespace opscope::compiler
