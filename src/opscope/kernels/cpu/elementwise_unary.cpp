// Unary elementwise kernels. Each op is a functor applied by one loop template; exp,
// log, sin, cos, tanh and erf are branch-free polynomials (Cephes; vec_math.inc, shared
// with the compiler's fused kernels) so that those loops vectorize: the C library's
// versions are scalar calls.
#include <bit>
#include <cmath>
#include <limits>

#include "opscope/kernels/cpu/activation.h"
#include "opscope/kernels/cpu/bf16_even_odd.h"
#include "opscope/kernels/cpu/elementwise.h"
#include "opscope/kernels/cpu/half_rows.h"
#include "opscope/kernels/cpu/stream_store.h"

namespace opscope::cpu_kernels {

namespace {

#include "opscope/kernels/cpu/vec_math.inc"

// sin x (cos x when kCos). The quadrant n comes from x * 2/pi in f32 (off by one only
// where |r| ends up a hair past pi/4, still inside the polynomials' range); the
// reduction x - n * pi/2 runs in double with a two-part pi/2 (exact products for
// |n| < 2^20), exact enough for |x| <= kTrigFast. The callers send larger |x|, inf and
// NaN to the C library. (A 64-bit quadrant here stops GCC from vectorizing the loop.)
constexpr float kTrigFast = 1e5f;
template <bool kCos>
[[gnu::always_inline]] inline float sincos_f(float x) {
  constexpr float kShift = 12582912.f;  // 1.5 * 2^23
  float zq = x * 0.636619772367581343f + kShift;
  float n = zq - kShift;
  uint32_t q = std::bit_cast<uint32_t>(zq) + (kCos ? 1 : 0);  // low bits: quadrant
  double nd = n;
  double rd = double(x) - nd * 1.5707963267341256;
  rd = rd - nd * 6.077100506506192e-11;
  float r = float(rd), z = r * r;
  float s = ((-1.9515295891e-4f * z + 8.3321608736e-3f) * z - 1.6666654611e-1f) * z * r + r;
  float c = ((2.443315711809948e-5f * z - 1.388731625493765e-3f) * z + 4.166664568298827e-2f) * z * z - 0.5f * z + 1.f;
  float v = blend(q & 1, c, s);
  return blend(q & 2, -v, v);
}

template <class C> using uns = std::make_unsigned_t<C>;

// ---- the ops; kIntegers: also instantiated for i32/i64; kFlops: per element ----
struct Neg {
  static constexpr bool kIntegers = true;
  static constexpr int kFlops = 1;
  template <class C> [[gnu::always_inline]] static C f(C x) {
    if constexpr (std::is_integral_v<C>) return C(-uns<C>(x));  // wraps at the minimum
    else return -x;
  }
};
struct Abs {
  static constexpr bool kIntegers = true;
  static constexpr int kFlops = 1;
  template <class C> [[gnu::always_inline]] static C f(C x) {
    if constexpr (std::is_integral_v<C>) return x < 0 ? C(-uns<C>(x)) : x;
    else return std::fabs(x);
  }
};
struct Relu {
  static constexpr bool kIntegers = true;
  static constexpr int kFlops = 1;
  template <class C> [[gnu::always_inline]] static C f(C x) { return x < 0 ? C(0) : x; }  // NaN stays NaN
};
struct Exp {
  static constexpr bool kIntegers = false;
  static constexpr int kFlops = 1;
  [[gnu::always_inline]] static float f(float x) { return ofs_exp(x); }
};
struct Log {
  static constexpr bool kIntegers = false;
  static constexpr int kFlops = 1;
  [[gnu::always_inline]] static float f(float x) { return ofs_log(x); }
};
// std::sqrt: exact, and one vsqrtps per register (the kernels build with -fno-math-errno).
struct Sqrt {
  static constexpr bool kIntegers = false;
  static constexpr int kFlops = 1;
  [[gnu::always_inline]] static float f(float x) { return std::sqrt(x); }
};
struct Rsqrt {
  static constexpr bool kIntegers = false;
  static constexpr int kFlops = 2;
  [[gnu::always_inline]] static float f(float x) { return 1.f / std::sqrt(x); }
};
struct Sin {
  static constexpr bool kIntegers = false;
  static constexpr int kFlops = 1;
  static constexpr float kFastLimit = kTrigFast;
  [[gnu::always_inline]] static float f(float x) { return sincos_f<false>(x); }
  static float slow(float x) { return float(std::sin(double(x))); }
};
struct Cos {
  static constexpr bool kIntegers = false;
  static constexpr int kFlops = 1;
  static constexpr float kFastLimit = kTrigFast;
  [[gnu::always_inline]] static float f(float x) { return sincos_f<true>(x); }
  static float slow(float x) { return float(std::cos(double(x))); }
};
struct Tanh {
  static constexpr bool kIntegers = false;
  static constexpr int kFlops = 1;
  [[gnu::always_inline]] static float f(float x) { return ofs_tanh(x); }
};
// y = finish(x, e^-|x|) over a block of at most kHalfBlock floats (y may be x) in two
// passes, e^ first: sigmoid's and silu's block forms, as Gelu::block (below) for gelu.
template <class F> [[gnu::always_inline]] inline void exp_neg_abs_then(const float* x, float* y, int64_t m, F finish) {
  alignas(64) float e[kHalfBlock];
  for (int64_t j = 0; j < m; ++j) e[j] = ofs_exp(-std::fabs(x[j]));
  for (int64_t j = 0; j < m; ++j) y[j] = finish(x[j], e[j]);
}
struct Sigmoid {
  static constexpr bool kIntegers = false;
  static constexpr int kFlops = 3;
  [[gnu::always_inline]] static float f(float x) { return ofs_sigmoid(x); }
  static void block(const float* x, float* y, int64_t m) {
    exp_neg_abs_then(x, y, m, [](float v, float e) { return ofs_sigmoid_from_exp(v, e); });
  }
};
struct Silu {
  static constexpr bool kIntegers = false;
  static constexpr int kFlops = 4;
  [[gnu::always_inline]] static float f(float x) { return ofs_silu(x); }
  static void block(const float* x, float* y, int64_t m) {
    exp_neg_abs_then(x, y, m, [](float v, float e) { return ofs_silu_from_exp(v, e); });
  }
};
struct Gelu {
  static constexpr bool kIntegers = false;
  static constexpr int kFlops = 5;
  [[gnu::always_inline]] static float f(float x) { return ofs_gelu(x); }
  // y = gelu(x) over a block (y may be x) in two passes, erfc's polynomial then its e^:
  // one pass's chain of dependent steps was longer than an AVX2 core's scheduler could
  // overlap (one Zen 3 core: 1.43 -> 1.09 ns an element). The same values as f().
  static void block(const float* x, float* y, int64_t m) {
    alignas(64) float t[kHalfBlock], a[kHalfBlock], b[kHalfBlock];
    for (int64_t j = 0; j < m; ++j) t[j] = ofs_erfc_scaled_parts(x[j], &a[j], &b[j]);
    for (int64_t j = 0; j < m; ++j) y[j] = ofs_gelu_from_parts(x[j], t[j], a[j], b[j]);
  }
};

// gelu's tanh approximation (torch's approximate='tanh', GPT-2's "gelu_new"):
// x/2 * (1 + tanh(z)), z = sqrt(2/pi) * (x + 0.044715 x^3), computed as x * sigmoid(2z),
// the same value without the cancellation of 1 + tanh(z) for negative x.
struct GeluTanh {
  static constexpr bool kIntegers = false;
  static constexpr int kFlops = 9;
  [[gnu::always_inline]] static float f(float x) {
    return x * ofs_sigmoid(1.5957691216057308f * (x + 0.044715f * x * x * x));
  }
};
// relu6(x + 3) / 6 and x times it (relu6_shift: activation.h), as torch computes them:
// NaN stays NaN, and hardswish(-inf) is -inf * 0 = NaN there too.
struct Hardsigmoid {
  static constexpr bool kIntegers = false;
  static constexpr int kFlops = 3;
  [[gnu::always_inline]] static float f(float x) { return relu6_shift(x) / 6.f; }
};
struct Hardswish {
  static constexpr bool kIntegers = false;
  static constexpr int kFlops = 4;
  [[gnu::always_inline]] static float f(float x) { return x * relu6_shift(x) / 6.f; }
};

// Rounding: integers pass through unchanged. round is half to even (nearbyint in the
// default rounding mode), as torch.round.
struct Floor {
  static constexpr bool kIntegers = true;
  static constexpr int kFlops = 1;
  template <class C> [[gnu::always_inline]] static C f(C x) {
    if constexpr (std::is_integral_v<C>) return x;
    else return std::floor(x);
  }
};
struct Ceil {
  static constexpr bool kIntegers = true;
  static constexpr int kFlops = 1;
  template <class C> [[gnu::always_inline]] static C f(C x) {
    if constexpr (std::is_integral_v<C>) return x;
    else return std::ceil(x);
  }
};
struct Round {
  static constexpr bool kIntegers = true;
  static constexpr int kFlops = 1;
  template <class C> [[gnu::always_inline]] static C f(C x) {
    if constexpr (std::is_integral_v<C>) return x;
    else return std::nearbyint(x);
  }
};
struct Trunc {
  static constexpr bool kIntegers = true;
  static constexpr int kFlops = 1;
  template <class C> [[gnu::always_inline]] static C f(C x) {
    if constexpr (std::is_integral_v<C>) return x;
    else return std::trunc(x);
  }
};
// -1, 0 or 1 (NaN stays NaN, -0 stays -0 as 0 - 0 would not: torch gives 0 for both).
struct Sign {
  static constexpr bool kIntegers = true;
  static constexpr int kFlops = 2;
  template <class C> [[gnu::always_inline]] static C f(C x) {
    if constexpr (std::is_integral_v<C>) return C((x > 0) - (x < 0));
    else return blend(x != x, x, float(x > 0.f) - float(x < 0.f));
  }
};
// log2 x = ln x / ln 2: within 3 ulp of the exact value, exact at powers of two
// (ofs_log gives n ln2 with the split constant, whose ratio rounds to n).
struct Log2 {
  static constexpr bool kIntegers = false;
  static constexpr int kFlops = 2;
  [[gnu::always_inline]] static float f(float x) { return ofs_log(x) * 1.44269504088896341f; }
};
struct Reciprocal {
  static constexpr bool kIntegers = false;
  static constexpr int kFlops = 1;
  [[gnu::always_inline]] static float f(float x) { return 1.f / x; }
};
// erf x = (1 + erf(x)) - 1 through the scaled erfc above (x * sqrt2 undoes its scaling);
// near 0 the Taylor series, where the subtraction would cancel.
struct Erf {
  static constexpr bool kIntegers = false;
  static constexpr int kFlops = 6;
  [[gnu::always_inline]] static float f(float x) {
    float z = x * x;
    float p = -8.54832702345085e-4f;
    p = p * z + 5.22397762544219e-3f;
    p = p * z - 2.68661706451313e-2f;
    p = p * z + 1.12837916709551257e-1f;
    p = p * z - 3.76126389031837525e-1f;
    p = p * z + 1.12837916709551257f;
    float big = ofs_one_plus_erf_scaled(x * 1.41421356237309505f) - 1.f;
    return blend(std::fabs(x) < 0.5f, x * p, big);
  }
};

// The C library's functions, one element at a time: near 0 expm1 and log1p keep the
// digits that e^x - 1 and log(1 + x) would cancel. Not vectorized: no model in the
// benchmarks spends time in them.
#define OPSCOPE_LIBM_UNARY(Name, fn, flops)                                      \
  struct Name {                                                                \
    static constexpr bool kIntegers = false;                                   \
    static constexpr int kFlops = flops;                                       \
    [[gnu::always_inline]] static float f(float x) { return std::fn(x); }      \
  };
OPSCOPE_LIBM_UNARY(Expm1, expm1, 10)
OPSCOPE_LIBM_UNARY(Log1p, log1p, 10)
OPSCOPE_LIBM_UNARY(Tan, tan, 10)
OPSCOPE_LIBM_UNARY(Atan, atan, 10)
OPSCOPE_LIBM_UNARY(Asin, asin, 10)
OPSCOPE_LIBM_UNARY(Acos, acos, 10)
OPSCOPE_LIBM_UNARY(Sinh, sinh, 10)
OPSCOPE_LIBM_UNARY(Cosh, cosh, 10)
#undef OPSCOPE_LIBM_UNARY

// erf^-1 x: Giles' single-precision polynomials in w = -log(1 - x^2) ("Approximating the
// erfinv function", 2010, within 4e-7), then one Newton step on erf in double; +-1 give
// +-inf, |x| > 1 and NaN give NaN.
struct Erfinv {
  static constexpr bool kIntegers = false;
  static constexpr int kFlops = 30;
  static float f(float x) {
    if (!(std::fabs(x) < 1.0f)) return std::fabs(x) == 1.0f ? std::copysign(INFINITY, x) : NAN;
    float w = -std::log((1.0f - x) * (1.0f + x)), p;
    if (w < 5.0f) {
      w -= 2.5f;
      p = 2.81022636e-08f;
      for (float c : {3.43273939e-07f, -3.5233877e-06f, -4.39150654e-06f, 0.00021858087f, -0.00125372503f,
                      -0.00417768164f, 0.246640727f, 1.50140941f})
        p = c + p * w;
    } else {
      w = std::sqrt(w) - 3.0f;
      p = -0.000200214257f;
      for (float c : {0.000100950558f, 0.00134934322f, -0.00367342844f, 0.00573950773f, -0.0076224613f,
                      0.00943887047f, 1.00167406f, 2.83297682f})
        p = c + p * w;
    }
    double y = double(p) * x;
    y -= (std::erf(y) - double(x)) / (1.1283791670955126 * std::exp(-y * y));  // 2/sqrt(pi) e^(-y^2) = erf'
    return float(y);
  }
};

// ---- ops with torch's parameters (unary_param_spec): objects carrying them ----

// e^x - 1 without the cancellation near 0: a Taylor series for |x| < 0.5 (x times it, so
// -0 stays -0), exp minus one beyond.
[[gnu::always_inline]] inline float expm1_f(float x) {
  float p = 1.f / 40320;
  p = p * x + 1.f / 5040;
  p = p * x + 1.f / 720;
  p = p * x + 1.f / 120;
  p = p * x + 1.f / 24;
  p = p * x + 1.f / 6;
  p = p * x + 0.5f;
  float small = x * (p * x + 1.f);
  return blend(std::fabs(x) < 0.5f, small, ofs_exp(x) - 1.f);
}
// ln(1 + u): log(w) * u / (w - 1) with w = 1 + u corrects w's rounding (Goldberg); u
// itself where w rounds to 1.
[[gnu::always_inline]] inline float log1p_f(float u) {
  float w = 1.f + u;
  float r = ofs_log(w) * (u / (w - 1.f));
  r = blend(w == 1.f, u, r);
  return blend(u == INFINITY, u, r);
}
// softplus, torch's: x where x * beta > threshold, else log1p(e^(x * beta)) / beta.
[[gnu::always_inline]] inline float softplus_f(float x, float beta, float threshold) {
  float z = x * beta;
  return blend(z > threshold, x, log1p_f(ofs_exp(z)) / beta);
}

struct LeakyRelu {  // x > 0 ? x : x * negative_slope (NaN stays NaN)
  static constexpr bool kIntegers = false;
  static constexpr int kFlops = 1;
  float slope;
  [[gnu::always_inline]] float f(float x) const { return blend(x > 0.f, x, x * slope); }
};
// x > 0 ? x * scale : alpha * scale * (e^(x * input_scale) - 1); selu and celu are elus.
struct Elu {
  static constexpr bool kIntegers = false;
  static constexpr int kFlops = 6;
  float alpha, scale, input_scale;
  [[gnu::always_inline]] float f(float x) const {
    return blend(x > 0.f, x * scale, expm1_f(x * input_scale) * (alpha * scale));
  }
};
struct Softplus {
  static constexpr bool kIntegers = false;
  static constexpr int kFlops = 8;
  float beta, threshold;
  [[gnu::always_inline]] float f(float x) const { return softplus_f(x, beta, threshold); }
};
struct Mish {  // x * tanh(softplus(x)); mish(-inf) = -inf * 0 = NaN, as torch's
  static constexpr bool kIntegers = false;
  static constexpr int kFlops = 12;
  [[gnu::always_inline]] static float f(float x) { return x * ofs_tanh(softplus_f(x, 1.f, 20.f)); }
};
struct Log10 {
  static constexpr bool kIntegers = false;
  static constexpr int kFlops = 2;
  [[gnu::always_inline]] static float f(float x) { return ofs_log(x) * 0.434294481903251828f; }
};
// 2^x = 2^n * e^(r ln2), n = round(x), r = x - n exact: exact at integers. The scaling in
// two halves keeps denormal and overflowing results right; NaN stays NaN.
struct Exp2 {
  static constexpr bool kIntegers = false;
  static constexpr int kFlops = 3;
  [[gnu::always_inline]] static float f(float x) {
    float c = blend(x < -152.f, -152.f, x);
    c = blend(c > 130.f, 130.f, c);
    constexpr float kShift = 12582912.f;  // 1.5 * 2^23: adding it rounds to an integer
    float n = (c + kShift) - kShift;
    float p = ofs_exp((c - n) * 0.693147180559945309f);
    int ni = int(n), n1 = ni >> 1, n2 = ni - n1;
    float s = std::bit_cast<float>(uint32_t(n1 + 127) << 23) * std::bit_cast<float>(uint32_t(n2 + 127) << 23);
    return blend(x != x, x, p * s);
  }
};

// log sigmoid(x) = min(x, 0) - log1p(e^-|x|), torch's form: no overflow, and log1p keeps
// the digits of a small e^-|x|. -inf gives -inf, +inf 0, NaN NaN.
struct LogSigmoid {
  static constexpr bool kIntegers = false;
  static constexpr int kFlops = 8;
  [[gnu::always_inline]] static float f(float x) {
    return blend(x < 0.f, x, 0.f) - log1p_f(ofs_exp(-std::fabs(x)));
  }
};
// x - trunc(x): exact, with x's sign; inf gives NaN, as torch's.
struct Frac {
  static constexpr bool kIntegers = false;
  static constexpr int kFlops = 2;
  [[gnu::always_inline]] static float f(float x) { return x - std::trunc(x); }
};
// atanh x = sign(x) log1p(2|x| / (1 - |x|)) / 2, vectorized (glibc's atanhf, one element at
// a time, took 1.14x torch's time): within 4 ulp. On |x|, as log1p(u) near u = -1 would
// multiply the quotient's rounding by ~80 (x near -1). +-1 give +-inf, |x| > 1 NaN, -0 -0.
struct Atanh {
  static constexpr bool kIntegers = false;
  static constexpr int kFlops = 8;
  [[gnu::always_inline]] static float f(float x) {
    float a = std::fabs(x);
    return std::copysign(0.5f * log1p_f(2.f * a / (1.f - a)), x);
  }
};
// glibc's lgammaf_r, one element at a time (lgammaf writes the sign to a global, signgam: a
// race across the cores). 2.5-3x torch's vectorized kernel: the bridge leaves lgamma to it.
struct Lgamma {
  static constexpr bool kIntegers = false;
  static constexpr int kFlops = 20;
  [[gnu::always_inline]] static float f(float x) {
    int sign;
    return ::lgammaf_r(x, &sign);
  }
};

template <class Op> constexpr bool kHasSlow = requires { Op::slow(0.f); };
// Ops with a form over a block of at most kHalfBlock floats (Gelu::block, Silu::block, ...).
template <class Op> constexpr bool kHasBlock = requires(const float* x, float* y) { Op::block(x, y, int64_t(0)); };

// The 16-bit rows a unary loop takes through f32 blocks: f16 by the hardware's converts
// (half_rows.h); bf16 where AVX2 is the widest as even and odd lanes (bf16_even_odd.h), as
// its element loop narrows slowly there. Lane-wise, so the order in the block is free.
template <class T> constexpr bool kF32Blocks = std::is_same_v<T, f16_t> || (std::is_same_v<T, bf16_t> && kBf16EvenOdd);
inline void block_to_f32(const f16_t* x, float* buf, int64_t m) { f16_row_to_f32(x, buf, m); }
[[maybe_unused]] inline void block_to_f32(const bf16_t* x, float* buf, int64_t m) { bf16_to_even_odd_f32(x, buf, m); }
inline void block_from_f32(const float* buf, f16_t* o, int64_t m, bool stream) { f32_row_to_f16(buf, o, m, stream); }
[[maybe_unused]] inline void block_from_f32(const float* buf, bf16_t* o, int64_t m, bool stream) { even_odd_f32_to_bf16(buf, o, m, stream); }

// o is contiguous; `stream`: large enough for streaming stores (stream_store.h).
template <class Op, class T>
void unary_flat(Op fn, const T* __restrict x, T* __restrict o, int64_t n, bool stream) {
  if constexpr (kF32Blocks<T>) {
    alignas(64) float buf[kHalfBlock];
    for (int64_t i0 = 0; i0 < n; i0 += kHalfBlock) {
      int64_t m = std::min(kHalfBlock, n - i0);
      block_to_f32(x + i0, buf, m);
      if constexpr (kHasBlock<Op>) Op::block(buf, buf, m);
      else
        for (int64_t j = 0; j < m; ++j) buf[j] = fn.f(buf[j]);
      block_from_f32(buf, o + i0, m, stream);
    }
    return;
  }
  if constexpr (kHasBlock<Op> && std::is_same_v<T, float>) {
    alignas(64) float buf[kHalfBlock];
    for (int64_t i0 = 0; i0 < n; i0 += kHalfBlock) {
      int64_t m = std::min(kHalfBlock, n - i0);
      if (!stream) {
        Op::block(x + i0, o + i0, m);
        continue;
      }
      Op::block(x + i0, buf, m);
      write_elements(o + i0, m, true, [&](int64_t j) { return buf[j]; });
    }
    return;
  }
  // always_inline: an op as large as mish (two e^, a log, a tanh) was otherwise a call per element
  auto g = [&](int64_t i) __attribute__((always_inline)) { return store<T>(fn.f(load(x[i]))); };
  if (stream) write_elements(o, n, true, g);
  else
    for (int64_t i = 0; i < n; ++i) o[i] = g(i);
}
template <class Op, class T>
void unary_strided(Op fn, const T* __restrict x, int64_t s, T* __restrict o, int64_t n, bool stream) {
  auto g = [&](int64_t i) __attribute__((always_inline)) { return store<T>(fn.f(load(x[i * s]))); };
  if (stream) write_elements(o, n, true, g);
  else
    for (int64_t i = 0; i < n; ++i) o[i] = g(i);
}
template <class Op, class T>
void unary_slow(const T* x, int64_t s, T* __restrict o, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = store<T>(Op::slow(load(x[i * s])));
}

// One run of n elements at stride s. Ops with a limited fast range (sin, cos) check
// each chunk first: the largest |x| bit pattern (NaN above inf) picks the loop.
template <class Op, class T>
void unary_run(const Op& fn, const T* x, int64_t s, T* o, int64_t n, bool stream) {
  if constexpr (kHasSlow<Op>) {
    constexpr int64_t kChunk = 256;
    constexpr uint32_t kLimit = std::bit_cast<uint32_t>(Op::kFastLimit);
    for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
      int64_t m = std::min(kChunk, n - i0);
      const T* xc = x + i0 * s;
      uint32_t big = 0;
      for (int64_t i = 0; i < m; ++i) big = std::max(big, std::bit_cast<uint32_t>(load(xc[i * s])) & 0x7fffffffu);
      if (big > kLimit) unary_slow<Op>(xc, s, o + i0, m);
      else if (s == 1) unary_flat<Op>(fn, xc, o + i0, m, stream);
      else unary_strided<Op>(fn, xc, s, o + i0, m, stream);
    }
  } else {
    if (s == 1) unary_flat<Op>(fn, x, o, n, stream);
    else unary_strided<Op>(fn, x, s, o, n, stream);
  }
}

template <class Op, class T>
KernelBody unary_loops(const Tensor& out, const Tensor& x, Op fn) {
  Shape shape;
  std::array<Strides, 2> st;
  elementwise_layout<2>(out, {&x}, shape, st);
  const T* xp = x.data<T>();
  T* op = out.data<T>();
  int64_t n = out.numel();
  bool stream = out.nbytes() >= kStreamBytes;
  if (shape.size() <= 1) {
    // One run (the common, collapsed case): a closure small enough to live in the launch.
    int64_t so = shape.size() ? st[0][0] : 1, sx = shape.size() ? st[1][0] : 1;
    return [=](int64_t b, int64_t e) {
      int64_t lo = b * kElemBlock, hi = std::min(n, e * kElemBlock);
      unary_run<Op>(fn, xp + lo * sx, sx, op + lo * so, hi - lo, stream);
      end_stream(stream);
    };
  }
  return [=](int64_t b, int64_t e) {
    int64_t lo = b * kElemBlock, hi = std::min(n, e * kElemBlock);
    walk<2>(shape, st, lo, hi, [&](const auto& off, const auto& inner, int64_t count) {
      unary_run<Op>(fn, xp + off[1], inner[1], op + off[0], count, stream);
    });
    end_stream(stream);
  };
}

template <class Op, class T>
KernelBody unary_body(const Tensor& out, const Tensor& x, const Op& fn) {
  if constexpr (std::is_integral_v<T> && !Op::kIntegers) detail::unsupported_dtype(out.dtype());  // op checked
  else return unary_loops<Op, T>(out, x, fn);
}

// The launch of fn (an op above, or one carrying its parameters) under the kernel name `name`.
template <class Op>
LaunchSpec make_unary_spec(const std::string& name, const Tensor& out, const Tensor& x, const Op& fn) {
  DType dt = out.dtype();
  int64_t n = out.numel();
  LaunchSpec spec;
  spec.name = name;
  spec.work = (n + kElemBlock - 1) / kElemBlock;
  spec.grain = kElemGrainBlocks;
  spec.bytes = (distinct_elements(x) + n) * int64_t(itemsize(dt));
  spec.flops = n * Op::kFlops;
  OPSCOPE_DISPATCH_ALL(dt, T, [&] { spec.body = unary_body<Op, T>(out, x, fn); });
  return spec;
}

template <class Op>
LaunchSpec make_unary(UnaryOp kind, const Tensor& out, const Tensor& x) {
  return make_unary_spec(kernel_name(kind, out.dtype()), out, x, Op{});
}

}  // namespace

LaunchSpec unary_spec(UnaryOp op, const Tensor& out, const Tensor& x) {
  switch (op) {
    case UnaryOp::neg: return make_unary<Neg>(op, out, x);
    case UnaryOp::abs: return make_unary<Abs>(op, out, x);
    case UnaryOp::exp: return make_unary<Exp>(op, out, x);
    case UnaryOp::log: return make_unary<Log>(op, out, x);
    case UnaryOp::sqrt: return make_unary<Sqrt>(op, out, x);
    case UnaryOp::rsqrt: return make_unary<Rsqrt>(op, out, x);
    case UnaryOp::sin: return make_unary<Sin>(op, out, x);
    case UnaryOp::cos: return make_unary<Cos>(op, out, x);
    case UnaryOp::tanh: return make_unary<Tanh>(op, out, x);
    case UnaryOp::sigmoid: return make_unary<Sigmoid>(op, out, x);
    case UnaryOp::silu: return make_unary<Silu>(op, out, x);
    case UnaryOp::gelu: return make_unary<Gelu>(op, out, x);
    case UnaryOp::relu: return make_unary<Relu>(op, out, x);
    case UnaryOp::gelu_tanh: return make_unary<GeluTanh>(op, out, x);
    case UnaryOp::hardswish: return make_unary<Hardswish>(op, out, x);
    case UnaryOp::hardsigmoid: return make_unary<Hardsigmoid>(op, out, x);
    case UnaryOp::floor: return make_unary<Floor>(op, out, x);
    case UnaryOp::ceil: return make_unary<Ceil>(op, out, x);
    case UnaryOp::round: return make_unary<Round>(op, out, x);
    case UnaryOp::trunc: return make_unary<Trunc>(op, out, x);
    case UnaryOp::sign: return make_unary<Sign>(op, out, x);
    case UnaryOp::log2: return make_unary<Log2>(op, out, x);
    case UnaryOp::reciprocal: return make_unary<Reciprocal>(op, out, x);
    case UnaryOp::erf: return make_unary<Erf>(op, out, x);
    case UnaryOp::expm1: return make_unary<Expm1>(op, out, x);
    case UnaryOp::log1p: return make_unary<Log1p>(op, out, x);
    case UnaryOp::tan: return make_unary<Tan>(op, out, x);
    case UnaryOp::atan: return make_unary<Atan>(op, out, x);
    case UnaryOp::asin: return make_unary<Asin>(op, out, x);
    case UnaryOp::acos: return make_unary<Acos>(op, out, x);
    case UnaryOp::sinh: return make_unary<Sinh>(op, out, x);
    case UnaryOp::cosh: return make_unary<Cosh>(op, out, x);
    case UnaryOp::erfinv: return make_unary<Erfinv>(op, out, x);
  }
  return {};
}

LaunchSpec unary_param_spec(ParamUnaryOp op, const Tensor& out, const Tensor& x, UnaryParams p) {
  DType dt = out.dtype();
  if (!is_floating(dt)) detail::unsupported_dtype(dt);  // the op checked
  const std::string& name = kernel_name(op, dt);
  switch (op) {
    case ParamUnaryOp::leaky_relu: return make_unary_spec(name, out, x, LeakyRelu{p.a});
    case ParamUnaryOp::elu: return make_unary_spec(name, out, x, Elu{p.a, p.b, p.c});
    case ParamUnaryOp::softplus: return make_unary_spec(name, out, x, Softplus{p.a, p.b});
    case ParamUnaryOp::mish: return make_unary_spec(name, out, x, Mish{});
    case ParamUnaryOp::log10: return make_unary_spec(name, out, x, Log10{});
    case ParamUnaryOp::exp2: return make_unary_spec(name, out, x, Exp2{});
    case ParamUnaryOp::log_sigmoid: return make_unary_spec(name, out, x, LogSigmoid{});
    case ParamUnaryOp::atanh: return make_unary_spec(name, out, x, Atanh{});
    case ParamUnaryOp::frac: return make_unary_spec(name, out, x, Frac{});
    case ParamUnaryOp::lgamma: return make_unary_spec(name, out, x, Lgamma{});
  }
  return {};
}

}  // namespace opscope::cpu_kernels
