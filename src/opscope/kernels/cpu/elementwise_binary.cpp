// Binary elementwise kernels with broadcasting. Each op is a functor; one loop template
// runs it over two operand sources (a contiguous vector, a strided vector or a single
// value), picked once per run, so the inner loops have no per-element branches.
#include <cmath>

#include "opscope/core/error.h"
#include "opscope/kernels/cpu/bf16_even_odd.h"
#include "opscope/kernels/cpu/elementwise.h"
#include "opscope/kernels/cpu/half_rows.h"
#include "opscope/kernels/cpu/stream_store.h"

namespace opscope::cpu_kernels {

namespace {

template <class C> using uns = std::make_unsigned_t<C>;

// ---- the ops; integer arithmetic goes through unsigned types, so overflow wraps; kLanes:
// f also takes registers of f32 lanes (f32v) ----
struct Add {
  static constexpr bool kIntegers = true;
  static constexpr bool kLanes = true;
  template <class C> [[gnu::always_inline]] static C f(C a, C b) {
    if constexpr (std::is_integral_v<C>) return C(uns<C>(a) + uns<C>(b));
    else return a + b;
  }
};
struct Sub {
  static constexpr bool kIntegers = true;
  static constexpr bool kLanes = true;
  template <class C> [[gnu::always_inline]] static C f(C a, C b) {
    if constexpr (std::is_integral_v<C>) return C(uns<C>(a) - uns<C>(b));
    else return a - b;
  }
};
struct Mul {
  static constexpr bool kIntegers = true;
  static constexpr bool kLanes = true;
  template <class C> [[gnu::always_inline]] static C f(C a, C b) {
    if constexpr (std::is_integral_v<C>) return C(uns<C>(a) * uns<C>(b));
    else return a * b;
  }
};
struct Div {
  static constexpr bool kIntegers = false;
  static constexpr bool kLanes = true;
  template <class C> [[gnu::always_inline]] static C f(C a, C b) { return a / b; }
};
struct Pow {
  static constexpr bool kIntegers = false;
  [[gnu::always_inline]] static float f(float a, float b) { return std::pow(a, b); }
};
// pow(x, s) by torch's steps for its special exponents (pow_steps, elementwise.h), in loops
// that vectorize.
struct Square {
  static constexpr bool kIntegers = false;
  static constexpr bool kLanes = true;
  template <class C> [[gnu::always_inline]] static C f(C a, C) { return a * a; }
};
struct Cube {
  static constexpr bool kIntegers = false;
  static constexpr bool kLanes = true;
  template <class C> [[gnu::always_inline]] static C f(C a, C) { return a * a * a; }
};
struct InverseSquare {
  static constexpr bool kIntegers = false;
  static constexpr bool kLanes = true;
  template <class C> [[gnu::always_inline]] static C f(C a, C) { return 1.0f / (a * a); }
};
struct Inverse {
  static constexpr bool kIntegers = false;
  static constexpr bool kLanes = true;
  template <class C> [[gnu::always_inline]] static C f(C a, C) { return 1.0f / a; }
};
// sqrt(-0) is -0 and sqrt(-inf) NaN, where pow gives +0 and +inf: torch's values.
struct SquareRoot {
  static constexpr bool kIntegers = false;
  [[gnu::always_inline]] static float f(float a, float) { return std::sqrt(a); }
};
struct InverseSquareRoot {
  static constexpr bool kIntegers = false;
  [[gnu::always_inline]] static float f(float a, float) { return 1.0f / std::sqrt(a); }
};
// maximum/minimum propagate NaN from either side, as torch.maximum.
struct Maximum {
  static constexpr bool kIntegers = true;
  static constexpr bool kLanes = true;
  template <class C> [[gnu::always_inline]] static C f(C a, C b) {
    if constexpr (std::is_integral_v<C>) return a > b ? a : b;
    else return (a > b || a != a) ? a : b;
  }
};
struct Minimum {
  static constexpr bool kIntegers = true;
  static constexpr bool kLanes = true;
  template <class C> [[gnu::always_inline]] static C f(C a, C b) {
    if constexpr (std::is_integral_v<C>) return a < b ? a : b;
    else return (a < b || a != a) ? a : b;
  }
};

// div with rounding_mode "trunc" / "floor", as torch computes them. Integers exactly: a
// zero divisor is an error naming the op (torch's ZeroDivisionError; the CPU would trap),
// and the minimum over -1 wraps (it traps too). Floating values: floor through fmod, so
// that a quotient a / b rounded up to an integer does not floor one too high.
template <class C> [[gnu::always_inline]] inline C int_quotient(C a, C b) {
  if (b == 0) fail("div", "ZeroDivisionError: integer division by zero (rounding_mode trunc or floor)");
  if (b == C(-1)) return C(-uns<C>(a));
  return C(a / b);
}
struct DivTrunc {
  static constexpr bool kIntegers = true;
  template <class C> [[gnu::always_inline]] static C f(C a, C b) {
    if constexpr (std::is_integral_v<C>) return int_quotient(a, b);
    else return std::trunc(a / b);
  }
};
struct DivFloor {
  static constexpr bool kIntegers = true;
  template <class C> [[gnu::always_inline]] static C f(C a, C b) {
    if constexpr (std::is_integral_v<C>) {
      C q = int_quotient(a, b);
      return (b != C(-1) && a % b != 0 && ((a < 0) != (b < 0))) ? C(q - 1) : q;
    } else {
      if (b == 0) return a / b;  // inf or NaN, as IEEE division gives
      float mod = std::fmod(a, b);
      float d = (a - mod) / b;
      if (mod != 0 && ((b < 0) != (mod < 0))) d -= 1;
      if (d == 0) return std::copysign(0.f, a / b);
      float fl = std::floor(d);
      return d - fl > 0.5f ? fl + 1 : fl;
    }
  }
};
// a - floor(a / b) * b with the sign of b, as torch: fmod (exact), moved by b where its
// sign is not b's. Integers: % likewise; a zero divisor is an error, as torch's.
struct Remainder {
  static constexpr bool kIntegers = true;
  template <class C> [[gnu::always_inline]] static C f(C a, C b) {
    C r;
    if constexpr (std::is_integral_v<C>) {
      if (b == 0) fail("remainder", "ZeroDivisionError: integer remainder by zero");
      if (b == C(-1)) return 0;  // INT_MIN % -1 overflows
      r = C(a % b);
    } else {
      r = std::fmod(a, b);
    }
    return (r != 0 && ((r < 0) != (b < 0))) ? C(r + b) : r;
  }
};

// ---- operand sources ----
template <class T> struct Vec {
  const T* p;
  [[gnu::always_inline]] compute_t<T> operator[](int64_t i) const { return load(p[i]); }
};
template <class T> struct Strided {
  const T* p;
  int64_t s;
  [[gnu::always_inline]] compute_t<T> operator[](int64_t i) const { return load(p[i * s]); }
};
template <class T> struct Scalar {
  compute_t<T> v;
  [[gnu::always_inline]] compute_t<T> operator[](int64_t) const { return v; }
};

// Elements [i0, i0 + m) of an f16 source as f32.
template <class S> void to_f32_block(const S& src, int64_t i0, int64_t m, float* buf) {
  if constexpr (std::is_same_v<S, Vec<f16_t>>) f16_row_to_f32(src.p + i0, buf, m);
  else
    for (int64_t j = 0; j < m; ++j) buf[j] = src[i0 + j];
}

// An op on registers of f32 lanes (kLanes), and a 16-bit operand that such a loop reads:
// contiguous, or a scalar.
template <class Op> constexpr bool kOnLanes = requires { requires Op::kLanes; };
template <class T> constexpr bool kHalf = std::is_same_v<T, f16_t> || std::is_same_v<T, bf16_t>;
template <class S> constexpr bool kLaneSource = false;
template <class T> constexpr bool kLaneSource<Vec<T>> = kHalf<T>;
template <class T> constexpr bool kLaneSource<Scalar<T>> = kHalf<T>;
template <class T> [[gnu::always_inline]] inline f32v lanes_at(const Vec<T>& s, int64_t i) { return load_f32v(s.p + i); }
template <class T> [[gnu::always_inline]] inline f32v lanes_at(const Scalar<T>& s, int64_t) { return f32v{} + s.v; }
// 16 bf16 as even and odd lanes (bf16_even_odd.h): a scalar is both.
[[gnu::always_inline, maybe_unused]] inline EvenOdd even_odd_at(const Vec<bf16_t>& s, int64_t i) { return load_bf16_even_odd(s.p + i); }
[[gnu::always_inline, maybe_unused]] inline EvenOdd even_odd_at(const Scalar<bf16_t>& s, int64_t) {
  decltype(EvenOdd::even) v = {};
  return {v + s.v, v + s.v};
}

// o is contiguous within a run (the launch's out is); `stream`: o is large enough for
// streaming stores (stream_store.h).
template <class Op, class T, class A, class B>
void binary_loop(A a, B b, T* __restrict o, int64_t n, bool stream) {
  if constexpr (kOnLanes<Op> && kLaneSource<A> && kLaneSource<B>) {
    // one pass, converting in the loads and the store (half_rows.h), where the blocks below
    // take four passes over L1, and bf16's element loop narrows one element at a time
    int64_t i = 0;
    if constexpr (std::is_same_v<T, bf16_t> && kBf16EvenOdd) {
      for (; i + 16 <= n; i += 16) {
        EvenOdd x = even_odd_at(a, i), y = even_odd_at(b, i);
        store_bf16_even_odd(o + i, {Op::f(x.even, y.even), Op::f(x.odd, y.odd)}, stream);
      }
    }
    for (; i + kVecLanes <= n; i += kVecLanes) store_f32v(o + i, Op::f(lanes_at(a, i), lanes_at(b, i)), stream);
    for (; i < n; ++i) o[i] = store<T>(Op::f(a[i], b[i]));
    return;
  }
  if constexpr (std::is_same_v<T, f16_t>) {  // through f32 blocks: the hardware converts (half_rows.h)
    alignas(64) float fa[kHalfBlock], fb[kHalfBlock];
    for (int64_t i0 = 0; i0 < n; i0 += kHalfBlock) {
      int64_t m = std::min(kHalfBlock, n - i0);
      to_f32_block(a, i0, m, fa);
      to_f32_block(b, i0, m, fb);
      for (int64_t j = 0; j < m; ++j) fa[j] = Op::f(fa[j], fb[j]);
      f32_row_to_f16(fa, o + i0, m, stream);
    }
    return;
  }
  auto g = [&](int64_t i) __attribute__((always_inline)) { return store<T>(Op::f(a[i], b[i])); };
  if (stream) write_elements(o, n, true, g);
  else
    for (int64_t i = 0; i < n; ++i) o[i] = g(i);
}

// One run of n elements: a and b at strides sa and sb (0: one value for the whole run).
template <class Op, class T>
void binary_run(const T* a, int64_t sa, const T* b, int64_t sb, T* o, int64_t n, bool stream) {
  if (sa == 1 && sb == 1) binary_loop<Op>(Vec<T>{a}, Vec<T>{b}, o, n, stream);
  else if (sa == 1 && sb == 0) binary_loop<Op>(Vec<T>{a}, Scalar<T>{load(*b)}, o, n, stream);
  else if (sa == 0 && sb == 1) binary_loop<Op>(Scalar<T>{load(*a)}, Vec<T>{b}, o, n, stream);
  else binary_loop<Op>(Strided<T>{a, sa}, Strided<T>{b, sb}, o, n, stream);
}

// One run of x (stride sx) against the scalar s.
template <class Op, class T>
void scalar_run(const T* x, int64_t sx, compute_t<T> s, bool scalar_first, T* o, int64_t n, bool stream) {
  if (sx == 1) {
    if (scalar_first) binary_loop<Op>(Scalar<T>{s}, Vec<T>{x}, o, n, stream);
    else binary_loop<Op>(Vec<T>{x}, Scalar<T>{s}, o, n, stream);
  } else {
    if (scalar_first) binary_loop<Op>(Scalar<T>{s}, Strided<T>{x, sx}, o, n, stream);
    else binary_loop<Op>(Strided<T>{x, sx}, Scalar<T>{s}, o, n, stream);
  }
}

template <class Op, class T>
KernelBody binary_loops(const Tensor& out, const Tensor& a, const Tensor& b) {
  Shape shape;
  std::array<Strides, 3> st;
  elementwise_layout<3>(out, {&a, &b}, shape, st);
  const T* ap = a.data<T>();
  const T* bp = b.data<T>();
  T* op = out.data<T>();
  int64_t n = out.numel();
  bool stream = out.nbytes() >= kStreamBytes;
  if (shape.size() <= 1) {
    // One run (the common, collapsed case): a closure small enough to live in the launch.
    int64_t so = shape.size() ? st[0][0] : 1, sa = shape.size() ? st[1][0] : 1, sb = shape.size() ? st[2][0] : 1;
    return [=](int64_t bb, int64_t e) {
      int64_t lo = bb * kElemBlock, hi = std::min(n, e * kElemBlock);
      binary_run<Op>(ap + lo * sa, sa, bp + lo * sb, sb, op + lo * so, hi - lo, stream);
      end_stream(stream);
    };
  }
  return [=](int64_t bb, int64_t e) {
    int64_t lo = bb * kElemBlock, hi = std::min(n, e * kElemBlock);
    walk<3>(shape, st, lo, hi, [&](const auto& off, const auto& inner, int64_t count) {
      binary_run<Op>(ap + off[1], inner[1], bp + off[2], inner[2], op + off[0], count, stream);
    });
    end_stream(stream);
  };
}

template <class Op, class T>
KernelBody scalar_loops(const Tensor& out, const Tensor& x, double s, bool scalar_first) {
  Shape shape;
  std::array<Strides, 2> st;
  elementwise_layout<2>(out, {&x}, shape, st);
  const T* xp = x.data<T>();
  T* op = out.data<T>();
  int64_t n = out.numel();
  compute_t<T> sv = compute_t<T>(s);
  bool stream = out.nbytes() >= kStreamBytes;
  if (shape.size() <= 1) {
    int64_t so = shape.size() ? st[0][0] : 1, sx = shape.size() ? st[1][0] : 1;
    return [=](int64_t bb, int64_t e) {
      int64_t lo = bb * kElemBlock, hi = std::min(n, e * kElemBlock);
      scalar_run<Op>(xp + lo * sx, sx, sv, scalar_first, op + lo * so, hi - lo, stream);
      end_stream(stream);
    };
  }
  return [=](int64_t bb, int64_t e) {
    int64_t lo = bb * kElemBlock, hi = std::min(n, e * kElemBlock);
    walk<2>(shape, st, lo, hi, [&](const auto& off, const auto& inner, int64_t count) {
      scalar_run<Op>(xp + off[1], inner[1], sv, scalar_first, op + off[0], count, stream);
    });
    end_stream(stream);
  };
}

// The op rejects integer dtypes for float-only ops first; these never instantiate them.
template <class Op, class T>
KernelBody binary_body(const Tensor& out, const Tensor& a, const Tensor& b) {
  if constexpr (std::is_integral_v<T> && !Op::kIntegers) detail::unsupported_dtype(out.dtype());
  else return binary_loops<Op, T>(out, a, b);
}
template <class Op, class T>
KernelBody scalar_body(const Tensor& out, const Tensor& x, double s, bool scalar_first) {
  if constexpr (std::is_integral_v<T> && !Op::kIntegers) detail::unsupported_dtype(out.dtype());
  else return scalar_loops<Op, T>(out, x, s, scalar_first);
}

LaunchSpec base_spec(const std::string& name, int64_t n, int64_t bytes) {
  LaunchSpec spec;
  spec.name = name;
  spec.work = (n + kElemBlock - 1) / kElemBlock;
  spec.grain = kElemGrainBlocks;
  spec.bytes = bytes;
  spec.flops = n;
  return spec;
}

template <class Op>
LaunchSpec make_binary(BinaryOp kind, const Tensor& out, const Tensor& a, const Tensor& b) {
  DType dt = out.dtype();
  int64_t n = out.numel();
  LaunchSpec spec = base_spec(kernel_name(kind, dt, false), n,
                              (distinct_elements(a) + distinct_elements(b) + n) * int64_t(itemsize(dt)));
  OPSCOPE_DISPATCH_ALL(dt, T, [&] { spec.body = binary_body<Op, T>(out, a, b); });
  return spec;
}

template <class Op>
LaunchSpec make_scalar(BinaryOp kind, const Tensor& out, const Tensor& x, double s, bool scalar_first) {
  DType dt = out.dtype();
  int64_t n = out.numel();
  LaunchSpec spec = base_spec(kernel_name(kind, dt, true), n,
                              (distinct_elements(x) + n) * int64_t(itemsize(dt)));
  OPSCOPE_DISPATCH_ALL(dt, T, [&] { spec.body = scalar_body<Op, T>(out, x, s, scalar_first); });
  return spec;
}

}  // namespace

LaunchSpec binary_spec(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  switch (op) {
    case BinaryOp::add: return make_binary<Add>(op, out, a, b);
    case BinaryOp::sub: return make_binary<Sub>(op, out, a, b);
    case BinaryOp::mul: return make_binary<Mul>(op, out, a, b);
    case BinaryOp::div: return make_binary<Div>(op, out, a, b);
    case BinaryOp::pow: return make_binary<Pow>(op, out, a, b);
    case BinaryOp::maximum: return make_binary<Maximum>(op, out, a, b);
    case BinaryOp::minimum: return make_binary<Minimum>(op, out, a, b);
    case BinaryOp::div_trunc: return make_binary<DivTrunc>(op, out, a, b);
    case BinaryOp::div_floor: return make_binary<DivFloor>(op, out, a, b);
    case BinaryOp::remainder: return make_binary<Remainder>(op, out, a, b);
  }
  return {};
}

LaunchSpec binary_scalar_spec(BinaryOp op, const Tensor& out, const Tensor& x, double s, bool scalar_first) {
  switch (op) {
    case BinaryOp::add: return make_scalar<Add>(op, out, x, s, scalar_first);
    case BinaryOp::sub: return make_scalar<Sub>(op, out, x, s, scalar_first);
    case BinaryOp::mul: return make_scalar<Mul>(op, out, x, s, scalar_first);
    case BinaryOp::div: return make_scalar<Div>(op, out, x, s, scalar_first);
    case BinaryOp::pow:
      if (!scalar_first) switch (pow_steps(s)) {
          case PowSteps::square: return make_scalar<Square>(op, out, x, s, false);
          case PowSteps::cube: return make_scalar<Cube>(op, out, x, s, false);
          case PowSteps::inverse_square: return make_scalar<InverseSquare>(op, out, x, s, false);
          case PowSteps::inverse: return make_scalar<Inverse>(op, out, x, s, false);
          case PowSteps::sqrt: return make_scalar<SquareRoot>(op, out, x, s, false);
          case PowSteps::inverse_sqrt: return make_scalar<InverseSquareRoot>(op, out, x, s, false);
          case PowSteps::none: break;
        }
      return make_scalar<Pow>(op, out, x, s, scalar_first);
    case BinaryOp::maximum: return make_scalar<Maximum>(op, out, x, s, scalar_first);
    case BinaryOp::minimum: return make_scalar<Minimum>(op, out, x, s, scalar_first);
    case BinaryOp::div_trunc: return make_scalar<DivTrunc>(op, out, x, s, scalar_first);
    case BinaryOp::div_floor: return make_scalar<DivFloor>(op, out, x, s, scalar_first);
    case BinaryOp::remainder: return make_scalar<Remainder>(op, out, x, s, scalar_first);
  }
  return {};
}

}  // namespace opscope::cpu_kernels
