#include "opscope/kernels/cpu/norm.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "opscope/kernels/cpu/bf16_even_odd.h"
#include "opscope/kernels/cpu/half_rows.h"
#include "opscope/kernels/cpu/reduce.h"
#include "opscope/kernels/cpu/stream_store.h"
#include "opscope/kernels/cpu/thread_row.h"
#include "opscope/kernels/cpu/vec_math.inc"

namespace opscope::cpu_kernels {

namespace {

constexpr int64_t kMinElemsPerCore = int64_t(1) << 14;
constexpr int64_t kColBlock = 128;  // columns per unit of a softmax over an outer axis

// ---- e^x, a register of lanes at a time (f32v, half_rows.h): Cephes' expf as ofs_exp
// (vec_math.inc) computes it, 2^n * e^r with n = round(x / ln2) and |r| <= ln2/2, about 1
// ulp. The rounding and the clamps are one instruction each under AVX (round, max, min),
// and so is the scaling by 2^n under AVX-512 (scalef), where GCC 12 makes two to four of
// each from the portable forms ----
constexpr float kLog2e = 1.44269504088896341f;

// x rounded to the nearest integer (ties to even), per lane; |x| < 2^22.
[[gnu::always_inline]] inline f32v round_lanes(f32v x) {
#if defined(__AVX512F__)
  // maskz: GCC 12 warns of the plain intrinsics' undefined operand (also below)
  return std::bit_cast<f32v>(
      _mm512_maskz_roundscale_ps(0xffff, std::bit_cast<__m512>(x), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#elif defined(__AVX__)
  return std::bit_cast<f32v>(_mm256_round_ps(std::bit_cast<__m256>(x), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#else
  constexpr float kShift = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  return (x + kShift) - kShift;
#endif
}

// p * 2^n per lane, n integral in [-217, 129]: denormal and overflowing results too.
[[gnu::always_inline]] inline f32v scale_lanes(f32v p, f32v n) {
#if defined(__AVX512F__)
  return std::bit_cast<f32v>(_mm512_maskz_scalef_ps(0xffff, std::bit_cast<__m512>(p), std::bit_cast<__m512>(n)));
#else
  i32v ni = __builtin_convertvector(n, i32v), n1 = ni >> 1, n2 = ni - n1;  // two steps: 2^n alone may not be a float
  return p * std::bit_cast<f32v>((n1 + 127) << 23) * std::bit_cast<f32v>((n2 + 127) << 23);
#endif
}

// p * 2^n per lane as scale_lanes, and 0 where x < lo (NaN x kept), without scaling those
// lanes: on Intel cores a scalef whose result underflows (to a subnormal or to 0) takes a
// microcode assist, ~65 ns a vector here, and a causal mask's -inf lanes are such lanes (a
// softmax of masked rows took 8x a plain one's time). Masked-off AVX-512 lanes take none.
// Under AVX2 n is 0 in them: the two-step scale's last multiply could land on a subnormal,
// which assists too (~37 ns a vector). lo must be where every result below it rounds to 0.
[[gnu::always_inline]] inline f32v scale_lanes_from(f32v p, f32v n, f32v x, float lo) {
#if defined(__AVX512F__)
  __mmask16 keep = _mm512_cmp_ps_mask(std::bit_cast<__m512>(x), _mm512_set1_ps(lo), _CMP_NLT_UQ);
  return std::bit_cast<f32v>(_mm512_maskz_scalef_ps(keep, std::bit_cast<__m512>(p), std::bit_cast<__m512>(n)));
#else
  i32v keep = ~(x < lo);
  f32v r = scale_lanes(p, std::bit_cast<f32v>(std::bit_cast<i32v>(n) & keep));
  return std::bit_cast<f32v>(std::bit_cast<i32v>(r) & keep);
#endif
}

// p * 2^n per lane where the result is a normal float and p is in [0.5, 2): n added to p's
// exponent bits, three instructions where scale_lanes takes nine without AVX-512. A NaN p
// stays NaN (a NaN n converts to 0x80000000, whose shift adds 0).
[[gnu::always_inline]] inline f32v scale_normal_lanes(f32v p, f32v n) {
#if defined(__AVX512F__)
  return scale_lanes(p, n);
#else
  return std::bit_cast<f32v>(std::bit_cast<i32v>(p) + (__builtin_convertvector(n, i32v) << 23));
#endif
}

// a > b ? a : b per lane, so b where either is NaN: one vmaxps (GCC 12 makes a compare and
// a blend of the ?:, on the exp's critical path).
[[gnu::always_inline]] inline f32v max_lanes(f32v a, f32v b) {
#if defined(__AVX512F__)
  return std::bit_cast<f32v>(_mm512_maskz_max_ps(0xffff, std::bit_cast<__m512>(a), std::bit_cast<__m512>(b)));
#elif defined(__AVX__)
  return std::bit_cast<f32v>(_mm256_max_ps(std::bit_cast<__m256>(a), std::bit_cast<__m256>(b)));
#else
  return a > b ? a : b;
#endif
}

// a < b ? a : b per lane, so b where either is NaN: one vminps.
[[gnu::always_inline]] inline f32v min_lanes(f32v a, f32v b) {
#if defined(__AVX512F__)
  return std::bit_cast<f32v>(_mm512_maskz_min_ps(0xffff, std::bit_cast<__m512>(a), std::bit_cast<__m512>(b)));
#elif defined(__AVX__)
  return std::bit_cast<f32v>(_mm256_min_ps(std::bit_cast<__m256>(a), std::bit_cast<__m256>(b)));
#else
  return a < b ? a : b;
#endif
}

// x clamped to [lo, hi] per lane, NaN passing: vmaxps and vminps.
[[gnu::always_inline]] inline f32v clamp_lanes(f32v x, float lo, float hi) {
  return min_lanes(broadcast(hi), max_lanes(broadcast(lo), x));
}

// e^r's polynomial for x = n ln2 + r, n = round(x / ln2): p in [0.7, 1.42], e^x = 2^n p.
[[gnu::always_inline]] inline f32v exp_reduced(f32v x, f32v& n) {
  n = round_lanes(x * kLog2e);
  f32v r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  // Estrin's form, as ofs_exp_core: a shorter dependent chain than Horner's
  f32v r2 = r * r;
  f32v p01 = r * 1.6666665459e-1f + 5.0000001201e-1f;
  f32v p23 = r * 8.3334519073e-3f + 4.1665795894e-2f;
  f32v p45 = r * 1.9875691500e-4f + 1.3981999507e-3f;
  f32v p = (p45 * r2 + p23) * r2 + p01;
  return p * r2 + (r + 1.0f);
}

// e^x per lane: e^-inf = 0, e^x = inf above 88.7, NaN stays NaN, denormal results below
// -87.3. Below -104, e^x < 2^-150 rounds to 0, and is 0 without an underflowing scale.
[[gnu::always_inline]] inline f32v exp_lanes(f32v x) {
  f32v n;
  f32v p = exp_reduced(clamp_lanes(x, -150.0f, 89.0f), n);
  return scale_lanes_from(p, n, x, -104.0f);
}

// The least x - max of a row for which the softmax's e^ may skip its clamps and scale by
// exponent bits: from it up to 0, n = round((x - max) / ln2) >= -125 and 2^n p is normal.
constexpr float kNormalSpread = -86.5f;

// e^x per lane for x in [kNormalSpread, 0] or NaN, as exp_lanes gives it.
[[gnu::always_inline]] inline f32v exp_lanes_in_range(f32v x) {
  f32v n;
  f32v p = exp_reduced(x, n);
  return scale_normal_lanes(p, n);
}

// 2^f per lane for f in [-0.5, 0.5]: a degree-4 fit, to 3e-6 relative. (A degree-3 fit,
// 7.5e-5, measured 6-8% faster on the halves' softmax, but left 1-ulp differences from the
// exact value rounded in 2-10% of outputs.)
[[gnu::always_inline]] inline f32v exp2_fraction(f32v f) {
  f32v p = broadcast(9.57000907510519e-3f);
  p = p * f + 5.591786280274391e-2f;
  p = p * f + 2.402474731206894e-1f;
  p = p * f + 6.931217908859253e-1f;
  return p * f + 9.999992847442627e-1f;
}

#if defined(__AVX512F__) && defined(__AVX512DQ__)
// 2^f per lane for f in [0, 1): a degree-4 fit, to 2.7e-6 relative, as exp2_fraction's on
// [-0.5, 0.5] (an interval as long).
[[gnu::always_inline]] inline f32v exp2_unit_fraction(f32v f) {
  f32v p = broadcast(1.3534121215343475e-2f);
  p = p * f + 5.2011482417583466e-2f;
  p = p * f + 2.4144279956817627e-1f;
  p = p * f + 6.930038332939148e-1f;
  return p * f + 1.0000026226043701f;
}
#endif

// The largest |max| of a half row whose e^ may take y = x log2(e) - max log2(e) as one FMA
// (exp_shifted_for_half). The rounding of max log2(e) shifts every y of the row alike, which
// the division by their sum cancels; below 2^22 it is at most 0.25, and keeps each y within
// the range where 2^n is normal (kNormalSpread's margin). Rows past it (a bf16 row of 1e30)
// take the full e^ of x - max.
constexpr float kHalfFmaMax = 4194304.0f;

// e^(x - m) per lane for a softmax whose output is bf16 or f16, to 3e-6 relative: far inside
// half an ulp of either (2e-3, 2.4e-4), in about half the instructions of exp_lanes. As 2^y
// with y = (x - m) log2(e), 2^n * p(y - n), p a fit of 2^f on [-0.5, 0.5] (n = floor(y) and
// [0, 1) where kInRange has AVX-512DQ, below). y is at most 0 (m is the row's max); -inf
// and y below -150 give 0, NaN stays NaN. kInRange: every x - m is in [kNormalSpread, 0] or
// NaN and |m| <= kHalfFmaMax, so no clamp and the scaling by exponent bits.
template <bool kInRange> [[gnu::always_inline]] inline f32v exp_shifted_for_half(f32v x, float m) {
  if constexpr (kInRange) {
#if defined(__AVX512F__) && defined(__AVX512DQ__)
    // y in one FMA, f = y - floor(y) in one vreduceps, and vscalefps multiplies by
    // 2^floor(y) itself, so n is never formed: 8 instructions an e^ with the sum, where
    // y = (x - m) log2(e), round, subtract and scale by n took 11.
    f32v y = x * kLog2e - m * kLog2e;
    __m512 f = _mm512_maskz_reduce_ps(0xffff, std::bit_cast<__m512>(y), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    return std::bit_cast<f32v>(_mm512_maskz_scalef_ps(
        0xffff, std::bit_cast<__m512>(exp2_unit_fraction(std::bit_cast<f32v>(f))), std::bit_cast<__m512>(y)));
#elif defined(__AVX512F__)
    f32v y = (x - m) * kLog2e;
    f32v n = round_lanes(y);
    return scale_normal_lanes(exp2_fraction(y - n), n);
#else
    // Without AVX-512's one-instruction round and scalef: y in one FMA, and n = round(y) by
    // adding 1.5 * 2^23, which leaves n in t's low mantissa bits. t << 23 is then n << 23
    // (mod 2^32), added to p's exponent bits as scale_normal_lanes adds it, with no round or
    // convert instruction (bf16 1024x4096: 9% less time). A NaN x stays NaN: a half's NaN as
    // f32 has its low 13 bits clear, and so has t, whose shift then adds 0 to p's NaN bits.
    constexpr float kShift = 12582912.0f;
    f32v y = x * kLog2e - m * kLog2e;
    f32v t = y + kShift;
    f32v p = exp2_fraction(y - (t - kShift));
    return std::bit_cast<f32v>(std::bit_cast<i32v>(p) + (std::bit_cast<i32v>(t) << 23));
#endif
  }
#if defined(__AVX512DQ__)
  // f = y - round(y) in one vreduceps, which gives 0 for y = -inf: n = y - f is then -inf,
  // and scalef's 2^-inf is 0 with no clamp (below -150, 2^n underflows to 0 as well).
  f32v y = (x - m) * kLog2e;
  f32v f = std::bit_cast<f32v>(
      _mm512_maskz_reduce_ps(0xffff, std::bit_cast<__m512>(y), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  f32v n = y - f;
#else
  f32v y = (x - m) * kLog2e, yc = max_lanes(broadcast(-150.0f), y);  // NaN passes
  f32v n = round_lanes(yc), f = yc - n;
#endif
  return scale_lanes_from(exp2_fraction(f), n, y, -151.0f);  // 2^y < 2^-150.5 rounds to 0
}

// e^(x - m) per lane, as precise as T's softmax needs; kInRange as for exp_shifted_for_half.
template <class T, bool kInRange> [[gnu::always_inline]] inline f32v exp_shifted(f32v x, float m) {
  if constexpr (!std::is_same_v<T, float>) return exp_shifted_for_half<kInRange>(x, m);
  else if constexpr (kInRange) return exp_lanes_in_range(x - m);
  else return exp_lanes(x - m);
}

// y[i] = g(the lanes of each source row at i) for i < n: kVecLanes at a time in f32, each
// source read as f32 and the result stored as T (half_rows.h), streamed when asked; the
// tail as one more vector, padded. Where every row is bf16, 2 x kVecLanes at a time as even
// and odd lanes (bf16_even_odd.h).
template <class T, class G, class... S> inline void map_row(T* y, int64_t n, bool stream, G&& g, const S*... src) {
  int64_t i = 0;
  if constexpr (kBf16EvenOddRows && std::is_same_v<T, bf16_t> && (std::is_same_v<S, bf16_t> && ...)) {
    for (; i + 2 * kVecLanes <= n; i += 2 * kVecLanes)
      store_bf16_even_odd(y + i, {g(load_bf16_even_odd(src + i).even...), g(load_bf16_even_odd(src + i).odd...)}, stream);
  }
  for (; i + kVecLanes <= n; i += kVecLanes) store_f32v(y + i, g(load_f32v(src + i)...), stream);
  if (i == n) return;
  store_f32v_tail(y + i, g(load_f32v_tail(src + i, n - i, 0.0f)...), n - i);
}

int64_t row_grain(int64_t n) { return std::max<int64_t>(1, kMinElemsPerCore / std::max<int64_t>(n, 1)); }

// ---- softmax: the max (x from memory), then e^(x-max) into an f32 row t and its sum in
// one pass, then y = t / sum; the later passes find the row in L1/L2. bf16 and f16 are
// read and written as f32 lanes (half_rows.h) in the same passes ----
// Asks for the line at p in L2: the next row, fetched while this one computes from L1, so
// that its max pass does not wait on memory with the core idle (f32 1024x4096: 700-740 ->
// 570-580 us here; no gain measured for the halves or the norms, which compute less).
template <class T> [[gnu::always_inline]] inline void prefetch_l2(const T* p) {
  _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T1);
}

// t[i] = e^(x[i] - m), as precise as a softmax into E needs, returning their sum; kInRange as
// for exp_shifted_for_half. The tail is one vector padded with -inf (e^-inf adds 0), out of
// kInRange's range. `next`: a row of n to prefetch meanwhile, or null.
template <class E, bool kInRange, class T, class N>
inline float exp_shifted_row(const T* x, float* t, int64_t n, float m, const N* next) {
  constexpr int64_t V = kVecLanes;
  f32v a0 = {}, a1 = {};
  int64_t i = 0;
  for (; i + 2 * V <= n; i += 2 * V) {
    if (next) {  // the lines of the next row's 2V elements (up to two: f32 under AVX-512)
      prefetch_l2(next + i);
      prefetch_l2(next + i + V);
    }
    f32v e0 = exp_shifted<E, kInRange>(load_f32v(x + i), m), e1 = exp_shifted<E, kInRange>(load_f32v(x + i + V), m);
    store_f32v(t + i, e0, false);
    store_f32v(t + i + V, e1, false);
    a0 += e0;
    a1 += e1;
  }
  for (; i < n; i += V) {
    int64_t k = std::min<int64_t>(V, n - i);
    f32v e = exp_shifted<E, false>(load_f32v_tail(x + i, k, -INFINITY), m);
    store_f32v_tail(t + i, e, k);
    a0 += e;
  }
  return fold_lanes(a0 + a1, [](f32v a, f32v b) { return a + b; });
}

// The row's max and min for its softmax. NaN is not tracked: a NaN in the row makes its e^,
// their sum and so every output of the row NaN anyway, as in torch. (row_extreme's NaN
// tracking took a third of this pass.) An all -inf row gives a max of -inf, and NaN outputs
// as in torch. The min costs one vminps beside each vmaxps; it says whether the row's e^ may
// take exp_lanes_in_range.
// With kKeep (bf16, f16), the row converted to f32 is stored there as well: the exp pass
// then loads f32 lanes from L1 instead of converting the halves a second time. (Even bf16's
// two-instruction convert as even and odd lanes: 308-329 us with the keep at 1024x4096 on
// Zen 5, 336-360 converting twice.)
// A bf16 row's keep holds each 2 x kVecLanes elements as their even lanes, then their odd
// lanes (bf16_even_odd.h): loaded so here, e^ in place lane by lane, stored back in order by
// softmax_rows.
template <class T> constexpr bool kKeepEvenOdd = kBf16EvenOddRows && std::is_same_v<T, bf16_t>;

struct RowExtent {
  float max, min;
};

template <class T, bool kKeep = false> RowExtent softmax_row_extent(const T* x, int64_t n, float* keep = nullptr) {
  auto max_of = [](f32v a, f32v b) { return max_lanes(a, b); };  // the running max b where a is NaN
  auto min_of = [](f32v a, f32v b) { return min_lanes(a, b); };
  constexpr int64_t V = kVecLanes;
  f32v m0 = f32v{} - INFINITY, m1 = m0, l0 = f32v{} + INFINITY, l1 = l0;
  int64_t i = 0;
  for (; i + 2 * V <= n; i += 2 * V) {
    f32v v0, v1;
    if constexpr (kKeep && kKeepEvenOdd<T>) {
      auto eo = load_bf16_even_odd(x + i);  // auto: dependent, so clang skips it where kKeepEvenOdd is false
      v0 = eo.even;
      v1 = eo.odd;
    } else {
      v0 = load_f32v(x + i);
      v1 = load_f32v(x + i + V);
    }
    if constexpr (kKeep) {
      store_f32v(keep + i, v0, false);
      store_f32v(keep + i + V, v1, false);
    }
    m0 = max_of(v0, m0);
    m1 = max_of(v1, m1);
    l0 = min_of(v0, l0);
    l1 = min_of(v1, l1);
  }
  for (; i < n; i += V) {
    int64_t k = std::min<int64_t>(V, n - i);
    f32v v = load_f32v_tail(x + i, k, to_f32(x[i]));  // padded with an element: neither extreme moves
    if constexpr (kKeep) store_f32v_tail(keep + i, v, k);
    m0 = max_of(v, m0);
    l0 = min_of(v, l0);
  }
  return {fold_lanes(max_of(m0, m1), max_of), fold_lanes(min_of(l0, l1), min_of)};
}

// t[i] = e^(x[i] - max) for the row of extent `ext`, returning their sum: the in-range e^
// where every x - max is at least kNormalSpread (false for -inf, NaN and masked rows) and,
// for the halves, |max| is at most kHalfFmaMax.
template <class E, class T, class N>
inline float exp_row(const T* x, float* t, int64_t n, RowExtent ext, const N* next) {
  bool in_range = ext.min - ext.max >= kNormalSpread && (std::is_same_v<E, float> || std::fabs(ext.max) <= kHalfFmaMax);
  if (in_range) return exp_shifted_row<E, true>(x, t, n, ext.max, next);
  return exp_shifted_row<E, false>(x, t, n, ext.max, next);
}

template <class T> void softmax_rows(const T* x, T* y, int64_t b, int64_t e, int64_t n, bool stream) {
  float* t = thread_row(n);
  for (int64_t r = b; r < e; ++r) {
    const T* xr = x + r * n;
    const T* next = r + 1 < e ? xr + n : nullptr;
    float sum;
    if constexpr (std::is_same_v<T, float>) {
      sum = exp_row<T>(xr, t, n, softmax_row_extent(xr, n), next);
    } else {  // halves: converted once, in the max pass, into t; e^ over t in place
      RowExtent ext = softmax_row_extent<T, true>(xr, n, t);
      sum = exp_row<T>(static_cast<const float*>(t), t, n, ext, next);
    }
    float inv = 1.0f / sum;
    auto scale = [inv](f32v v) { return v * inv; };
    int64_t i = 0;
    // Each e^ is in [0, 1] and their sum in [1, n] unless the row holds a NaN, which makes
    // the sum NaN: a finite sum leaves no NaN to look for.
    if constexpr (kKeepEvenOdd<T>) {
      auto store_rows = [&]<bool kNoNaN>() {
        for (; i + 2 * kVecLanes <= n; i += 2 * kVecLanes)
          store_bf16_even_odd<kNoNaN>(y + r * n + i, {scale(load_f32v(t + i)), scale(load_f32v(t + i + kVecLanes))},
                                      stream);
      };
      if (std::isnan(sum)) store_rows.template operator()<false>();
      else store_rows.template operator()<true>();
    }
    map_row(y + r * n + i, n - i, stream, scale, t + i);
  }
  end_stream(stream);
}

}  // namespace

void softmax_rows_inplace(float* x, int64_t rows, int64_t n, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) {
    float* xr = x + r * ld;  // e^(x - max) written over x: each lane is loaded before it is stored
    float inv = 1.0f / exp_row<float>(xr, xr, n, softmax_row_extent(xr, n), r + 1 < rows ? xr + ld : nullptr);
    map_row(xr, n, false, [inv](f32v v) { return v * inv; }, xr);
  }
}

namespace {

// Softmax over the middle axis of (K0, R, K1), for c <= kColBlock columns at x, y.
template <class T> void softmax_cols(const T* x, T* y, int64_t R, int64_t K1, int64_t c) {
  float m[kColBlock], s[kColBlock] = {};
  for (int64_t j = 0; j < c; ++j) m[j] = to_f32(x[j]);
  for (int64_t r = 1; r < R; ++r)
    for (int64_t j = 0; j < c; ++j) {
      float v = to_f32(x[r * K1 + j]);
      m[j] = better<true>(v, m[j]) ? v : m[j];
    }
  for (int64_t r = 0; r < R; ++r)
    for (int64_t j = 0; j < c; ++j) s[j] += ofs_exp(to_f32(x[r * K1 + j]) - m[j]);
  for (int64_t j = 0; j < c; ++j) s[j] = 1.0f / s[j];
  for (int64_t r = 0; r < R; ++r)
    for (int64_t j = 0; j < c; ++j) y[r * K1 + j] = from_f32<T>(ofs_exp(to_f32(x[r * K1 + j]) - m[j]) * s[j]);
}

// ---- rms_norm: one pass for the sum of squares, one to write (the row stays in L1/L2) ----
template <class T, bool kWeight>
void rms_norm_rows(const T* x, const T* w, T* y, int64_t b, int64_t e, int64_t n, float eps, bool stream) {
  for (int64_t r = b; r < e; ++r) {
    const T* xr = x + r * n;
    float inv = 1.0f / std::sqrt(row_sumsq(xr, n) / float(n) + eps);
    if constexpr (kWeight) map_row(y + r * n, n, stream, [inv](f32v v, f32v g) { return v * inv * g; }, xr, w);
    else map_row(y + r * n, n, stream, [inv](f32v v) { return v * inv; }, xr);
  }
  end_stream(stream);
}

// ---- layer_norm: mean, then the biased variance around it, then write ----
template <class T, bool kWeight, bool kBias>
void layer_norm_rows(const T* x, const T* w, const T* bias, T* y, int64_t b, int64_t e, int64_t n, float eps,
                     bool stream) {
  for (int64_t r = b; r < e; ++r) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    float mu = row_sum<float>(xr, n) / float(n);
    float inv = 1.0f / std::sqrt(row_sqdev(xr, n, mu) / float(n) + eps);
    auto norm = [mu, inv](f32v v) { return (v - mu) * inv; };
    if constexpr (kWeight && kBias)
      map_row(yr, n, stream, [norm](f32v v, f32v g, f32v c) { return norm(v) * g + c; }, xr, w, bias);
    else if constexpr (kWeight) map_row(yr, n, stream, [norm](f32v v, f32v g) { return norm(v) * g; }, xr, w);
    else if constexpr (kBias) map_row(yr, n, stream, [norm](f32v v, f32v c) { return norm(v) + c; }, xr, bias);
    else map_row(yr, n, stream, norm, xr);
  }
  end_stream(stream);
}

// Rows of the contiguous x: (rows, last dim).
void rows_of(const Tensor& x, int64_t& rows, int64_t& n) {
  n = x.ndim() ? x.shape().back() : 1;
  rows = n ? x.numel() / n : 0;
}

}  // namespace

LaunchSpec softmax_spec(const Tensor& out, const Tensor& x, int axis) {
  int64_t K0 = 1, R = x.ndim() ? x.shape()[axis] : 1, K1 = 1;
  for (int d = 0; d < axis; ++d) K0 *= x.shape()[d];
  for (int d = axis + 1; d < x.ndim(); ++d) K1 *= x.shape()[d];
  LaunchSpec spec;
  spec.bytes = x.nbytes() + out.nbytes();
  spec.flops = x.numel() * 20;  // max, exp (about 15), sum, scale
  OPSCOPE_DISPATCH_FLOAT(x.dtype(), T, [&] {
    const T* xp = x.data<T>();
    T* yp = out.data<T>();
    if (K1 == 1) {
      spec.name = fmt::format("softmax_{}", dtype_name(x.dtype()));
      spec.work = K0;
      spec.grain = row_grain(R);
      bool stream = out.nbytes() >= kStreamBytes;
      spec.body = [=](int64_t b, int64_t e) { softmax_rows(xp, yp, b, e, R, stream); };
    } else {
      spec.name = fmt::format("softmax_cols_{}", dtype_name(x.dtype()));
      int64_t blocks = (K1 + kColBlock - 1) / kColBlock;
      spec.work = K0 * blocks;
      spec.grain = row_grain(R * std::min(K1, kColBlock));
      spec.body = [=](int64_t b, int64_t e) {
        for (int64_t u = b; u < e; ++u) {
          int64_t k0 = u / blocks, j0 = (u % blocks) * kColBlock, off = k0 * R * K1 + j0;
          softmax_cols(xp + off, yp + off, R, K1, std::min(kColBlock, K1 - j0));
        }
      };
    }
  });
  return spec;
}

LaunchSpec rms_norm_spec(const Tensor& out, const Tensor& x, const Tensor* weight, float eps) {
  int64_t rows, n;
  rows_of(x, rows, n);
  LaunchSpec spec;
  spec.name = fmt::format("rms_norm_{}", dtype_name(x.dtype()));
  spec.work = rows;
  spec.grain = row_grain(n);
  spec.bytes = x.nbytes() + out.nbytes() + (weight ? weight->nbytes() : 0);
  spec.flops = x.numel() * 4;
  OPSCOPE_DISPATCH_FLOAT(x.dtype(), T, [&] {
    const T* xp = x.data<T>();
    const T* wp = weight ? weight->data<T>() : nullptr;
    T* yp = out.data<T>();
    bool stream = out.nbytes() >= kStreamBytes;
    if (wp)
      spec.body = [=](int64_t b, int64_t e) { rms_norm_rows<T, true>(xp, wp, yp, b, e, n, eps, stream); };
    else
      spec.body = [=](int64_t b, int64_t e) { rms_norm_rows<T, false>(xp, wp, yp, b, e, n, eps, stream); };
  });
  return spec;
}

LaunchSpec layer_norm_spec(const Tensor& out, const Tensor& x, const Tensor* weight, const Tensor* bias, float eps) {
  int64_t rows, n;
  rows_of(x, rows, n);
  LaunchSpec spec;
  spec.name = fmt::format("layer_norm_{}", dtype_name(x.dtype()));
  spec.work = rows;
  spec.grain = row_grain(n);
  spec.bytes = x.nbytes() + out.nbytes() + (weight ? weight->nbytes() : 0) + (bias ? bias->nbytes() : 0);
  spec.flops = x.numel() * 8;
  OPSCOPE_DISPATCH_FLOAT(x.dtype(), T, [&] {
    const T* xp = x.data<T>();
    const T* wp = weight ? weight->data<T>() : nullptr;
    const T* bp = bias ? bias->data<T>() : nullptr;
    T* yp = out.data<T>();
    bool stream = out.nbytes() >= kStreamBytes;
    auto pick = [&]<bool kW, bool kB>() {
      spec.body = [=](int64_t b, int64_t e) { layer_norm_rows<T, kW, kB>(xp, wp, bp, yp, b, e, n, eps, stream); };
    };
    if (wp && bp) pick.template operator()<true, true>();
    else if (wp) pick.template operator()<true, false>();
    else if (bp) pick.template operator()<false, true>();
    else pick.template operator()<false, false>();
  });
  return spec;
}

}  // namespace opscope::cpu_kernels
