// The tracer behind compiler::record: maps the tensors an op sees to graph values.
// A tensor is known by its identity (storage, offset, shape, strides, dtype). A tensor
// not recorded by an op is a view of a known value (same storage: an as_strided node),
// a constant captured from outside the function (param), or the result of something
// the tracer cannot see (untraced: the graph then falls back to running eagerly).
#pragma once
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "opscope/compiler/graph.h"
#include "opscope/compiler/trace.h"
#include "opscope/runtime/tensor.h"

namespace opscope {
class Stream;
}

namespace opscope::compiler {

class Tracer {
 public:
  // Starts tracing on this thread with `inputs` as the graph inputs.
  Tracer(std::string name, const std::vector<Tensor>& inputs);
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  void record(std::string_view op, std::span<const Tensor* const> inputs, const Tensor& out,
              const TraceAttrs& attrs, bool custom);
  void record_creation(const Tensor& out);
  // Stops tracing; `outs` are the function's results.
  Graph finish(const std::vector<Tensor>& outs);

 private:
  int value_of(const Tensor& t);
  void define(const Tensor& t, int value);
  bool written_during_trace(const Tensor& t) const;

  Graph g_;
  Tracer* prev_;
  bool active_ = true;
  std::unordered_map<std::string, int> by_identity_;
  std::unordered_map<const void*, std::pair<int, int64_t>> root_by_storage_;  // value, its offset
  std::vector<Tensor> keep_;  // keeps storages alive so that addresses stay unique
  std::vector<std::pair<const Stream*, uint64_t>> seq0_;  // streams' submitted counts at start
};

}  // namespace opscope::compiler
