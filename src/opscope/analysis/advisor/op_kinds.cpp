#include "opscope/analysis/advisor/op_kinds.h"

#include <algorithm>
#include <cctype>
#include <unordered_set>

namespace opscope::advisor {

namespace {

int64_t dtype_bytes(std::string_view d) {
  if (d == "f32" || d == "i32") return 4;
  if (d == "bf16" || d == "f16" || d == "i16") return 2;
  if (d == "i64" || d == "f64") return 8;
  return 1;  // bool, u8, i8
}

}  // namespace

std::string_view base_op(std::string_view name) {
  constexpr std::string_view kAten = "aten::";
  if (name.substr(0, kAten.size()) != kAten) return name;
  name.remove_prefix(kAten.size());
  // In-place variants compute the same: add_ is add, relu_ is relu (copy_ is a copy).
  if (name.size() > 1 && name.back() == '_' && name[name.size() - 2] != '_') name.remove_suffix(1);
  // aten's spellings of the same computation
  if (name == "amax") return "max";
  if (name == "amin") return "min";
  if (name == "_to_copy") return "to";
  if (name == "_softmax") return "softmax";
  if (name == "native_layer_norm") return "layer_norm";
  if (name == "mm" || name == "bmm" || name == "addmm" || name == "baddbmm" || name == "linear") return "matmul";
  if (name == "native_dropout") return "dropout";
  if (name == "copy") return "to";
  return name;
}

bool autograd_wrapper(std::string_view name) {
  if (name.rfind("autograd::", 0) == 0) return true;
  // A backward node's own op: "MulBackward0", "AddmmBackward0", "torch::autograd::AccumulateGrad".
  size_t end = name.size();
  while (end > 0 && name[end - 1] >= '0' && name[end - 1] <= '9') --end;
  constexpr std::string_view kBackward = "Backward";
  return (end >= kBackward.size() && name.substr(end - kBackward.size(), kBackward.size()) == kBackward) ||
         name.find("AccumulateGrad") != std::string_view::npos;
}

bool matmul_like(std::string_view name) {
  std::string_view op = base_op(name);
  return op == "matmul" || op == "convolution" || op == "_convolution" || op == "cudnn_convolution" ||
         op == "conv2d" || op == "conv1d" || op == "conv3d";
}

bool activation(std::string_view name) {
  static const std::unordered_set<std::string_view> kAct = {"relu", "gelu", "silu", "sigmoid", "tanh", "hardtanh",
                                                             "leaky_relu", "elu", "mish", "softplus", "hardswish"};
  return kAct.count(base_op(name)) > 0;
}

bool fusable_op(std::string_view name) {
  name = base_op(name);
  static const std::unordered_set<std::string_view> kFusable = {
      "neg",   "abs",     "exp",         "log",     "sqrt",      "rsqrt",    "sin",         "cos",
      "tanh",  "sigmoid", "silu",        "gelu",    "relu",      "add",      "sub",         "mul",
      "div",   "pow",     "maximum",     "minimum", "to",        "contiguous", "clone",     "sum",
      "mean",  "max",     "min",         "var",
      // aten's other elementwise ops, as torch traces name them
      "rsub",  "where",   "masked_fill", "clamp",   "clamp_min", "clamp_max", "hardtanh",   "leaky_relu",
      "elu",   "mish",    "softplus",    "hardswish", "erf",     "square",   "reciprocal", "dropout",
      "addcmul", "addcdiv", "lerp",      "threshold_backward", "gelu_backward", "silu_backward",
      "sigmoid_backward", "tanh_backward"};
  return kFusable.count(name) > 0;
}

namespace {

struct Operand {
  int64_t numel, itemsize;
};

// "[(4, 8) f32, (8) f32]" → each input's element count and element size.
std::vector<Operand> operands(std::string_view s) {
  std::vector<Operand> out;
  size_t i = 0;
  while ((i = s.find('(', i)) != std::string_view::npos) {
    size_t close = s.find(')', i);
    if (close == std::string_view::npos) break;
    int64_t numel = 1;
    std::string_view dims = s.substr(i + 1, close - i - 1);
    size_t p = 0;
    while (p < dims.size()) {
      while (p < dims.size() && !std::isdigit(static_cast<unsigned char>(dims[p]))) ++p;
      if (p >= dims.size()) break;
      int64_t v = 0;
      while (p < dims.size() && std::isdigit(static_cast<unsigned char>(dims[p]))) v = v * 10 + (dims[p++] - '0');
      numel *= v;
    }
    size_t d0 = close + 2, d1 = s.find_first_of(",]", d0);
    std::string_view dt = d0 < s.size() ? s.substr(d0, d1 == std::string_view::npos ? std::string_view::npos : d1 - d0)
                                        : std::string_view();
    out.push_back({numel, dtype_bytes(dt)});
    i = close + 1;
  }
  return out;
}

}  // namespace

bool bias_add(std::string_view name, std::string_view shapes) {
  if (base_op(name) != "add") return false;
  // Each input's dims: "[(8, 64) f32, (64) f32]" → {8, 64}, {64}.
  std::vector<std::vector<int64_t>> dims;
  for (size_t i = 0; (i = shapes.find('(', i)) != std::string_view::npos;) {
    size_t close = shapes.find(')', i);
    if (close == std::string_view::npos) break;
    std::vector<int64_t> d;
    int64_t v = -1;
    for (size_t k = i + 1; k <= close; ++k) {
      char c = shapes[k];
      if (c >= '0' && c <= '9') v = (v < 0 ? 0 : v * 10) + (c - '0');
      else if (v >= 0) d.push_back(v), v = -1;
    }
    dims.push_back(std::move(d));
    i = close + 1;
  }
  if (dims.size() != 2) return false;
  const auto& x = dims[0].size() >= dims[1].size() ? dims[0] : dims[1];
  const auto& b = dims[0].size() >= dims[1].size() ? dims[1] : dims[0];
  return b.size() == 1 && x.size() >= 2 && b[0] == x.back();
}

std::vector<int64_t> input_bytes(std::string_view s) {
  std::vector<int64_t> out;
  for (const Operand& o : operands(s)) out.push_back(o.numel * o.itemsize);
  return out;
}

int64_t largest_input_numel(std::string_view s) {
  int64_t n = 0;
  for (const Operand& o : operands(s)) n = std::max(n, o.numel);
  return n;
}

std::string generalize(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    if (std::isdigit(static_cast<unsigned char>(s[i]))) {
      out += 'N';
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    } else {
      out += s[i++];
    }
  }
  return out;
}

std::string classify(const std::vector<std::string>& ops) {
  auto has = [&](std::initializer_list<const char*> names) {
    for (auto& o : ops)
      for (const char* n : names)
        if (base_op(o) == n) return true;
    return false;
  };
  bool norm = has({"mean", "sum", "var"}) && has({"rsqrt", "sqrt", "div"});
  if (norm) return base_op(ops.front()) == "add" ? "residual+norm" : "norm";
  if (has({"silu", "sigmoid", "gelu", "relu", "tanh"})) return "activation";
  return "elementwise";
}

bool math_op(std::string_view op) {
  static const std::unordered_set<std::string_view> kMath = {
      "exp",  "log",  "sqrt", "rsqrt",    "sin",  "cos",      "tanh",          "sigmoid",      "silu",
      "gelu", "pow",  "div",  "erf",      "mish", "softplus", "gelu_backward", "silu_backward", "reciprocal"};
  return kMath.count(base_op(op)) > 0;
}

bool reduction(std::string_view op) {
  op = base_op(op);
  return op == "sum" || op == "mean" || op == "max" || op == "min" || op == "var";
}

}  // namespace opscope::advisor
