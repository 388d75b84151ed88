// The compiler's graph IR: values (shape, strides, dtype) produced by nodes (an op kind
// tag, operand values, attributes). A traced function becomes a Graph; passes rewrite
// it; fused nodes carry their own body Graph. Nodes are kept in topological order.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "opscope/compiler/origins.h"
#include "opscope/core/dtype.h"
#include "opscope/core/shape.h"
#include "opscope/runtime/tensor.h"

namespace opscope::compiler {

enum class OpKind : uint8_t {
  // sources
  input, constant, param, untraced,
  // a view of another value (any of reshape, slice, transpose, expand, ...)
  as_strided,
  // elementwise
  neg, abs, exp, log, sqrt, rsqrt, sin, cos, tanh, sigmoid, silu, gelu, relu,
  add, sub, mul, div, pow, maximum, minimum,
  cast, contiguous, clone,
  // reductions
  sum, mean, max, min, var, argmax,
  // library kernels that are already fused, and ops that never fuse
  softmax, rms_norm, layer_norm, matmul, concat, embedding, custom,
  // matmul → elementwise steps on the scores → softmax → matmul, one kernel (fuse_attention.cpp)
  attention,
  // x * cos + rotate_half(x) * sin, rotary position embedding, one kernel (fuse_rotary.cpp)
  rotary,
  // a generated kernel (attrs.kernel)
  fused,
};

// What a pass needs to know about a kind: its class, instead of chains of kind tests.
enum class OpClass : uint8_t { source, view, unary, binary, copy, reduction, library, fused };

struct OpInfo {
  const char* name;
  OpClass cls;
};
const OpInfo& op_info(OpKind k);
inline const char* op_name(OpKind k) { return op_info(k).name; }
inline OpClass op_class(OpKind k) { return op_info(k).cls; }
inline bool is_elementwise(OpKind k) {
  OpClass c = op_class(k);
  return c == OpClass::unary || c == OpClass::binary || c == OpClass::copy;
}
// The kind recorded for a public op name ("mul", "mean", "to", ...), if the compiler knows it.
std::optional<OpKind> kind_from_op_name(std::string_view name);

struct FusedKernel;

// attention: a step each score takes before the softmax, s = s op x (x op s when `swap`),
// x the scalar or, when input >= 0, the node's operand of that index broadcast to the
// scores (attrs.axes: their shape).
struct ScoreStep {
  OpKind op = OpKind::mul;  // add, sub, mul or div
  bool swap = false;
  double scalar = 0;
  int input = -1;
};

struct Attrs {
  std::vector<int64_t> axes;  // reductions: normalized, sorted; attention: the scores' shape
  bool keepdim = false;
  double scalar = 0;          // constant value; eps of the norms
  int64_t axis = 0;           // softmax, argmax, concat; param index
  int64_t correction = 1;     // var
  int64_t offset = 0;         // as_strided: element offset from the base value's offset
  DType dtype = DType::f32;   // cast target
  std::string name;           // custom op name
  std::optional<OpKind> epilogue;  // matmul: an activation of its result, run in its launch where packed
  std::optional<OpKind> residual;  // matmul: add or mul of that with its last input (C's numel), likewise
  std::vector<ScoreStep> score;   // attention
  std::shared_ptr<FusedKernel> kernel;  // fused
};

struct Value {
  Shape shape;
  Strides strides;
  DType dtype = DType::f32;
  int node = -1;  // producer
  bool contiguous() const;
};

struct Node {
  OpKind kind = OpKind::input;
  std::vector<int> inputs;   // value ids
  std::vector<int> outputs;  // value ids
  Attrs attrs;
  std::vector<int> origins;  // where it came from: indices into Graph::origins (origins.h)
  bool dead = false;         // marked by passes, removed by Graph::compact()
};

// Adds `from`'s origins to `into`'s (a pass merging nodes keeps where each came from).
void merge_origins(Node& into, const Node& from);

class Graph {
 public:
  std::string name;
  std::vector<Value> values;
  std::vector<Node> nodes;     // topological order
  std::vector<int> inputs;     // value ids, in call order
  std::vector<int> outputs;    // value ids
  std::vector<Tensor> params;  // tensors captured by param nodes (attrs.axis indexes them)
  std::vector<Origin> origins; // the ops and module calls nodes came from (Node::origins)

  // The index of `o` in origins (added when new).
  int origin_index(const Origin& o);
  // The node's origins, resolved.
  std::vector<const Origin*> origins_of(const Node& n) const;

  int add_input(const Shape& shape, const Strides& strides, DType dt);
  // Appends a node with one output; returns the output value id.
  int add(OpKind kind, std::vector<int> inputs, const Shape& shape, DType dt, Attrs attrs = {},
          std::optional<Strides> strides = std::nullopt);
  int add_constant(double v, DType dt);
  const Node& producer(int value) const { return nodes[values[value].node]; }
  // The input or param node `value` is read from through views only (as_strided), or null:
  // a weight, when it is a matmul's B (the executor packs those, packed_weights.h).
  const Node* view_source(int value) const;
  bool read_from_source(int value) const { return view_source(value) != nullptr; }
  bool is_scalar_constant(int value) const {
    const Node& n = producer(value);
    return n.kind == OpKind::constant;
  }
  // Replaces every use of value `from` by `to` (operands and outputs).
  void replace_uses(int from, int to);
  // Drops dead nodes and unused values, renumbering values in order of definition, so
  // equal graphs print equally.
  void compact();
  // Uses of each value: node indices (a graph output counts as use -1).
  std::vector<std::vector<int>> uses() const;

  std::string str() const;
  // The node line "%3: f32[32, 1] = mean(%2) axes=[1] keepdim", for tests and explain.
  std::string node_str(const Node& n, int indent = 2) const;
  // Attributes as canonical text (CSE keys, printing).
  static std::string attrs_str(const Node& n);
};

// Whether value v (of Graph::uses()) is read by exactly one node and is not an output: a
// pass may then fold its producer into that node.
inline bool single_use(const std::vector<std::vector<int>>& uses, int v) {
  return uses[size_t(v)].size() == 1 && uses[size_t(v)][0] >= 0;
}

std::string type_str(const Value& v);
// "%.17g" for doubles, exact and locale-free.
std::string fmt_double(double v);

}  // namespace opscope::compiler
