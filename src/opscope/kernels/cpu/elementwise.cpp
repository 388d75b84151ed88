// Names and layout helpers shared by the unary and binary kernels.
#include "opscope/kernels/cpu/elementwise.h"

namespace opscope::cpu_kernels {

std::string_view op_name(UnaryOp op) {
  switch (op) {
    case UnaryOp::neg: return "neg";
    case UnaryOp::abs: return "abs";
    case UnaryOp::exp: return "exp";
    case UnaryOp::log: return "log";
    case UnaryOp::sqrt: return "sqrt";
    case UnaryOp::rsqrt: return "rsqrt";
    case UnaryOp::sin: return "sin";
    case UnaryOp::cos: return "cos";
    case UnaryOp::tanh: return "tanh";
    case UnaryOp::sigmoid: return "sigmoid";
    case UnaryOp::silu: return "silu";
    case UnaryOp::gelu: return "gelu";
    case UnaryOp::relu: return "relu";
    case UnaryOp::gelu_tanh: return "gelu_tanh";
    case UnaryOp::hardswish: return "hardswish";
    case UnaryOp::hardsigmoid: return "hardsigmoid";
    case UnaryOp::floor: return "floor";
    case UnaryOp::ceil: return "ceil";
    case UnaryOp::round: return "round";
    case UnaryOp::trunc: return "trunc";
    case UnaryOp::sign: return "sign";
    case UnaryOp::log2: return "log2";
    case UnaryOp::reciprocal: return "reciprocal";
    case UnaryOp::erf: return "erf";
    case UnaryOp::expm1: return "expm1";
    case UnaryOp::log1p: return "log1p";
    case UnaryOp::tan: return "tan";
    case UnaryOp::atan: return "atan";
    case UnaryOp::asin: return "asin";
    case UnaryOp::acos: return "acos";
    case UnaryOp::sinh: return "sinh";
    case UnaryOp::cosh: return "cosh";
    case UnaryOp::erfinv: return "erfinv";
  }
  return "?";
}

std::string_view op_name(ParamUnaryOp op) {
  switch (op) {
    case ParamUnaryOp::leaky_relu: return "leaky_relu";
    case ParamUnaryOp::elu: return "elu";
    case ParamUnaryOp::softplus: return "softplus";
    case ParamUnaryOp::mish: return "mish";
    case ParamUnaryOp::log10: return "log10";
    case ParamUnaryOp::exp2: return "exp2";
    case ParamUnaryOp::log_sigmoid: return "log_sigmoid";
    case ParamUnaryOp::atanh: return "atanh";
    case ParamUnaryOp::frac: return "frac";
    case ParamUnaryOp::lgamma: return "lgamma";
  }
  return "?";
}

std::string_view op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::add: return "add";
    case BinaryOp::sub: return "sub";
    case BinaryOp::mul: return "mul";
    case BinaryOp::div: return "div";
    case BinaryOp::pow: return "pow";
    case BinaryOp::maximum: return "maximum";
    case BinaryOp::minimum: return "minimum";
    case BinaryOp::div_trunc: return "div_trunc";
    case BinaryOp::div_floor: return "div_floor";
    case BinaryOp::remainder: return "remainder";
  }
  return "?";
}

namespace {
constexpr int kDTypes = int(DType::b8) + 1;
constexpr int kUnaryOps = kUnaryOpCount;
constexpr int kBinaryOps = int(BinaryOp::remainder) + 1;

// "<op>_<dtype>" for each of the kOps ops of enum Op, made once per Op.
template <class Op, int kOps> const std::string& op_dtype_name(Op op, DType dt) {
  static const auto names = [] {
    std::array<std::array<std::string, kDTypes>, kOps> n;
    for (int o = 0; o < kOps; ++o)
      for (int d = 0; d < kDTypes; ++d) n[o][d] = std::string(op_name(Op(o))) + "_" + std::string(dtype_name(DType(d)));
    return n;
  }();
  return names[int(op)][int(dt)];
}
}  // namespace

const std::string& kernel_name(UnaryOp op, DType dt) { return op_dtype_name<UnaryOp, kUnaryOps>(op, dt); }
const std::string& kernel_name(ParamUnaryOp op, DType dt) {
  return op_dtype_name<ParamUnaryOp, kParamUnaryOpCount>(op, dt);
}

const std::string& kernel_name(BinaryOp op, DType dt, bool scalar) {
  static const auto names = [] {
    std::array<std::array<std::array<std::string, kDTypes>, kBinaryOps>, 2> n;
    for (int s = 0; s < 2; ++s)
      for (int o = 0; o < kBinaryOps; ++o)
        for (int d = 0; d < kDTypes; ++d)
          n[s][o][d] = std::string(op_name(BinaryOp(o))) + (s ? "_scalar_" : "_") + std::string(dtype_name(DType(d)));
    return n;
  }();
  return names[scalar][int(op)][int(dt)];
}

bool supports_integers(UnaryOp op) {
  switch (op) {
    case UnaryOp::neg:
    case UnaryOp::abs:
    case UnaryOp::relu:
    case UnaryOp::floor:  // the rounding ops return integers unchanged, as torch's
    case UnaryOp::ceil:
    case UnaryOp::round:
    case UnaryOp::trunc:
    case UnaryOp::sign: return true;
    default: return false;
  }
}

bool supports_integers(BinaryOp op) { return op != BinaryOp::div && op != BinaryOp::pow; }

Strides broadcast_strides(const Tensor& t, const Shape& shape) {
  Strides s;
  s.resize(shape.size());
  int lead = shape.size() - t.ndim();
  for (int d = 0; d < shape.size(); ++d) {
    int j = d - lead;
    s[d] = (j < 0 || t.shape()[j] == 1) ? 0 : t.strides()[j];
  }
  return s;
}

int64_t distinct_elements(const Tensor& t) {
  int64_t n = 1;
  for (int d = 0; d < t.ndim(); ++d)
    if (t.strides()[d] != 0) n *= t.shape()[d];
  return t.numel() == 0 ? 0 : n;
}

}  // namespace opscope::cpu_kernels
