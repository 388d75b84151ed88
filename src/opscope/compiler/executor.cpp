#include "opscope/compiler/executor.h"

#include <fmt/format.h>

#include <optional>
#include <utility>

#include "opscope/compiler/kernel.h"
#include "opscope/core/error.h"
#include "opscope/profiler/hooks.h"
#include "opscope/profiler/record_function.h"
#include "opscope/runtime/device.h"
#include "opscope/runtime/runtime.h"

namespace opscope::compiler {

namespace {

// A value must have the layout it had when traced: kernels and views were built for it.
void check_layout(const std::string& fn, const Graph& g, int v, const Tensor& t) {
  const Value& val = g.values[v];
  if (t.shape() == val.shape && t.dtype() == val.dtype && (t.strides() == val.strides || t.numel() <= 1)) return;
  fail("compile", "{}: internal: value %{} is {} {} with strides {} at run time but was {} when traced", fn, v,
       t.shape().str(), dtype_name(t.dtype()), t.strides().str(), type_str(val));
}

void launch_fused(const std::string& fn, const Graph& g, const Node& n, KernelEntry entry,
                  std::shared_ptr<const DeviceKernel> device_kernel, std::vector<Tensor>& vals, Device& dev) {
  const FusedKernel& k = *n.attrs.kernel;
  std::vector<void*> args;
  std::vector<const Tensor*> reads, writes;
  int64_t bytes = 0;
  for (int v : n.inputs) {
    const Tensor& t = vals[size_t(v)];
    check_layout(fn, g, v, t);
    args.push_back(t.data_ptr());
    reads.push_back(&t);
    bytes += t.nbytes();
  }
  for (int v : n.outputs) {
    const Value& val = g.values[size_t(v)];
    vals[size_t(v)] = runtime::allocate(val.shape, val.dtype, dev);
    args.push_back(vals[size_t(v)].data_ptr());
    writes.push_back(&vals[size_t(v)]);
    bytes += vals[size_t(v)].nbytes();
  }
  LaunchSpec spec;
  spec.name = k.name;
  spec.work = k.work();
  spec.grain = k.grain();
  spec.bytes = bytes;
  spec.flops = k.flops();
  if (device_kernel) {
    // One launch of the whole grid, enqueued by the device's scheduler (as its eager kernels).
    spec.work = 1;
    spec.grain = 1;
    spec.body = [k = std::move(device_kernel), args = std::move(args)](int64_t, int64_t) { k->launch(args.data()); };
  } else {
    spec.body = [entry, args = std::move(args), name = k.name](int64_t b, int64_t e) {
      if (entry(args.data(), b, e) != 0) fail(name, "kernel {} could not allocate its scratch rows", name);
    };
  }
  runtime::launch(dev, std::move(spec), std::span<const Tensor* const>(reads), std::span<const Tensor* const>(writes));
}

// The module ranges open around the launches of a run while a profile records: between
// two launches only the ranges that differ close and open.
class ModuleRanges {
 public:
  void enter(const std::vector<std::string>& want) {
    size_t k = 0;
    while (k < open_.size() && k < want.size() && *open_[k].first == want[k]) ++k;
    while (open_.size() > k) close_last();
    for (size_t i = k; i < want.size(); ++i) open_.emplace_back(&want[i], prof::range_begin(want[i]));
  }
  ~ModuleRanges() {
    while (!open_.empty()) close_last();
  }

 private:
  void close_last() {
    if (open_.back().second) prof::range_end(open_.back().second);  // 0: the range was not recorded
    open_.pop_back();
  }
  std::vector<std::pair<const std::string*, uint64_t>> open_;  // name, range id
};

bool launches(const Node& n) {
  OpClass c = op_class(n.kind);
  return c != OpClass::source && c != OpClass::view;
}

// Per value, the index of the last node that reads it, so that run() can drop it there:
// as in eager PyTorch, where an intermediate is freed at its last use, the caching allocator
// then hands its (cache-warm) block to a later result of the same stream. Kept to the end,
// every intermediate held its own block: twice eager's peak memory on a Llama-style
// decoder, and each kernel wrote to memory no cache held. Graph outputs are never dropped
// (-1), nor values no node reads, which are dropped right after the node that makes them.
std::vector<int> last_reads(const Graph& g) {
  std::vector<int> last(g.values.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].dead) continue;
    for (int v : g.nodes[i].inputs) last[size_t(v)] = int(i);
    for (int v : g.nodes[i].outputs)
      if (last[size_t(v)] < int(i)) last[size_t(v)] = int(i);
  }
  for (int o : g.outputs) last[size_t(o)] = -1;
  return last;
}

}  // namespace

std::vector<Tensor> Executable::run(const std::vector<Tensor>& inputs) const {
  Device& dev = inputs.empty() ? cpu() : inputs[0].device();
  std::vector<Tensor> vals(graph.values.size());
  std::optional<ModuleRanges> ranges;
  if ((prof::layers() & prof::kFramework) && !scopes.empty()) ranges.emplace();
  const std::vector<int> last = last_reads(graph);
  auto drop_dead = [&](const Node& n, int i) {
    for (const std::vector<int>* vs : {&n.inputs, &n.outputs})
      for (int v : *vs)
        if (last[size_t(v)] == i) vals[size_t(v)] = Tensor();
  };
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& n = graph.nodes[i];
    if (ranges && launches(n)) ranges->enter(scopes[i].ranges);
    switch (n.kind) {
      case OpKind::input: vals[size_t(n.outputs[0])] = inputs[size_t(n.attrs.axis)]; break;
      case OpKind::constant: break;  // made only where an eager op needs a tensor
      case OpKind::fused:
        if (i < device_kernels.size() && device_kernels[i]) {
          launch_fused(name, graph, n, nullptr, device_kernels[i], vals, dev);
          break;
        }
        if (entries[i]) {
          launch_fused(name, graph, n, entries[i], nullptr, vals, dev);
          break;
        }
        [[fallthrough]];
      default:
        if (n.kind == OpKind::matmul && packed && packed->run(graph, i, vals, dev)) {  // on its packed weight
          check_layout(name, graph, n.outputs[0], vals[size_t(n.outputs[0])]);
          break;
        }
        eval_eager(graph, n, vals, dev);
        if (n.kind != OpKind::fused)
          for (int v : n.outputs) check_layout(name, graph, v, vals[size_t(v)]);
    }
    drop_dead(n, int(i));
  }
  std::vector<Tensor> outs;
  for (int o : graph.outputs) {
    if (!vals[size_t(o)].defined()) {  // a constant result
      const Value& v = graph.values[size_t(o)];
      vals[size_t(o)] = full(v.shape, graph.producer(o).attrs.scalar, v.dtype, &dev);
    }
    outs.push_back(vals[size_t(o)]);
  }
  return outs;
}

}  // namespace opscope::compiler
