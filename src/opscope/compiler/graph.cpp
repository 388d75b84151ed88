#include "opscope/compiler/graph.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "opscope/compiler/kernel.h"
#include "opscope/core/error.h"

namespace opscope::compiler {

namespace {
constexpr int kNumKinds = int(OpKind::fused) + 1;

constexpr std::array<OpInfo, kNumKinds> kInfo = {{
    {"input", OpClass::source},     {"const", OpClass::source},      {"param", OpClass::source},
    {"untraced", OpClass::source},  {"as_strided", OpClass::view},   {"neg", OpClass::unary},
    {"abs", OpClass::unary},        {"exp", OpClass::unary},         {"log", OpClass::unary},
    {"sqrt", OpClass::unary},       {"rsqrt", OpClass::unary},       {"sin", OpClass::unary},
    {"cos", OpClass::unary},        {"tanh", OpClass::unary},        {"sigmoid", OpClass::unary},
    {"silu", OpClass::unary},       {"gelu", OpClass::unary},        {"relu", OpClass::unary},
    {"add", OpClass::binary},       {"sub", OpClass::binary},        {"mul", OpClass::binary},
    {"div", OpClass::binary},       {"pow", OpClass::binary},        {"maximum", OpClass::binary},
    {"minimum", OpClass::binary},   {"cast", OpClass::copy},         {"contiguous", OpClass::copy},
    {"clone", OpClass::copy},       {"sum", OpClass::reduction},     {"mean", OpClass::reduction},
    {"max", OpClass::reduction},    {"min", OpClass::reduction},     {"var", OpClass::reduction},
    {"argmax", OpClass::reduction}, {"softmax", OpClass::library},   {"rms_norm", OpClass::library},
    {"layer_norm", OpClass::library}, {"matmul", OpClass::library},  {"concat", OpClass::library},
    {"embedding", OpClass::library}, {"custom", OpClass::library},   {"attention", OpClass::library},
    {"rotary", OpClass::library},   {"fused", OpClass::fused},
}};
static_assert(kInfo.size() == kNumKinds);
}  // namespace

const OpInfo& op_info(OpKind k) { return kInfo[size_t(k)]; }

std::optional<OpKind> kind_from_op_name(std::string_view name) {
  if (name == "to") return OpKind::cast;
  for (int i = int(OpKind::neg); i < int(OpKind::fused); ++i)
    if (i != int(OpKind::custom) && i != int(OpKind::cast) && i != int(OpKind::attention) &&
        i != int(OpKind::rotary) && name == kInfo[i].name)
      return OpKind(i);
  return std::nullopt;
}

bool Value::contiguous() const {
  int64_t expect = 1;
  for (int i = shape.size() - 1; i >= 0; --i) {
    if (shape[i] == 1) continue;
    if (strides[i] != expect) return false;
    expect *= shape[i];
  }
  return true;
}

std::string fmt_double(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string type_str(const Value& v) {
  std::string s = fmt::format("{}[", dtype_name(v.dtype));
  for (int i = 0; i < v.shape.size(); ++i) s += (i ? ", " : "") + std::to_string(v.shape[i]);
  s += "]";
  if (!v.contiguous()) {
    s += "{";
    for (int i = 0; i < v.strides.size(); ++i) s += (i ? ", " : "") + std::to_string(v.strides[i]);
    s += "}";
  }
  return s;
}

void merge_origins(Node& into, const Node& from) {
  for (int o : from.origins)
    if (std::find(into.origins.begin(), into.origins.end(), o) == into.origins.end()) into.origins.push_back(o);
}

int Graph::origin_index(const Origin& o) {
  for (size_t i = 0; i < origins.size(); ++i)
    if (origins[i] == o) return int(i);
  origins.push_back(o);
  return int(origins.size()) - 1;
}

std::vector<const Origin*> Graph::origins_of(const Node& n) const {
  std::vector<const Origin*> r;
  for (int o : n.origins)
    if (o >= 0 && size_t(o) < origins.size()) r.push_back(&origins[size_t(o)]);
  return r;
}

int Graph::add_input(const Shape& shape, const Strides& strides, DType dt) {
  int v = int(values.size());
  values.push_back(Value{shape, strides, dt, int(nodes.size())});
  Node n;
  n.kind = OpKind::input;
  n.outputs = {v};
  n.attrs.axis = int64_t(inputs.size());
  nodes.push_back(std::move(n));
  inputs.push_back(v);
  return v;
}

int Graph::add(OpKind kind, std::vector<int> ins, const Shape& shape, DType dt, Attrs attrs,
               std::optional<Strides> strides) {
  int v = int(values.size());
  values.push_back(Value{shape, strides ? *strides : contiguous_strides(shape), dt, int(nodes.size())});
  Node n;
  n.kind = kind;
  n.inputs = std::move(ins);
  n.outputs = {v};
  n.attrs = std::move(attrs);
  nodes.push_back(std::move(n));
  return v;
}

int Graph::add_constant(double v, DType dt) {
  Attrs a;
  a.scalar = v;
  return add(OpKind::constant, {}, Shape{}, dt, std::move(a));
}

void Graph::replace_uses(int from, int to) {
  for (Node& n : nodes)
    for (int& i : n.inputs)
      if (i == from) i = to;
  for (int& o : outputs)
    if (o == from) o = to;
}

std::vector<std::vector<int>> Graph::uses() const {
  std::vector<std::vector<int>> u(values.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].dead) continue;
    for (int v : nodes[i].inputs) u[v].push_back(int(i));
  }
  for (int o : outputs) u[o].push_back(-1);
  return u;
}

void Graph::compact() {
  std::vector<int> remap(values.size(), -1);
  std::vector<Value> nv;
  std::vector<Node> nn;
  auto def = [&](int v, int node) {
    remap[v] = int(nv.size());
    Value val = values[v];
    val.node = node;
    nv.push_back(val);
  };
  for (Node& n : nodes) {
    if (n.dead) continue;
    for (int& i : n.inputs) {
      if (remap[i] < 0) fail("compile", "internal: graph '{}' uses value %{} before its definition", name, i);
      i = remap[i];
    }
    for (int& o : n.outputs) {
      def(o, int(nn.size()));
      o = remap[o];
    }
    nn.push_back(std::move(n));
  }
  std::vector<int> ni;
  for (int v : inputs) {
    if (remap[v] < 0) fail("compile", "internal: a pass removed input %{} of graph '{}'", v, name);
    ni.push_back(remap[v]);
  }
  for (int& o : outputs) {
    if (remap[o] < 0) fail("compile", "internal: output %{} of graph '{}' has no producer", o, name);
    o = remap[o];
  }
  for (size_t i = 0; i < ni.size(); ++i) nn[nv[ni[i]].node].attrs.axis = int64_t(i);
  values = std::move(nv);
  nodes = std::move(nn);
  inputs = std::move(ni);
}

const Node* Graph::view_source(int v) const {
  for (;;) {
    const Node& p = producer(v);
    if (p.kind == OpKind::input || p.kind == OpKind::param) return &p;
    if (p.kind != OpKind::as_strided) return nullptr;
    v = p.inputs[0];
  }
}

std::string Graph::attrs_str(const Node& n) {
  const Attrs& a = n.attrs;
  switch (n.kind) {
    case OpKind::constant: return fmt_double(a.scalar);
    case OpKind::param: return fmt::format("#{}", a.axis);
    case OpKind::input: return fmt::format("#{}", a.axis);
    case OpKind::as_strided: return fmt::format("offset={}", a.offset);
    case OpKind::cast: return fmt::format("dtype={}", dtype_name(a.dtype));
    case OpKind::sum:
    case OpKind::mean:
    case OpKind::max:
    case OpKind::min:
    case OpKind::var: {
      std::string s = "axes=[";
      for (size_t i = 0; i < a.axes.size(); ++i) s += (i ? ", " : "") + std::to_string(a.axes[i]);
      s += "]";
      if (a.keepdim) s += " keepdim";
      if (n.kind == OpKind::var) s += fmt::format(" correction={}", a.correction);
      return s;
    }
    case OpKind::argmax: return fmt::format("axis={}{}", a.axis, a.keepdim ? " keepdim" : "");
    case OpKind::softmax:
    case OpKind::concat: return fmt::format("axis={}", a.axis);
    case OpKind::rms_norm:
    case OpKind::layer_norm:
      return fmt::format("eps={}{}", fmt_double(a.scalar), a.axis ? fmt::format(" missing={}", a.axis) : "");
    case OpKind::custom: return fmt::format("name={}", a.name);
    case OpKind::matmul: {
      std::string s = a.epilogue ? fmt::format("epilogue={}", op_name(*a.epilogue)) : "";
      if (a.residual) s += fmt::format("{}residual={}", s.empty() ? "" : " ", op_name(*a.residual));
      return s;
    }
    case OpKind::attention: {
      std::string s = fmt::format("scores=({}) steps=[", fmt::join(a.axes, ", "));
      for (size_t i = 0; i < a.score.size(); ++i) {
        const ScoreStep& st = a.score[i];
        std::string x = st.input >= 0 ? fmt::format("#{}", st.input) : fmt_double(st.scalar);
        s += fmt::format("{}{} {}{}", i ? ", " : "", op_name(st.op), x, st.swap ? " swapped" : "");
      }
      return s + "]";
    }
    case OpKind::fused:
      return a.kernel ? fmt::format("rows={} cols={} passes={}{}", a.kernel->rows, a.kernel->cols,
                                    a.kernel->passes, a.kernel->flat ? " flat" : "")
                      : "";
    default: return "";
  }
}

std::string Graph::node_str(const Node& n, int indent) const {
  std::string s(size_t(indent), ' ');
  for (size_t i = 0; i < n.outputs.size(); ++i)
    s += fmt::format("{}%{}: {}", i ? ", " : "", n.outputs[i], type_str(values[n.outputs[i]]));
  s += " = ";
  if (n.kind == OpKind::fused && n.attrs.kernel) s += n.attrs.kernel->name;
  else if (n.kind == OpKind::custom) s += "custom";
  else s += op_name(n.kind);
  if (n.kind != OpKind::constant && n.kind != OpKind::input && n.kind != OpKind::param) {
    s += "(";
    for (size_t i = 0; i < n.inputs.size(); ++i) s += (i ? ", " : "") + fmt::format("%{}", n.inputs[i]);
    s += ")";
  }
  std::string at = attrs_str(n);
  if (!at.empty()) s += " " + at;
  if (n.kind == OpKind::fused && n.attrs.kernel) {
    const Graph& b = n.attrs.kernel->body;
    s += " {\n" + std::string(size_t(indent + 4), ' ') + "inputs ";
    for (size_t i = 0; i < b.inputs.size(); ++i)
      s += fmt::format("{}%{}: {}", i ? ", " : "", b.inputs[i], type_str(b.values[b.inputs[i]]));
    s += "\n";
    for (const Node& bn : b.nodes)
      if (!bn.dead && bn.kind != OpKind::input) s += b.node_str(bn, indent + 4) + "\n";
    s += std::string(size_t(indent + 4), ' ') + "return ";
    for (size_t i = 0; i < b.outputs.size(); ++i) s += (i ? ", " : "") + fmt::format("%{}", b.outputs[i]);
    s += '\n';
    s.append(size_t(indent), ' ');
    s += '}';
  }
  return s;
}

std::string Graph::str() const {
  std::string s = fmt::format("graph {}(", name.empty() ? "fn" : name);
  for (size_t i = 0; i < inputs.size(); ++i)
    s += fmt::format("{}%{}: {}", i ? ", " : "", inputs[i], type_str(values[inputs[i]]));
  s += ") {\n";
  for (const Node& n : nodes)
    if (!n.dead && n.kind != OpKind::input) s += node_str(n) + "\n";
  s += "  return ";
  for (size_t i = 0; i < outputs.size(); ++i) s += (i ? ", " : "") + fmt::format("%{}", outputs[i]);
  s += "\n}\n";
  return s;
}

}  // namespace opscope::compiler
