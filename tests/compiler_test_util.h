// Shared by the compiler tests: building graphs by hand, a double-precision reference
// interpreter for graphs of elementwise ops and reductions, and seeded random graphs.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "opscope/compiler/executor.h"
#include "opscope/compiler/graph.h"
#include "opscope/compiler/scalar_ops.h"
#include "opscope/core/shape.h"

namespace opscope::compiler::testing {

// ---- building ----
inline int input(Graph& g, const Shape& s, DType dt = DType::f32) { return g.add_input(s, contiguous_strides(s), dt); }
inline int unary(Graph& g, OpKind k, int x) { return g.add(k, {x}, g.values[x].shape, g.values[x].dtype); }
inline int binary(Graph& g, OpKind k, int a, int b) {
  return g.add(k, {a, b}, broadcast_shapes(g.values[a].shape, g.values[b].shape, "test"), g.values[a].dtype);
}
inline int scalar_op(Graph& g, OpKind k, int a, double c) { return binary(g, k, a, g.add_constant(c, g.values[a].dtype)); }
inline int cast(Graph& g, int x, DType to) {
  Attrs a;
  a.dtype = to;
  return g.add(OpKind::cast, {x}, g.values[x].shape, to, a);
}
inline int reduce_last(Graph& g, OpKind k, int x, bool keepdim) {
  Shape s = g.values[x].shape;
  Attrs a;
  a.axes = {int64_t(s.size() - 1)};
  a.keepdim = keepdim;
  Shape o;
  for (int i = 0; i < s.size() - 1; ++i) o.push_back(s[i]);
  if (keepdim) o.push_back(1);
  return g.add(k, {x}, o, g.values[x].dtype, a);
}
inline int reduce_axes(Graph& g, OpKind k, int x, std::vector<int64_t> axes, bool keepdim) {
  Shape s = g.values[x].shape, o;
  Attrs a;
  a.axes = axes;
  a.keepdim = keepdim;
  for (int i = 0; i < s.size(); ++i) {
    bool r = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!r) o.push_back(s[i]);
    else if (keepdim) o.push_back(1);
  }
  return g.add(k, {x}, o, g.values[x].dtype, a);
}

// Naive RMSNorm as six ops: x * rsqrt(mean(x * x, -1, keepdim) + eps) * w.
inline Graph rms_norm_graph(const Shape& xs, DType dt = DType::f32, double eps = 1e-6) {
  Graph g;
  g.name = "rms_naive";
  int x = input(g, xs, dt), w = input(g, {xs.back()}, dt);
  int sq = binary(g, OpKind::mul, x, x);
  int m = reduce_last(g, OpKind::mean, sq, true);
  int r = unary(g, OpKind::rsqrt, scalar_op(g, OpKind::add, m, eps));
  g.outputs = {binary(g, OpKind::mul, binary(g, OpKind::mul, x, r), w)};
  return g;
}

// A view of x (as_strided) with these strides, `offset` elements past x's start.
inline int view(Graph& g, int x, const Shape& s, const Strides& st, int64_t offset) {
  Attrs a;
  a.offset = offset;
  return g.add(OpKind::as_strided, {x}, s, g.values[x].dtype, a, st);
}
// A batched matmul of 3-d values.
inline int bmm(Graph& g, int a, int b) {
  const Shape &sa = g.values[a].shape, &sb = g.values[b].shape;
  return g.add(OpKind::matmul, {a, b}, Shape{sa[0], sa[1], sb[2]}, g.values[a].dtype);
}

// Runs g as it stands (no passes): its first output's values.
inline std::vector<float> run_graph(const Graph& g, const std::vector<Tensor>& xs) {
  Executable exe;
  exe.graph = g;
  return exe.run(xs)[0].to_vector<float>();
}

inline int count_kind(const Graph& g, OpKind k) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.kind == k;
  return n;
}

// ---- reference ----
// A value on the host: row-major doubles of its shape.
struct HostValue {
  Shape shape;
  std::vector<double> v;
};

// Element `i` (row-major in `out`) of `x` broadcast to `out`.
inline double at_broadcast(const HostValue& x, const Shape& out, int64_t i) {
  int n = out.size(), m = x.shape.size();
  int64_t off = 0, mult = 1;
  for (int d = n - 1; d >= 0; --d) {
    int64_t idx = i % out[d];
    i /= out[d];
    int k = d - (n - m);
    if (k < 0) continue;
    if (x.shape[k] != 1) off += idx * mult;
    mult *= x.shape[k];
  }
  return x.v[size_t(off)];
}

// Evaluates `g` in double precision (casts round like the kernels). `inputs` are the
// values of g.inputs in order; returns the values of g.outputs.
inline std::vector<HostValue> reference(const Graph& g, const std::vector<HostValue>& inputs) {
  std::vector<HostValue> vals(g.values.size());
  for (size_t i = 0; i < g.inputs.size(); ++i) vals[size_t(g.inputs[i])] = inputs[i];
  for (const Node& n : g.nodes) {
    if (n.kind == OpKind::input) continue;
    int o = n.outputs[0];
    HostValue r;
    r.shape = g.values[o].shape;
    int64_t N = r.shape.numel();
    r.v.resize(size_t(N));
    OpClass cls = op_class(n.kind);
    if (n.kind == OpKind::constant) {
      r.v[0] = double(float(n.attrs.scalar));
    } else if (cls == OpClass::unary || cls == OpClass::copy) {
      for (int64_t i = 0; i < N; ++i) {
        double a = at_broadcast(vals[n.inputs[0]], r.shape, i);
        double y;
        switch (n.kind) {
          case OpKind::neg: y = -a; break;
          case OpKind::abs: y = std::fabs(a); break;
          case OpKind::exp: y = std::exp(a); break;
          case OpKind::log: y = std::log(a); break;
          case OpKind::sqrt: y = std::sqrt(a); break;
          case OpKind::rsqrt: y = 1 / std::sqrt(a); break;
          case OpKind::sin: y = std::sin(a); break;
          case OpKind::cos: y = std::cos(a); break;
          case OpKind::tanh: y = std::tanh(a); break;
          case OpKind::sigmoid: y = 1 / (1 + std::exp(-a)); break;
          case OpKind::silu: y = a / (1 + std::exp(-a)); break;
          case OpKind::gelu: y = 0.5 * a * (1 + std::erf(a / std::sqrt(2.0))); break;
          case OpKind::relu: y = a < 0 ? 0 : a; break;
          case OpKind::cast: y = round_to(n.attrs.dtype, float(a)); break;
          default: y = a;
        }
        r.v[size_t(i)] = y;
      }
    } else if (cls == OpClass::binary) {
      for (int64_t i = 0; i < N; ++i) {
        double a = at_broadcast(vals[n.inputs[0]], r.shape, i), b = at_broadcast(vals[n.inputs[1]], r.shape, i);
        double y;
        switch (n.kind) {
          case OpKind::add: y = a + b; break;
          case OpKind::sub: y = a - b; break;
          case OpKind::mul: y = a * b; break;
          case OpKind::div: y = a / b; break;
          case OpKind::pow: y = std::pow(a, b); break;
          case OpKind::maximum: y = std::max(a, b); break;
          default: y = std::min(a, b);
        }
        r.v[size_t(i)] = y;
      }
    } else if (cls == OpClass::reduction) {
      // last axis only
      const HostValue& x = vals[n.inputs[0]];
      int64_t C = x.shape.back(), R = x.shape.numel() / C;
      for (int64_t row = 0; row < R; ++row) {
        double acc = n.kind == OpKind::max ? -INFINITY : n.kind == OpKind::min ? INFINITY : 0;
        for (int64_t j = 0; j < C; ++j) {
          double a = x.v[size_t(row * C + j)];
          if (n.kind == OpKind::max) acc = std::max(acc, a);
          else if (n.kind == OpKind::min) acc = std::min(acc, a);
          else acc += a;
        }
        r.v[size_t(row)] = n.kind == OpKind::mean ? acc / double(C) : acc;
      }
    }
    // Values stored in a 16-bit dtype are rounded where they are materialized; the
    // kernels keep f32 inside, so the reference does not round intermediates.
    vals[size_t(o)] = std::move(r);
  }
  std::vector<HostValue> outs;
  for (int o : g.outputs) outs.push_back(vals[size_t(o)]);
  return outs;
}

// ---- random graphs ----
// A random graph over a domain: inputs x (full), y (full), w (last dim), r (per row),
// then `ops` ops with values kept in safe ranges (log/sqrt of |v| + 1, exp of tanh, ...).
// Reductions are over the last axis, usually keepdim so that they feed back into rows.
inline Graph random_graph(uint64_t seed, const Shape& d, DType dt, int ops) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int n) { return int(rng() % uint64_t(n)); };
  Graph g;
  g.name = "random";
  std::vector<int> full, row;
  full.push_back(input(g, d, dt));
  full.push_back(input(g, d, dt));
  full.push_back(input(g, {d.back()}, dt));  // broadcasts like a weight
  Shape rs = d;
  rs[rs.size() - 1] = 1;
  row.push_back(input(g, rs, dt));
  auto any = [&]() { return pick(4) == 0 && !row.empty() ? row[size_t(pick(int(row.size())))] : full[size_t(pick(int(full.size())))]; };
  auto safe_pos = [&](int v) { return scalar_op(g, OpKind::add, unary(g, OpKind::abs, v), 1.0); };
  for (int k = 0; k < ops; ++k) {
    // Mostly chains: the first operand is usually the latest value, so most ops are live.
    int a = pick(4) ? (pick(3) || row.size() < 2 ? full.back() : row.back()) : any();
    int b = any();
    int c = pick(14);
    int v;
    switch (c) {
      case 0: v = binary(g, OpKind::add, a, b); break;
      case 1: v = binary(g, OpKind::sub, a, b); break;
      case 2: v = binary(g, OpKind::mul, a, b); break;
      case 3: v = binary(g, OpKind::div, a, safe_pos(b)); break;
      case 4: v = binary(g, pick(2) ? OpKind::maximum : OpKind::minimum, a, b); break;
      case 5: v = unary(g, std::array<OpKind, 6>{OpKind::neg, OpKind::tanh, OpKind::sigmoid, OpKind::silu, OpKind::gelu,
                                                   OpKind::relu}[size_t(pick(6))], a); break;
      case 6: v = unary(g, OpKind::exp, unary(g, OpKind::tanh, a)); break;
      case 7: v = unary(g, std::array<OpKind, 3>{OpKind::log, OpKind::sqrt, OpKind::rsqrt}[size_t(pick(3))], safe_pos(a)); break;
      case 8: v = unary(g, pick(2) ? OpKind::sin : OpKind::cos, a); break;
      case 9: v = scalar_op(g, OpKind::mul, a, 0.5 + double(pick(4))); break;
      case 10: v = binary(g, OpKind::pow, safe_pos(a), g.add_constant(pick(2) ? 2.0 : 0.5, dt)); break;
      case 11: v = cast(g, cast(g, a, pick(2) ? DType::bf16 : DType::f16), dt); break;
      default: {  // a reduction of a full value, brought back to a row value of O(1)
        int src = full[size_t(pick(int(full.size())))];
        if (!(g.values[src].shape == d)) src = binary(g, OpKind::add, src, full[0]);
        OpKind rk = std::array<OpKind, 4>{OpKind::sum, OpKind::mean, OpKind::max, OpKind::min}[size_t(pick(4))];
        v = reduce_last(g, rk, src, true);
        if (rk == OpKind::sum) v = scalar_op(g, OpKind::mul, v, 1.0 / double(d.back()));
        row.push_back(v);
        continue;
      }
    }
    if (g.values[v].shape == d) full.push_back(v);
    else if (g.values[v].shape == rs) row.push_back(v);
  }
  g.outputs = {row.size() > 1 ? binary(g, OpKind::add, full.back(), row.back()) : full.back()};
  if (row.size() > 1 && pick(2)) {
    // a second result: a row value (exercises row outputs)
    g.outputs.push_back(row.back());
  }
  return g;
}

}  // namespace opscope::compiler::testing
