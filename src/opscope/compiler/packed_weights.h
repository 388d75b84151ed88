// A compiled graph's matmuls whose B is a weight: read from one of the graph's inputs or
// params through views only. Such a B is packed once (kernels/cpu/packed_matmul.h) and
// the pack reused while B's bytes are unwritten, as Inductor's frozen weights are, but
// without freezing: a B seen unwritten on two calls in a row is packed, and a B written
// since (by a launch or by the host) runs unpacked and is packed again once it holds still.
// The traced call, which runs the function eagerly, counts as the first: a compiled
// model's weights are packed on its second call, so a profile that warms up for two calls
// (torch.profiler's wait=1, warmup=1) sees the steady state.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "opscope/compiler/graph.h"
#include "opscope/runtime/tensor.h"

namespace opscope::cpu_kernels {
class PackedMatmul;
}

namespace opscope::compiler {

// The activations oneDNN's matmul can apply in its launch (a matmul node's attrs.epilogue).
bool is_matmul_epilogue(OpKind k);
// The kernel a matmul node with an epilogue runs as where its weight is packed, by name.
std::string packed_kernel_name(const Graph& g, const Node& matmul);
// Where a matmul node's bias is among its inputs (a, b, bias?, residual?): 2, or -1 for none.
int matmul_bias_input(const Node& matmul);

class PackedWeights {
 public:
  explicit PackedWeights(const Graph& g);
  ~PackedWeights();

  // Runs node `i` on its packed B and returns true; false when it has none (yet): the
  // caller runs the node's eager op.
  bool run(const Graph& g, size_t i, std::vector<Tensor>& vals, Device& dev);
  // How many matmuls run from packed weights now (for tests and explain).
  int packed() const;
  // The traced call saw `inputs` (the graph's, by its input nodes): each weight read from
  // one of them, or from a param, counts as seen there.
  void saw(const Graph& g, const std::vector<Tensor>& inputs);

 private:
  // What identifies B's bytes: its storage, and the last writes to it by a launch and by the host.
  struct Stamp {
    std::weak_ptr<Storage> storage;
    const Stream* writer = nullptr;
    uint64_t writer_seq = 0, host_writes = 0;
    int64_t offset = 0;  // -1: any view of the storage (seen as the traced input, not as B)
    bool same(const Tensor& b) const;
    static Stamp of(const Tensor& b);
  };
  struct Entry {
    Stamp seen;
    bool seen_once = false;
    bool refused = false;  // PackedMatmul::make declined: run eagerly from now on
    std::shared_ptr<const cpu_kernels::PackedMatmul> pack;
  };
  std::vector<char> weight_;  // per node: a matmul whose B is a weight
  mutable std::mutex m_;
  std::vector<Entry> entries_;  // per node
};

}  // namespace opscope::compiler
