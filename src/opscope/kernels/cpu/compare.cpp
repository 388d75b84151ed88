#include "opscope/kernels/cpu/compare.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "opscope/kernels/cpu/map.h"

namespace opscope::cpu_kernels {

namespace {

// The value a kernel compares or computes with: f32 for floating storage, else itself.
template <class T> [[gnu::always_inline]] inline auto value(T v) {
  if constexpr (std::is_same_v<T, bool>) return v;
  else return load(v);
}

template <CompareOp Op, class C> [[gnu::always_inline]] inline bool compare(C a, C b) {
  if constexpr (Op == CompareOp::eq) return a == b;
  else if constexpr (Op == CompareOp::ne) return a != b;
  else if constexpr (Op == CompareOp::lt) return a < b;
  else if constexpr (Op == CompareOp::le) return a <= b;
  else if constexpr (Op == CompareOp::gt) return a > b;
  else return a >= b;
}

// A double as a stored value of T.
template <class T> T value_of(double v) {
  if constexpr (std::is_integral_v<T>) return T(v);
  else return from_f32<T>(float(v));
}

// A double as a value of T's compute type (the op has rounded it to T already).
template <class T> auto scalar_value(double s) {
  if constexpr (std::is_same_v<T, bool>) return s != 0;
  else if constexpr (std::is_integral_v<T>) return T(s);
  else return to_f32(from_f32<T>(float(s)));
}

template <CompareOp Op>
LaunchSpec compare_op(const Tensor& out, const Tensor& a, const Tensor& b) {
  LaunchSpec spec = map_spec(fmt::format("{}_{}", op_name(Op), dtype_name(a.dtype())), out,
                             (distinct_elements(a) + distinct_elements(b)) * int64_t(a.itemsize()) + out.numel());
  OPSCOPE_DISPATCH_ALL_AND_BOOL(a.dtype(), T, [&] {
    spec.body = map_body<bool, T, T>(out, {&a, &b}, [](T x, T y) { return compare<Op>(value(x), value(y)); });
  });
  return spec;
}

template <CompareOp Op>
LaunchSpec compare_scalar_op(const Tensor& out, const Tensor& x, double s) {
  LaunchSpec spec = map_spec(fmt::format("{}_scalar_{}", op_name(Op), dtype_name(x.dtype())), out,
                             distinct_elements(x) * int64_t(x.itemsize()) + out.numel());
  OPSCOPE_DISPATCH_ALL_AND_BOOL(x.dtype(), T, [&] {
    auto sv = scalar_value<T>(s);
    spec.body = map_body<bool, T>(out, {&x}, [sv](T v) { return compare<Op>(value(v), sv); });
  });
  return spec;
}

template <class T>
KernelBody clamp_body(const Tensor& out, const Tensor& x, std::optional<double> lo, std::optional<double> hi) {
  if constexpr (std::is_integral_v<T>) {
    T l = lo ? T(*lo) : std::numeric_limits<T>::lowest(), h = hi ? T(*hi) : std::numeric_limits<T>::max();
    return map_body<T, T>(out, {&x}, [l, h](T e) {
      T v = e < l ? l : e;
      return v > h ? h : v;
    });
  } else {
    // Absent bounds are infinities; a NaN bound makes every result NaN, as torch's.
    float l = lo ? to_f32(from_f32<T>(float(*lo))) : -std::numeric_limits<float>::infinity();
    float h = hi ? to_f32(from_f32<T>(float(*hi))) : std::numeric_limits<float>::infinity();
    bool nan = l != l || h != h;
    return map_body<T, T>(out, {&x}, [l, h, nan](T e) {
      float v = load(e);
      v = v < l ? l : v;
      v = v > h ? h : v;
      return store<T>(nan ? std::numeric_limits<float>::quiet_NaN() : v);
    });
  }
}

}  // namespace

const char* op_name(CompareOp op) {
  switch (op) {
    case CompareOp::eq: return "eq";
    case CompareOp::ne: return "ne";
    case CompareOp::lt: return "lt";
    case CompareOp::le: return "le";
    case CompareOp::gt: return "gt";
    case CompareOp::ge: return "ge";
  }
  return "?";
}

const char* op_name(LogicalOp op) {
  switch (op) {
    case LogicalOp::and_: return "logical_and";
    case LogicalOp::or_: return "logical_or";
    case LogicalOp::xor_: return "logical_xor";
  }
  return "?";
}

LaunchSpec compare_spec(CompareOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  switch (op) {
    case CompareOp::eq: return compare_op<CompareOp::eq>(out, a, b);
    case CompareOp::ne: return compare_op<CompareOp::ne>(out, a, b);
    case CompareOp::lt: return compare_op<CompareOp::lt>(out, a, b);
    case CompareOp::le: return compare_op<CompareOp::le>(out, a, b);
    case CompareOp::gt: return compare_op<CompareOp::gt>(out, a, b);
    case CompareOp::ge: return compare_op<CompareOp::ge>(out, a, b);
  }
  return {};
}

LaunchSpec compare_scalar_spec(CompareOp op, const Tensor& out, const Tensor& x, double s) {
  switch (op) {
    case CompareOp::eq: return compare_scalar_op<CompareOp::eq>(out, x, s);
    case CompareOp::ne: return compare_scalar_op<CompareOp::ne>(out, x, s);
    case CompareOp::lt: return compare_scalar_op<CompareOp::lt>(out, x, s);
    case CompareOp::le: return compare_scalar_op<CompareOp::le>(out, x, s);
    case CompareOp::gt: return compare_scalar_op<CompareOp::gt>(out, x, s);
    case CompareOp::ge: return compare_scalar_op<CompareOp::ge>(out, x, s);
  }
  return {};
}

LaunchSpec logical_spec(LogicalOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  LaunchSpec spec = map_spec(op_name(op), out, distinct_elements(a) + distinct_elements(b) + out.numel());
  switch (op) {
    case LogicalOp::and_: spec.body = map_body<bool, bool, bool>(out, {&a, &b}, [](bool x, bool y) { return x && y; }); break;
    case LogicalOp::or_: spec.body = map_body<bool, bool, bool>(out, {&a, &b}, [](bool x, bool y) { return x || y; }); break;
    case LogicalOp::xor_: spec.body = map_body<bool, bool, bool>(out, {&a, &b}, [](bool x, bool y) { return x != y; }); break;
  }
  return spec;
}

LaunchSpec logical_not_spec(const Tensor& out, const Tensor& x) {
  LaunchSpec spec = map_spec("logical_not", out, distinct_elements(x) + out.numel());
  spec.body = map_body<bool, bool>(out, {&x}, [](bool v) { return !v; });
  return spec;
}

LaunchSpec where_spec(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  LaunchSpec spec = map_spec(fmt::format("where_{}", dtype_name(out.dtype())), out,
                             distinct_elements(cond) + (distinct_elements(a) + distinct_elements(b) + out.numel()) *
                                                           int64_t(out.itemsize()));
  OPSCOPE_DISPATCH_ALL_AND_BOOL(out.dtype(), T, [&] {
    spec.body = map_body<T, bool, T, T>(out, {&cond, &a, &b}, [](bool c, T x, T y) { return c ? x : y; });
  });
  return spec;
}

LaunchSpec masked_fill_spec(const Tensor& out, const Tensor& x, const Tensor& mask, double value) {
  LaunchSpec spec = map_spec(fmt::format("masked_fill_{}", dtype_name(out.dtype())), out,
                             distinct_elements(mask) + (distinct_elements(x) + out.numel()) * int64_t(out.itemsize()));
  OPSCOPE_DISPATCH_ALL_AND_BOOL(out.dtype(), T, [&] {
    T v = value_of<T>(value);
    spec.body = map_body<T, T, bool>(out, {&x, &mask}, [v](T e, bool m) { return m ? v : e; });
  });
  return spec;
}

LaunchSpec clamp_spec(const Tensor& out, const Tensor& x, std::optional<double> lo, std::optional<double> hi) {
  LaunchSpec spec = map_spec(fmt::format("clamp_{}", dtype_name(out.dtype())), out,
                             (distinct_elements(x) + out.numel()) * int64_t(out.itemsize()), 2);
  OPSCOPE_DISPATCH_ALL(out.dtype(), T, [&] { spec.body = clamp_body<T>(out, x, lo, hi); });
  return spec;
}

LaunchSpec addcmul_spec(const Tensor& out, const Tensor& x, const Tensor& a, const Tensor& b, double value) {
  LaunchSpec spec = map_spec(fmt::format("addcmul_{}", dtype_name(out.dtype())), out,
                             (distinct_elements(x) + distinct_elements(a) + distinct_elements(b) + out.numel()) *
                                 int64_t(out.itemsize()),
                             3);
  float v = float(value);
  OPSCOPE_DISPATCH_FLOAT(out.dtype(), T, [&] {
    spec.body = map_body<T, T, T, T>(out, {&x, &a, &b},
                                     [v](T e, T p, T q) { return store<T>(load(e) + v * load(p) * load(q)); });
  });
  return spec;
}

}  // namespace opscope::cpu_kernels
