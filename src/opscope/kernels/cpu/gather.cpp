#include "opscope/kernels/cpu/gather.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "opscope/core/error.h"
#include "opscope/kernels/cpu/elementwise.h"
#include "opscope/kernels/cpu/strided.h"

namespace opscope::cpu_kernels {

namespace {

constexpr int64_t kMinBytesPerCore = int64_t(1) << 16;

// idx in [-size, size) as a position in [0, size); else the kernel fails naming `op`.
[[gnu::always_inline]] inline int64_t checked(int64_t idx, int64_t size, int64_t dim, const char* op) {
  if (idx < -size || idx >= size) fail(op, "index {} is out of bounds for dimension {} with size {}", idx, dim, size);
  return idx < 0 ? idx + size : idx;
}

// The element offset in x of broadcast index element b.
struct Offsets {
  std::vector<const int64_t*> idx;
  IndexPlan p;
  int64_t operator()(int64_t b) const {
    int64_t off = 0;
    for (size_t k = 0; k < idx.size(); ++k) off += checked(idx[k][b], p.sizes[k], int64_t(k), "index") * p.strides[k];
    return off;
  }
};

// d = v, or d += v (bool: d || v).
template <class T> [[gnu::always_inline]] inline void put(T& d, T v, bool add) {
  if constexpr (std::is_same_v<T, bool>) d = add ? (d || v) : v;
  else d = add ? store<T>(load(d) + load(v)) : v;
}

// d combined with v by r; NaN wins amax and amin, as torch's scatter_reduce.
template <class T> [[gnu::always_inline]] inline void reduce_into(T& d, T v, ScatterReduce r) {
  using R = ScatterReduce;
  if constexpr (std::is_same_v<T, bool>) {
    d = r == R::none ? v : (r == R::sum || r == R::amax) ? (d || v) : (d && v);
  } else {
    auto a = load(d), b = load(v);
    switch (r) {
      case R::none: d = v; return;
      case R::sum: d = store<T>(a + b); return;
      case R::prod: d = store<T>(a * b); return;
      case R::amax: if (a == a && (b != b || b > a)) d = v; return;  // a NaN already there stays
      case R::amin: if (a == a && (b != b || b < a)) d = v; return;
    }
  }
}

template <class T> [[gnu::always_inline]] inline bool nonzero_value(T v) {
  if constexpr (std::is_same_v<T, bool>) return v;
  else return load(v) != 0;  // NaN is nonzero
}

Offsets offsets(const std::vector<Tensor>& idx, const IndexPlan& p) {
  Offsets o{{}, p};
  for (const Tensor& t : idx) o.idx.push_back(t.data<int64_t>());
  return o;
}

}  // namespace

LaunchSpec index_gather_spec(const Tensor& out, const Tensor& x, const std::vector<Tensor>& idx, const IndexPlan& p) {
  const size_t row = size_t(p.post) * x.itemsize();
  LaunchSpec spec;
  spec.name = fmt::format("index_{}", dtype_name(x.dtype()));
  spec.work = p.pre * p.count;
  spec.grain = std::max<int64_t>(1, kMinBytesPerCore / std::max<int64_t>(int64_t(row), 1));
  spec.bytes = 2 * out.nbytes() + int64_t(idx.size()) * p.count * 8;
  const char* xp = static_cast<const char*>(x.data_ptr());
  char* op = static_cast<char*>(out.data_ptr());
  const size_t isz = x.itemsize();
  spec.body = [=, off = offsets(idx, p)](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u) {
      int64_t pi = u / p.count, bi = u % p.count;
      std::memcpy(op + size_t(u) * row, xp + size_t(pi * p.pre_stride + off(bi)) * isz, row);
    }
  };
  return spec;
}

LaunchSpec index_put_spec(const Tensor& x, const Tensor& values, const std::vector<Tensor>& idx, const IndexPlan& p,
                          bool accumulate) {
  LaunchSpec spec;
  spec.name = fmt::format("index_put{}_{}", accumulate ? "_accumulate" : "", dtype_name(x.dtype()));
  spec.work = p.pre;
  spec.bytes = 2 * values.nbytes() + int64_t(idx.size()) * p.count * 8;
  OPSCOPE_DISPATCH_ALL_AND_BOOL(x.dtype(), T, [&] {
    T* xp = x.data<T>();
    const T* vp = values.data<T>();
    spec.body = [=, off = offsets(idx, p)](int64_t b, int64_t e) {
      for (int64_t pi = b; pi < e; ++pi)
        for (int64_t bi = 0; bi < p.count; ++bi) {
          T* dst = xp + pi * p.pre_stride + off(bi);
          const T* src = vp + (pi * p.count + bi) * p.post;
          if (accumulate)  // (the op refuses it for bool)
            for (int64_t j = 0; j < p.post; ++j) put(dst[j], src[j], true);
          else
            std::copy(src, src + p.post, dst);
        }
    };
  });
  return spec;
}

LaunchSpec gather_spec(const Tensor& out, const Tensor& x, const Tensor& index, int axis) {
  Shape shape = index.shape();
  Strides xs = x.strides();
  int64_t axis_stride = xs[axis], axis_size = x.shape()[axis];
  xs[axis] = 0;
  std::array<Strides, 2> st{contiguous_strides(shape), xs};
  int64_t n = out.numel();
  LaunchSpec spec;
  spec.name = fmt::format("gather_{}", dtype_name(x.dtype()));
  spec.work = (n + kElemBlock - 1) / kElemBlock;
  spec.grain = kElemGrainBlocks;
  spec.bytes = 2 * out.nbytes() + index.nbytes();
  const int64_t* ip = index.data<int64_t>();
  OPSCOPE_DISPATCH_ALL_AND_BOOL(x.dtype(), T, [&] {
    const T* xp = x.data<T>();
    T* op = out.data<T>();
    spec.body = [=](int64_t b, int64_t e) {
      int64_t lo = b * kElemBlock, hi = std::min(n, e * kElemBlock);
      for_each_run<2>(shape, st, lo, hi, [&](const auto& off, const auto& inner, int64_t count) {
        for (int64_t i = 0; i < count; ++i) {
          int64_t o = off[0] + i * inner[0];
          int64_t k = checked(ip[o], axis_size, axis, "gather");
          op[o] = xp[off[1] + i * inner[1] + k * axis_stride];
        }
      });
    };
  });
  return spec;
}

LaunchSpec scatter_spec(const Tensor& x, const Tensor& index, const Tensor& src, int axis, ScatterReduce reduce) {
  Shape shape = index.shape();
  Strides xs = x.strides();
  int64_t axis_stride = xs[axis], axis_size = x.shape()[axis];
  xs[axis] = 0;
  std::array<Strides, 3> st{contiguous_strides(shape), src.strides(), xs};
  int64_t n = index.numel();
  LaunchSpec spec;
  static constexpr const char* kSuffix[] = {"", "_add", "_prod", "_amax", "_amin"};
  spec.name = fmt::format("scatter{}_{}", kSuffix[int(reduce)], dtype_name(x.dtype()));
  spec.bytes = 2 * n * int64_t(x.itemsize()) + index.nbytes();
  const int64_t* ip = index.data<int64_t>();
  OPSCOPE_DISPATCH_ALL_AND_BOOL(x.dtype(), T, [&] {
    T* xp = x.data<T>();
    const T* sp = src.data<T>();
    spec.body = [=](int64_t, int64_t) {
      for_each_run<3>(shape, st, 0, n, [&](const auto& off, const auto& inner, int64_t count) {
        for (int64_t i = 0; i < count; ++i) {
          int64_t k = checked(ip[off[0] + i * inner[0]], axis_size, axis, "scatter");
          reduce_into(xp[off[2] + i * inner[2] + k * axis_stride], sp[off[1] + i * inner[1]], reduce);
        }
      });
    };
  });
  return spec;
}

LaunchSpec nonzero_spec(const Tensor& out, const Tensor& x, std::shared_ptr<const std::vector<int64_t>> block_start) {
  int64_t n = x.numel();
  int nd = x.ndim();
  Shape shape = x.shape();
  LaunchSpec spec;
  spec.name = fmt::format("nonzero_{}", dtype_name(x.dtype()));
  spec.work = (n + kNonzeroBlock - 1) / kNonzeroBlock;
  spec.bytes = x.nbytes() + out.nbytes();
  int64_t* op = out.data<int64_t>();
  OPSCOPE_DISPATCH_ALL_AND_BOOL(x.dtype(), T, [&] {
    const T* xp = x.data<T>();
    spec.body = [=](int64_t b, int64_t e) {
      for (int64_t blk = b; blk < e; ++blk) {
        int64_t row = (*block_start)[size_t(blk)];
        for (int64_t i = blk * kNonzeroBlock, end = std::min(n, i + kNonzeroBlock); i < end; ++i) {
          if (!nonzero_value(xp[i])) continue;
          int64_t rem = i;
          for (int d = nd - 1; d >= 0; --d) {
            op[row * nd + d] = rem % shape[d];
            rem /= shape[d];
          }
          ++row;
        }
      }
    };
  });
  return spec;
}

}  // namespace opscope::cpu_kernels
