#include "opscope/kernels/cpu/sort.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "opscope/kernels/cpu/elementwise.h"

namespace opscope::cpu_kernels {

namespace {

constexpr int64_t kMinElemsPerCore = int64_t(1) << 14;

// What rows are compared as: f32 for floating storage, the integer (or bool) itself.
template <class T> using key_t = std::conditional_t<std::is_integral_v<T>, T, float>;
template <class T> [[gnu::always_inline]] inline key_t<T> key(T v) {
  if constexpr (std::is_integral_v<T>) return v;
  else return to_f32(v);
}
template <class K> [[gnu::always_inline]] inline bool is_nan(K v) {
  if constexpr (std::is_floating_point_v<K>) return v != v;
  else return false;
}

template <class K> struct Entry {
  K v;
  int64_t i;
};

// a before b: NaN counts as larger than any number; `desc` orders largest first.
template <class K> [[gnu::always_inline]] inline bool before(const Entry<K>& a, const Entry<K>& b, bool desc) {
  bool an = is_nan(a.v), bn = is_nan(b.v);
  if (desc) return (an && !bn) || (!an && !bn && a.v > b.v);
  return (!an && bn) || (!an && !bn && a.v < b.v);
}

LaunchSpec row_spec(const char* kind, const Tensor& x, const RowGeometry& g) {
  LaunchSpec spec;
  spec.name = fmt::format("{}_{}", kind, dtype_name(x.dtype()));
  spec.work = g.outer * g.inner;
  spec.grain = std::max<int64_t>(1, kMinElemsPerCore / std::max<int64_t>(g.n, 1));
  return spec;
}

// The row of work unit u: its first element and the element stride.
struct Row {
  int64_t base, stride;
};
Row row_of(int64_t u, const RowGeometry& g, int64_t len) {
  int64_t o = u / g.inner, i = u % g.inner;
  return {o * len * g.inner + i, g.inner};
}

// Running sums of each row: floating ones in double (torch's CPU cumsum), integers in
// i64 with wraparound.
template <class T, class O>
KernelBody cumsum_body(const Tensor& out, const Tensor& x, const RowGeometry& g) {
  const T* xp = x.data<T>();
  O* op = out.data<O>();
  return [=](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u) {
      Row r = row_of(u, g, g.n);
      if constexpr (std::is_integral_v<T>) {
        uint64_t s = 0;
        for (int64_t j = 0; j < g.n; ++j) {
          s += uint64_t(int64_t(xp[r.base + j * r.stride]));
          op[r.base + j * r.stride] = O(int64_t(s));
        }
      } else {
        double s = 0;
        for (int64_t j = 0; j < g.n; ++j) {
          s += double(to_f32(xp[r.base + j * r.stride]));
          op[r.base + j * r.stride] = from_f32<O>(float(s));
        }
      }
    }
  };
}

}  // namespace

LaunchSpec sort_spec(const Tensor& values, const Tensor& indices, const Tensor& x, const RowGeometry& g,
                     bool descending) {
  LaunchSpec spec = row_spec("sort", x, g);
  spec.bytes = x.nbytes() + values.nbytes() + indices.nbytes();
  int64_t* ip = indices.data<int64_t>();
  OPSCOPE_DISPATCH_ALL_AND_BOOL(x.dtype(), T, [&] {
    const T* xp = x.data<T>();
    T* vp = values.data<T>();
    spec.body = [=](int64_t b, int64_t e) {
      std::vector<Entry<key_t<T>>> buf(size_t(g.n));
      for (int64_t u = b; u < e; ++u) {
        Row r = row_of(u, g, g.n);
        for (int64_t j = 0; j < g.n; ++j) buf[size_t(j)] = {key(xp[r.base + j * r.stride]), j};
        std::stable_sort(buf.begin(), buf.end(), [descending](const auto& p, const auto& q) {
          return before(p, q, descending);
        });
        for (int64_t j = 0; j < g.n; ++j) {
          int64_t src = buf[size_t(j)].i;
          vp[r.base + j * r.stride] = xp[r.base + src * r.stride];
          ip[r.base + j * r.stride] = src;
        }
      }
    };
  });
  return spec;
}

LaunchSpec topk_spec(const Tensor& values, const Tensor& indices, const Tensor& x, const RowGeometry& g, int64_t k,
                     bool largest) {
  LaunchSpec spec = row_spec("topk", x, g);
  spec.bytes = x.nbytes() + values.nbytes() + indices.nbytes();
  int64_t* ip = indices.data<int64_t>();
  OPSCOPE_DISPATCH_ALL_AND_BOOL(x.dtype(), T, [&] {
    const T* xp = x.data<T>();
    T* vp = values.data<T>();
    spec.body = [=](int64_t b, int64_t e) {
      std::vector<Entry<key_t<T>>> buf(size_t(g.n));
      for (int64_t u = b; u < e; ++u) {
        Row in = row_of(u, g, g.n), out = row_of(u, g, k);
        for (int64_t j = 0; j < g.n; ++j) buf[size_t(j)] = {key(xp[in.base + j * in.stride]), j};
        std::partial_sort(buf.begin(), buf.begin() + k, buf.end(), [largest](const auto& p, const auto& q) {
          if (before(p, q, largest)) return true;
          if (before(q, p, largest)) return false;
          return p.i < q.i;  // ties: the lower index first
        });
        for (int64_t j = 0; j < k; ++j) {
          int64_t src = buf[size_t(j)].i;
          vp[out.base + j * out.stride] = xp[in.base + src * in.stride];
          ip[out.base + j * out.stride] = src;
        }
      }
    };
  });
  return spec;
}

LaunchSpec max_dim_spec(const Tensor& values, const Tensor& indices, const Tensor& x, const RowGeometry& g, bool max) {
  LaunchSpec spec = row_spec(max ? "max_dim" : "min_dim", x, g);
  spec.bytes = x.nbytes() + values.nbytes() + indices.nbytes();
  spec.flops = x.numel();
  int64_t* ip = indices.data<int64_t>();
  OPSCOPE_DISPATCH_ALL_AND_BOOL(x.dtype(), T, [&] {
    const T* xp = x.data<T>();
    T* vp = values.data<T>();
    spec.body = [=](int64_t b, int64_t e) {
      for (int64_t u = b; u < e; ++u) {
        Row r = row_of(u, g, g.n);
        auto best = key(xp[r.base]);
        int64_t at = 0;
        for (int64_t j = 0; j < g.n; ++j) {  // torch's loop: replace unless the kept value wins
          auto v = key(xp[r.base + j * r.stride]);
          if (max ? !(v <= best) : !(v >= best)) {
            best = v, at = j;
            if (is_nan(v)) break;
          }
        }
        vp[u] = xp[r.base + at * r.stride];
        ip[u] = at;
      }
    };
  });
  return spec;
}

LaunchSpec cumsum_spec(const Tensor& out, const Tensor& x, const RowGeometry& g) {
  LaunchSpec spec = row_spec("cumsum", x, g);
  spec.bytes = x.nbytes() + out.nbytes();
  spec.flops = x.numel();
  OPSCOPE_DISPATCH_ALL_AND_BOOL(x.dtype(), T, [&] {
    if constexpr (std::is_integral_v<T>) {
      spec.body = cumsum_body<T, int64_t>(out, x, g);  // integer and bool sums are i64 (the op's dtype)
    } else {
      OPSCOPE_DISPATCH_FLOAT(out.dtype(), O, [&] { spec.body = cumsum_body<T, O>(out, x, g); });
    }
  });
  return spec;
}

namespace {

// torch's search: a comparison false for NaN moves right, so NaN goes to the end.
template <class T> int64_t bucket(const T* b, int64_t n, T v, bool right) {
  auto x = load(v);
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    auto m = load(b[mid]);
    if (right ? !(m > x) : !(m >= x)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

}  // namespace

LaunchSpec bucketize_spec(const Tensor& out, const Tensor& x, const Tensor& boundaries, bool right) {
  const int64_t n = x.numel(), nb = boundaries.numel();
  LaunchSpec spec;
  spec.name = fmt::format("bucketize_{}", dtype_name(x.dtype()));
  spec.work = (n + kElemBlock - 1) / kElemBlock;
  spec.grain = kElemGrainBlocks;
  spec.bytes = x.nbytes() + out.nbytes() + boundaries.nbytes();
  const bool i32 = out.dtype() == DType::i32;
  void* op = out.data_ptr();
  OPSCOPE_DISPATCH_ALL(x.dtype(), T, [&] {
    const T* xp = x.data<T>();
    const T* bp = boundaries.data<T>();
    spec.body = [=](int64_t b, int64_t e) {
      for (int64_t i = b * kElemBlock, end = std::min(n, e * kElemBlock); i < end; ++i) {
        int64_t k = bucket(bp, nb, xp[i], right);
        if (i32) static_cast<int32_t*>(op)[i] = int32_t(k);
        else static_cast<int64_t*>(op)[i] = k;
      }
    };
  });
  return spec;
}

}  // namespace opscope::cpu_kernels
