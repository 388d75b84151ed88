// The eager op of each node kind: what a node that does not fuse calls at run time.
#include <fmt/format.h>

#include "opscope/compiler/executor.h"
#include "opscope/compiler/kernel.h"
#include "opscope/compiler/packed_weights.h"
#include "opscope/core/error.h"
#include "opscope/kernels/cpu/attention.h"
#include "opscope/kernels/cpu/rotary.h"
#include "opscope/ops/custom.h"
#include "opscope/ops/ops.h"
#include "opscope/runtime/device.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/runtime.h"

namespace opscope::compiler {

namespace {

Tensor constant_tensor(const Graph& g, int v, Device& dev) {
  const Value& val = g.values[v];
  return full(val.shape, g.producer(v).attrs.scalar, val.dtype, &dev);
}

Tensor unary(OpKind k, const Tensor& x) {
  switch (k) {
    case OpKind::neg: return neg(x);
    case OpKind::abs: return abs(x);
    case OpKind::exp: return exp(x);
    case OpKind::log: return log(x);
    case OpKind::sqrt: return sqrt(x);
    case OpKind::rsqrt: return rsqrt(x);
    case OpKind::sin: return sin(x);
    case OpKind::cos: return cos(x);
    case OpKind::tanh: return tanh(x);
    case OpKind::sigmoid: return sigmoid(x);
    case OpKind::silu: return silu(x);
    case OpKind::gelu: return gelu(x);
    case OpKind::relu: return relu(x);
    default: fail("compile", "internal: {} is not unary", op_name(k));
  }
}

// The same dispatch serves a tensor and a scalar right-hand side (the ops' overloads).
template <class Rhs>
Tensor binary_op(OpKind k, const Tensor& a, const Rhs& b) {
  switch (k) {
    case OpKind::add: return add(a, b);
    case OpKind::sub: return sub(a, b);
    case OpKind::mul: return mul(a, b);
    case OpKind::div: return div(a, b);
    case OpKind::pow: return pow(a, b);
    case OpKind::maximum: return maximum(a, b);
    case OpKind::minimum: return minimum(a, b);
    default: fail("compile", "internal: {} is not binary", op_name(k));
  }
}

Tensor binary(OpKind k, const Tensor& a, const Tensor& b) { return binary_op(k, a, b); }
Tensor binary_rhs(OpKind k, const Tensor& a, double b) { return binary_op(k, a, b); }

Tensor reduction(const Node& n, const Tensor& x) {
  const Attrs& a = n.attrs;
  switch (n.kind) {
    case OpKind::sum: return sum(x, a.axes, a.keepdim);
    case OpKind::mean: return mean(x, a.axes, a.keepdim);
    case OpKind::max: return max(x, a.axes, a.keepdim);
    case OpKind::min: return min(x, a.axes, a.keepdim);
    case OpKind::var: return var(x, a.axes, a.keepdim, a.correction);
    case OpKind::argmax: return argmax(x, a.axis, a.keepdim);
    default: fail("compile", "internal: {} is not a reduction", op_name(n.kind));
  }
}

// An attention node (fuse_attention.cpp): its kernel, the CPU's alone. `ins`: q, kᵀ, v,
// then the operands of the score steps.
Tensor attention(const Graph& g, const Node& n, const std::vector<const Tensor*>& ins, Device& dev) {
  if (dev.type() != DeviceType::cpu) fail("compile", "internal: an attention node off the CPU device");
  const Tensor &q = *ins[0], &kt = *ins[1], &v = *ins[2];
  OPSCOPE_OP("attention", &q, &kt, &v);
  using Op = cpu_kernels::ScoreStep::Op;
  std::vector<cpu_kernels::ScoreStep> steps;
  for (const ScoreStep& s : n.attrs.score) {
    cpu_kernels::ScoreStep k;
    k.op = s.op == OpKind::add ? Op::add : s.op == OpKind::sub ? Op::sub : s.op == OpKind::mul ? Op::mul : Op::div;
    k.swap = s.swap;
    k.scalar = float(s.scalar);
    k.operand = s.input >= 0 ? ins[size_t(s.input)] : nullptr;
    steps.push_back(k);
  }
  const Value& o = g.values[size_t(n.outputs[0])];  // maybe laid out for the copy it replaced
  Tensor out(runtime::allocate({o.shape.numel()}, DType::f32, dev).storage(), o.shape, o.strides, 0, DType::f32);
  LaunchSpec spec = cpu_kernels::attention_spec(out, q, kt, v, steps, Shape(n.attrs.axes));
  const Tensor* writes[] = {&out};
  runtime::launch(dev, std::move(spec), std::span<const Tensor* const>(ins), std::span<const Tensor* const>(writes));
  return out;
}

// A rotary node (fuse_rotary.cpp): x, cos, sin; its kernel, the CPU's alone.
Tensor rotary(const Tensor& x, const Tensor& cos, const Tensor& sin, Device& dev) {
  if (dev.type() != DeviceType::cpu) fail("compile", "internal: a rotary node off the CPU device");
  OPSCOPE_OP("rotary", &x, &cos, &sin);
  Tensor out = runtime::allocate(x.shape(), DType::f32, dev);
  const Tensor* reads[] = {&x, &cos, &sin};
  const Tensor* writes[] = {&out};
  runtime::launch(dev, cpu_kernels::rotary_spec(out, x, cos, sin), std::span<const Tensor* const>(reads),
                  std::span<const Tensor* const>(writes));
  return out;
}

}  // namespace

void eval_eager(const Graph& g, const Node& n, std::vector<Tensor>& vals, Device& dev) {
  auto in = [&](size_t i) -> const Tensor& {
    int v = n.inputs[i];
    if (!vals[size_t(v)].defined() && g.producer(v).kind == OpKind::constant) vals[size_t(v)] = constant_tensor(g, v, dev);
    return vals[size_t(v)];
  };
  auto is_const = [&](size_t i) { return g.producer(n.inputs[i]).kind == OpKind::constant; };
  auto scalar = [&](size_t i) { return g.producer(n.inputs[i]).attrs.scalar; };
  int out = n.outputs.empty() ? -1 : n.outputs[0];
  const Attrs& a = n.attrs;
  Tensor r;
  switch (op_class(n.kind)) {
    case OpClass::source:
      if (n.kind == OpKind::constant) r = constant_tensor(g, out, dev);
      else if (n.kind == OpKind::param) r = g.params[size_t(a.axis)];
      else fail("compile", "internal: {} node at run time", op_name(n.kind));
      break;
    case OpClass::view: {
      const Tensor& base = in(0);
      const Value& v = g.values[out];
      r = Tensor(base.storage(), v.shape, v.strides, base.offset() + a.offset, v.dtype);
      break;
    }
    case OpClass::unary: r = unary(n.kind, in(0)); break;
    case OpClass::binary: {
      OpKind k = n.kind;
      bool scalar_lhs_ok = k == OpKind::add || k == OpKind::sub || k == OpKind::mul || k == OpKind::div;
      if (is_const(1) && !is_const(0)) r = binary_rhs(k, in(0), scalar(1));
      else if (is_const(0) && !is_const(1) && scalar_lhs_ok) {
        double s = scalar(0);
        const Tensor& b = in(1);
        r = k == OpKind::add ? add(s, b) : k == OpKind::sub ? sub(s, b) : k == OpKind::mul ? mul(s, b) : div(s, b);
      } else {
        r = binary(k, in(0), in(1));
      }
      break;
    }
    case OpClass::copy:
      if (n.kind == OpKind::cast) r = in(0).to(a.dtype);
      else if (n.kind == OpKind::contiguous) r = in(0).contiguous();
      else r = in(0).clone();
      break;
    case OpClass::reduction: r = reduction(n, in(0)); break;
    case OpClass::library:
      switch (n.kind) {
        case OpKind::softmax: r = softmax(in(0), a.axis); break;
        case OpKind::rms_norm:
        case OpKind::layer_norm: {
          // a.axis: bit i set when optional operand i + 1 was undefined when traced
          std::vector<Tensor> ops{in(0)};
          size_t next = 1;
          for (int i = 0; i < (n.kind == OpKind::rms_norm ? 1 : 2); ++i)
            ops.push_back((a.axis >> i) & 1 ? Tensor() : in(next++));
          r = n.kind == OpKind::rms_norm ? rms_norm(ops[0], ops[1], a.scalar) : layer_norm(ops[0], ops[1], ops[2], a.scalar);
          break;
        }
        case OpKind::matmul: {
          // unpacked: the activation and the residual's add or mul, each its own launch
          const int bias = matmul_bias_input(n);
          r = bias >= 0 ? matmul(in(0), in(1), in(size_t(bias))) : matmul(in(0), in(1));
          if (n.attrs.epilogue) r = unary(*n.attrs.epilogue, r);
          if (n.attrs.residual) r = binary(*n.attrs.residual, r, in(n.inputs.size() - 1).reshape(r.shape()));
          break;
        }
        case OpKind::embedding: r = embedding(in(0), in(1)); break;
        case OpKind::rotary: r = rotary(in(0), in(1), in(2), dev); break;
        case OpKind::attention: {
          std::vector<const Tensor*> ins;
          for (size_t i = 0; i < n.inputs.size(); ++i) ins.push_back(&in(i));
          r = attention(g, n, ins, dev);
          break;
        }
        case OpKind::concat: {
          std::vector<Tensor> xs;
          for (size_t i = 0; i < n.inputs.size(); ++i) xs.push_back(in(i));
          r = concat(xs, a.axis);
          break;
        }
        case OpKind::custom: {
          std::vector<Tensor> xs;
          for (size_t i = 0; i < n.inputs.size(); ++i) xs.push_back(in(i));
          r = call_op(a.name, xs);
          break;
        }
        default: fail("compile", "internal: no eager op for {}", op_name(n.kind));
      }
      break;
    case OpClass::fused: {
      // The body, op by op: what the kernel computes, with the eager kernels.
      const Graph& b = a.kernel->body;
      std::vector<Tensor> bv(b.values.size());
      for (size_t i = 0; i < b.inputs.size(); ++i) bv[size_t(b.inputs[i])] = in(i);
      for (const Node& bn : b.nodes)
        if (bn.kind != OpKind::input && bn.kind != OpKind::constant) eval_eager(b, bn, bv, dev);
      for (size_t i = 0; i < n.outputs.size(); ++i) vals[size_t(n.outputs[i])] = bv[size_t(b.outputs[i])];
      return;
    }
  }
  if (out >= 0) vals[size_t(out)] = std::move(r);
}

}  // namespace opscope::compiler
