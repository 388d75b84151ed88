#include "opscope/kernels/cpu/reduce.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <vector>

#include "opscope/kernels/cpu/half_rows.h"
#include "opscope/kernels/cpu/strided.h"
#include "opscope/runtime/device.h"

namespace opscope::cpu_kernels {

std::string_view reduce_name(ReduceKind k) {
  switch (k) {
    case ReduceKind::sum: return "sum";
    case ReduceKind::mean: return "mean";
    case ReduceKind::max: return "max";
    case ReduceKind::min: return "min";
    case ReduceKind::var: return "var";
    case ReduceKind::argmax: return "argmax";
  }
  return "?";
}

namespace {

using K = ReduceKind;
constexpr int64_t kColBlock = 256;            // columns per unit of a column reduction (1 KiB of f32 sums)
constexpr int64_t kSplitChunk = int64_t(1) << 15;  // elements per chunk when a few long rows are split
constexpr int64_t kMinElemsPerCore = int64_t(1) << 14;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Output element type: argmax writes i64, integer sums widen to i64 (as torch), else T.
template <K kind, class T>
using out_t = std::conditional_t<kind == K::argmax || (kind == K::sum && std::is_integral_v<T>), int64_t, T>;

template <class Out, class A> inline Out store(A v) {
  if constexpr (std::is_integral_v<Out>) return Out(v);
  else return from_f32<Out>(float(v));  // bf16/f16 rounded once, here
}

inline double var_of(double m2, int64_t n, int64_t correction) {
  return n - correction <= 0 ? kNaN : m2 / double(n - correction);
}

// Index of the first largest value (first NaN, if any) of x[0..n).
template <class T> inline int64_t row_argmax(const T* x, int64_t n) {
  using Acc = acc_t<T>;
  Acc m = row_extreme<true, Acc>(x, n);
  if (m != m) {
    for (int64_t i = 0; i < n; ++i)
      if (load_as<Acc>(x[i]) != load_as<Acc>(x[i])) return i;
  }
  int64_t i = 0;
  if constexpr (kFloatRow<T>) {  // a vector at a time: the search is as long as the max's pass
    for (; i + kVecLanes <= n; i += kVecLanes) {
      auto hit = load_f32v(x + i) == m;
      int any = 0;
      for (int j = 0; j < kVecLanes; ++j) any |= hit[j];
      if (any)
        for (int j = 0; j < kVecLanes; ++j)
          if (hit[j]) return i + j;
    }
  }
  for (; i < n; ++i)
    if (load_as<Acc>(x[i]) == m) return i;
  return 0;
}

// ---- rows: the reduced extent is n unit-stride elements ----
template <K kind, class T> inline out_t<kind, T> reduce_row(const T* p, int64_t n, int64_t correction) {
  using Out = out_t<kind, T>;
  using Acc = acc_t<T>;
  if constexpr (kind == K::sum) {
    return store<Out>(row_sum<Acc>(p, n));
  } else if constexpr (kind == K::mean) {
    return store<Out>(row_sum<float>(p, n) / float(n));
  } else if constexpr (kind == K::max || kind == K::min) {
    return store<Out>(row_extreme<kind == K::max, Acc>(p, n));
  } else if constexpr (kind == K::var) {
    if (n - correction <= 0) return store<Out>(kNaN);
    float mu = row_sum<float>(p, n) / float(n);
    return store<Out>(row_sqdev(p, n, mu) / float(n - correction));
  } else {
    return row_argmax(p, n);
  }
}

// One chunk's share of a split row, combined in chunk order (so the result does not
// depend on the core count).
template <class T> struct Partial {
  acc_t<T> v{};   // sum, or extreme value
  double mean = 0, m2 = 0;
  int64_t n = 0, idx = 0;
};

template <K kind, class T> Partial<T> reduce_chunk(const T* p, int64_t n, int64_t start) {
  using Acc = acc_t<T>;
  Partial<T> r;
  r.n = n;
  if constexpr (kind == K::sum || kind == K::mean) {
    r.v = row_sum<Acc>(p, n);
  } else if constexpr (kind == K::max || kind == K::min) {
    r.v = row_extreme<kind == K::max, Acc>(p, n);
  } else if constexpr (kind == K::var) {
    float mu = row_sum<float>(p, n) / float(n);
    r.mean = mu;
    r.m2 = row_sqdev(p, n, mu);
  } else {
    r.idx = start + row_argmax(p, n);
    r.v = load_as<Acc>(p[r.idx - start]);
  }
  return r;
}

template <K kind, class T> out_t<kind, T> combine(const Partial<T>* ps, int64_t count, int64_t correction) {
  using Out = out_t<kind, T>;
  if constexpr (kind == K::sum || kind == K::mean) {
    std::conditional_t<std::is_integral_v<T>, int64_t, double> s = 0;
    int64_t n = 0;
    for (int64_t i = 0; i < count; ++i) s += ps[i].v, n += ps[i].n;
    if constexpr (kind == K::mean) return store<Out>(double(s) / double(n));
    else return store<Out>(s);
  } else if constexpr (kind == K::max || kind == K::min) {
    acc_t<T> m = ps[0].v;
    for (int64_t i = 1; i < count; ++i) m = better<kind == K::max>(ps[i].v, m) ? ps[i].v : m;
    return store<Out>(m);
  } else if constexpr (kind == K::var) {  // Chan et al.'s pairwise update
    double mean = 0, m2 = 0;
    int64_t n = 0;
    for (int64_t i = 0; i < count; ++i) {
      int64_t nb = ps[i].n, nt = n + nb;
      double d = ps[i].mean - mean;
      mean += d * double(nb) / double(nt);
      m2 += ps[i].m2 + d * d * double(n) * double(nb) / double(nt);
      n = nt;
    }
    return store<Out>(var_of(m2, n, correction));
  } else {
    Partial<T> best = ps[0];
    for (int64_t i = 1; i < count; ++i)  // strictly better: the first index wins ties
      if (best.v == best.v && better<true>(ps[i].v, best.v)) best = ps[i];
    return best.idx;
  }
}

// The c <= kColBlock elements of a row at q, as the loops below read them: f16 rows are
// converted into a buffer first (half_rows.h; GCC vectorizes those loops 4 wide otherwise).
template <class T> struct ColRow {
  float buf[std::is_same_v<T, f16_t> ? kColBlock : 1];
  [[gnu::always_inline]] auto operator()(const T* q, int64_t c) {
    if constexpr (std::is_same_v<T, f16_t>) {
      f16_row_to_f32(q, buf, c);
      return static_cast<const float*>(buf);
    } else {
      return q;
    }
  }
};

// ---- columns: out[k0, j] over p[k0*ks0 + r*rs + j], j unit-stride ----
template <K kind, class T>
void reduce_cols(const T* p, int64_t rs, int64_t R, int64_t c, out_t<kind, T>* o, int64_t correction) {
  using Out = out_t<kind, T>;
  using Acc = acc_t<T>;
  ColRow<T> row;
  if constexpr (kind == K::sum || kind == K::mean || kind == K::var) {
    Acc acc[kColBlock] = {};
    for (int64_t r = 0; r < R; ++r) {
      auto q = row(p + r * rs, c);
      for (int64_t j = 0; j < c; ++j) acc[j] += load_as<Acc>(q[j]);
    }
    if constexpr (kind == K::sum) {
      for (int64_t j = 0; j < c; ++j) o[j] = store<Out>(acc[j]);
    } else if constexpr (kind == K::mean) {
      for (int64_t j = 0; j < c; ++j) o[j] = store<Out>(float(acc[j]) / float(R));
    } else {
      if (R - correction <= 0) {
        for (int64_t j = 0; j < c; ++j) o[j] = store<Out>(kNaN);
        return;
      }
      float mu[kColBlock], m2[kColBlock] = {};
      for (int64_t j = 0; j < c; ++j) mu[j] = float(acc[j]) / float(R);
      for (int64_t r = 0; r < R; ++r) {
        auto q = row(p + r * rs, c);
        for (int64_t j = 0; j < c; ++j) {
          float d = load_as<float>(q[j]) - mu[j];
          m2[j] += d * d;
        }
      }
      for (int64_t j = 0; j < c; ++j) o[j] = store<Out>(m2[j] / float(R - correction));
    }
  } else if constexpr (kind == K::max || kind == K::min) {
    Acc m[kColBlock];
    for (int64_t j = 0; j < c; ++j) m[j] = load_as<Acc>(p[j]);
    for (int64_t r = 1; r < R; ++r) {
      auto q = row(p + r * rs, c);
      for (int64_t j = 0; j < c; ++j) {
        Acc v = load_as<Acc>(q[j]);
        m[j] = better<kind == K::max>(v, m[j]) ? v : m[j];
      }
    }
    for (int64_t j = 0; j < c; ++j) o[j] = store<Out>(m[j]);
  } else {
    Acc m[kColBlock];
    int64_t idx[kColBlock] = {};
    for (int64_t j = 0; j < c; ++j) m[j] = load_as<Acc>(p[j]);
    for (int64_t r = 1; r < R; ++r) {
      auto q = row(p + r * rs, c);
      for (int64_t j = 0; j < c; ++j) {
        Acc v = load_as<Acc>(q[j]);
        bool take = m[j] == m[j] && better<true>(v, m[j]);  // keep the first NaN / first max
        m[j] = take ? v : m[j];
        idx[j] = take ? r : idx[j];
      }
    }
    for (int64_t j = 0; j < c; ++j) o[j] = idx[j];
  }
}

// ---- strided: any layout; f64 (i64) accumulation over runs of the reduced dims ----
template <K kind, class T>
out_t<kind, T> reduce_strided(const T* x, const Shape& rs, const Strides& rst, int64_t Rn, int64_t correction) {
  using Out = out_t<kind, T>;
  using Acc = acc_t<T>;
  using Wide = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
  std::array<Strides, 1> st{rst};
  if constexpr (kind == K::sum || kind == K::mean || kind == K::var) {
    Wide s = 0;
    for_each_run<1>(rs, st, 0, Rn, [&](auto off, auto inner, int64_t count) {
      const T* p = x + off[0];
      if (inner[0] == 1) {
        s += row_sum<Acc>(p, count);
      } else {
        Acc a = 0;
        for (int64_t i = 0; i < count; ++i) a += load_as<Acc>(p[i * inner[0]]);
        s += a;
      }
    });
    if constexpr (kind == K::sum) return store<Out>(s);
    if constexpr (kind == K::mean) return store<Out>(double(s) / double(Rn));
    if (Rn - correction <= 0) return store<Out>(kNaN);
    double mu = double(s) / double(Rn), m2 = 0;
    for_each_run<1>(rs, st, 0, Rn, [&](auto off, auto inner, int64_t count) {
      const T* p = x + off[0];
      for (int64_t i = 0; i < count; ++i) {
        double d = double(load_as<float>(p[i * inner[0]])) - mu;
        m2 += d * d;
      }
    });
    return store<Out>(var_of(m2, Rn, correction));
  } else if constexpr (kind == K::max || kind == K::min) {
    Acc m = load_as<Acc>(x[0]);
    for_each_run<1>(rs, st, 0, Rn, [&](auto off, auto inner, int64_t count) {
      const T* p = x + off[0];
      for (int64_t i = 0; i < count; ++i) {
        Acc v = load_as<Acc>(p[i * inner[0]]);
        m = better<kind == K::max>(v, m) ? v : m;
      }
    });
    return store<Out>(m);
  } else {  // argmax: one reduced dim
    int64_t n = rs.size() ? rs[0] : 1, s = rs.size() ? rst[0] : 1;
    Acc m = load_as<Acc>(x[0]);
    int64_t best = 0;
    for (int64_t i = 1; i < n; ++i) {
      Acc v = load_as<Acc>(x[i * s]);
      if (m == m && better<true>(v, m)) m = v, best = i;
    }
    return best;
  }
}

// Drops size-1 dims and merges neighbours whose strides chain (the index arithmetic is
// the same), so that e.g. a contiguous (4, 8, 16) reduced over (1, 2) is one row of 128.
void coalesce(Shape& s, Strides& st) {
  Shape ns;
  Strides nst;
  for (int i = 0; i < s.size(); ++i) {
    if (s[i] == 1) continue;
    int b = ns.size() - 1;
    if (b >= 0 && nst[b] == st[i] * s[i]) {
      ns[b] *= s[i];
      nst[b] = st[i];
    } else {
      ns.push_back(s[i]);
      nst.push_back(st[i]);
    }
  }
  s = ns;
  st = nst;
}

int64_t offset_of(int64_t idx, const Shape& s, const Strides& st) {
  int64_t off = 0;
  for (int d = s.size() - 1; d >= 0; --d) {
    off += (idx % s[d]) * st[d];
    idx /= s[d];
  }
  return off;
}

template <class F> auto dispatch_kind(ReduceKind k, F&& f) {
  switch (k) {
    case K::sum: return f.template operator()<K::sum>();
    case K::mean: return f.template operator()<K::mean>();
    case K::max: return f.template operator()<K::max>();
    case K::min: return f.template operator()<K::min>();
    case K::var: return f.template operator()<K::var>();
    case K::argmax: return f.template operator()<K::argmax>();
  }
  return f.template operator()<K::sum>();
}

template <K kind, class T>
KernelBody make_body(const Tensor& out, const Tensor& x, Shape ks, Strides kst, Shape rs, Strides rst,
                     int64_t correction, int ncores, std::string& path, int64_t& work, int64_t& grain) {
  using Out = out_t<kind, T>;
  const T* xp = x.data<T>();
  Out* op = out.data<Out>();
  int64_t Kn = ks.numel(), Rn = rs.numel();
  std::array<Strides, 1> kst1{kst};

  bool rows = rs.size() == 0 || (rs.size() == 1 && rst[0] == 1);
  if (rows && Kn < 2 * ncores && Rn >= 2 * kSplitChunk) {
    // A few long rows: split each into chunks so that every core helps; the core that
    // finishes a row's last chunk combines its partials.
    path = "rows_split";
    int64_t chunks = (Rn + kSplitChunk - 1) / kSplitChunk;
    work = Kn * chunks;
    grain = 1;
    struct State {
      std::vector<Partial<T>> parts;
      std::unique_ptr<std::atomic<int64_t>[]> left;
    };
    auto state = std::make_shared<State>();
    state->parts.resize(size_t(work));
    state->left.reset(new std::atomic<int64_t>[size_t(Kn)]);
    for (int64_t r = 0; r < Kn; ++r) state->left[r].store(chunks);
    return [=](int64_t b, int64_t e) {
      for (int64_t u = b; u < e; ++u) {
        int64_t row = u / chunks, c = u % chunks, lo = c * kSplitChunk, n = std::min(kSplitChunk, Rn - lo);
        const T* p = xp + offset_of(row, ks, kst) + lo;
        state->parts[u] = reduce_chunk<kind>(p, n, lo);
        if (state->left[row].fetch_sub(1, std::memory_order_acq_rel) == 1)
          op[row] = combine<kind, T>(&state->parts[row * chunks], chunks, correction);
      }
    };
  }
  if (rows) {
    path = "rows";
    work = Kn;
    grain = std::max<int64_t>(1, kMinElemsPerCore / std::max<int64_t>(Rn, 1));
    return [=](int64_t b, int64_t e) {
      Out* o = op + b;
      for_each_run<1>(ks, kst1, b, e, [&](auto off, auto inner, int64_t count) {
        for (int64_t i = 0; i < count; ++i) *o++ = reduce_row<kind>(xp + off[0] + i * inner[0], Rn, correction);
      });
    };
  }
  int kd = ks.size();
  if (rs.size() == 1 && (kd == 1 || kd == 2) && kst[kd - 1] == 1) {
    path = "cols";
    int64_t K1 = ks[kd - 1], K0 = kd == 2 ? ks[0] : 1, ks0 = kd == 2 ? kst[0] : 0;
    int64_t R = rs[0], rstride = rst[0], blocks = (K1 + kColBlock - 1) / kColBlock;
    work = K0 * blocks;
    grain = std::max<int64_t>(1, kMinElemsPerCore / std::max<int64_t>(R * std::min(K1, kColBlock), 1));
    return [=](int64_t b, int64_t e) {
      for (int64_t u = b; u < e; ++u) {
        int64_t k0 = u / blocks, j0 = (u % blocks) * kColBlock, c = std::min(kColBlock, K1 - j0);
        reduce_cols<kind>(xp + k0 * ks0 + j0, rstride, R, c, op + k0 * K1 + j0, correction);
      }
    };
  }
  path = "strided";
  work = Kn;
  grain = std::max<int64_t>(1, kMinElemsPerCore / std::max<int64_t>(Rn, 1));
  return [=](int64_t b, int64_t e) {
    Out* o = op + b;
    for_each_run<1>(ks, kst1, b, e, [&](auto off, auto inner, int64_t count) {
      for (int64_t i = 0; i < count; ++i)
        *o++ = reduce_strided<kind>(xp + off[0] + i * inner[0], rs, rst, Rn, correction);
    });
  };
}

}  // namespace

LaunchSpec reduce_spec(ReduceKind kind, const Tensor& out, const Tensor& x, std::span<const int> axes,
                       int64_t correction) {
  std::array<bool, kMaxDims> reduced{};
  for (int a : axes) reduced[a] = true;
  Shape ks, rs;
  Strides kst, rst;
  for (int d = 0; d < x.ndim(); ++d) {
    (reduced[d] ? rs : ks).push_back(x.shape()[d]);
    (reduced[d] ? rst : kst).push_back(x.strides()[d]);
  }
  int64_t Rn = rs.numel();
  // The order of the reduced dims does not change the result (argmax has one), so sort
  // them by stride: a transposed contiguous tensor then reduces as rows or columns.
  std::vector<int> order(size_t(rs.size()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return rst[a] > rst[b]; });
  Shape rs2;
  Strides rst2;
  for (int i : order) rs2.push_back(rs[i]), rst2.push_back(rst[i]);
  rs = rs2;
  rst = rst2;
  coalesce(ks, kst);
  coalesce(rs, rst);
  if (Rn == 0) rs = Shape{0}, rst = Strides{1};  // an empty row: sum 0, mean/var NaN

  LaunchSpec spec;
  std::string path;
  int ncores = x.device().num_cores();
  spec.body = OPSCOPE_DISPATCH_ALL(x.dtype(), T, [&] {
    return dispatch_kind(kind, [&]<ReduceKind kd>() {
      return make_body<kd, T>(out, x, ks, kst, rs, rst, correction, ncores, path, spec.work, spec.grain);
    });
  });
  spec.name = fmt::format("{}_{}_{}", reduce_name(kind), path, dtype_name(x.dtype()));
  spec.bytes = x.nbytes() + out.nbytes();
  spec.flops = x.numel() * (kind == K::var ? 4 : 1);
  return spec;
}

}  // namespace opscope::cpu_kernels
