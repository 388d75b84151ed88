#include "opscope/kernels/cpu/copy.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fmt/format.h>

#include "opscope/kernels/cpu/elementwise.h"
#include "opscope/kernels/cpu/half_rows.h"
#include "opscope/kernels/cpu/strided.h"
#include "opscope/runtime/runtime.h"

namespace opscope::cpu_kernels {

namespace {

template <class To, class From>
inline To convert(From v) {
  if constexpr (std::is_integral_v<To> && std::is_integral_v<From>) {
    return static_cast<To>(v);
  } else if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_integral_v<To>) {
    return static_cast<To>(to_f32(v));
  } else if constexpr (std::is_integral_v<From>) {
    return from_f32<To>(float(v));
  } else {
    return from_f32<To>(to_f32(v));
  }
}

int64_t blocks(int64_t n) { return (n + kElemBlock - 1) / kElemBlock; }

// A contiguous dst whose last two dims are src's transposed (src's row stride is 1): the
// plain walk reads one element per cache line, and with a power-of-two stride every line
// of a tile falls in the same cache set. Copied in kR x kC blocks through a buffer
// instead: each src line and each dst line is read or written whole, once. kR src lines'
// worth of a src row at a time, since a stride of pages defeats the hardware prefetcher.
constexpr int64_t kR = 64, kC = 16;
bool is_transposed_copy(const Tensor& dst, const Shape& shape, const std::array<Strides, 2>& st) {
  int nd = shape.size();
  return dst.is_contiguous() && nd >= 2 && st[1][nd - 2] == 1 && std::abs(st[1][nd - 1]) > 1;
}

template <class To, class From>
void transposed_copy(To* out, const From* in, const Shape& shape, const std::array<Strides, 2>& st, int64_t b,
                     int64_t e) {
  int nd = shape.size();
  int64_t R = shape[nd - 2], C = shape[nd - 1], sc = st[1][nd - 1], row_blocks = (R + kR - 1) / kR;
  To tile[kR][kC];
  for (int64_t u = b; u < e; ++u) {
    int64_t p = u / row_blocks, r0 = (u % row_blocks) * kR, rn = std::min(kR, R - r0);
    int64_t sbase = 0;
    for (int64_t rem = p, d = nd - 3; d >= 0; --d) {
      sbase += (rem % shape[int(d)]) * st[1][int(d)];
      rem /= shape[int(d)];
    }
    To* o = out + p * R * C + r0 * C;
    const From* x = in + sbase + r0;
    for (int64_t c0 = 0; c0 < C; c0 += kC) {
      int64_t cn = std::min(kC, C - c0);
      for (int64_t c = 0; c < cn; ++c)
        for (int64_t r = 0; r < rn; ++r) tile[r][c] = convert<To>(x[(c0 + c) * sc + r]);
      if (cn == kC)  // a fixed count: a vector store (GCC makes a variable one `rep movs`)
        for (int64_t r = 0; r < rn; ++r)
          for (int64_t c = 0; c < kC; ++c) o[r * C + c0 + c] = tile[r][c];
      else
        for (int64_t r = 0; r < rn; ++r)
          for (int64_t c = 0; c < cn; ++c) o[r * C + c0 + c] = tile[r][c];
    }
  }
}

}  // namespace

void launch_copy(const Tensor& dst, const Tensor& src) {
  int64_t n = dst.numel();
  if (n == 0) return;  // nothing to move (and the transposed form's plane count would divide by 0)
  Shape shape = src.shape();
  std::array<Strides, 2> strides{dst.strides(), src.strides()};
  coalesce<2>(shape, strides);
  char* d = static_cast<char*>(dst.data_ptr());
  const char* s = static_cast<const char*>(src.data_ptr());
  DType dt = dst.dtype(), st = src.dtype();
  bool dense = src.is_contiguous() && dst.is_contiguous(), flat = dense && dt == st;
  LaunchSpec spec;
  spec.name = dt == st ? fmt::format("copy_{}", dtype_name(dt)) : fmt::format("cast_{}_{}", dtype_name(st), dtype_name(dt));
  if (!flat && is_transposed_copy(dst, shape, strides)) {
    int nd = shape.size();
    spec.work = n / (shape[nd - 2] * shape[nd - 1]) * ((shape[nd - 2] + kR - 1) / kR);  // planes x row blocks
    spec.grain = std::max<int64_t>(1, kElemBlock * kElemGrainBlocks / (kR * shape[nd - 1]));
    spec.bytes = n * int64_t(itemsize(dt) + itemsize(st));
    spec.body = [=](int64_t b, int64_t e) {
      OPSCOPE_DISPATCH_ALL_AND_BOOL(dt, To, [&] {
        OPSCOPE_DISPATCH_ALL_AND_BOOL(st, From, [&] {
          transposed_copy(reinterpret_cast<To*>(d), reinterpret_cast<const From*>(s), shape, strides, b, e);
        });
      });
    };
    runtime::launch(dst.device(), std::move(spec), {&src}, {&dst});
    return;
  }
  spec.work = blocks(n);
  spec.grain = kElemGrainBlocks;
  spec.bytes = n * int64_t(itemsize(dt) + itemsize(st));
  spec.body = [=](int64_t b, int64_t e) {
    int64_t lo = b * kElemBlock, hi = std::min(n, e * kElemBlock);
    if (flat) {
      size_t sz = itemsize(dt);
      std::memcpy(d + lo * sz, s + lo * sz, size_t(hi - lo) * sz);
      return;
    }
    if (dense && st == DType::f16 && dt == DType::f32) {  // the hardware's converts (half_rows.h)
      f16_row_to_f32(reinterpret_cast<const f16_t*>(s) + lo, reinterpret_cast<float*>(d) + lo, hi - lo);
      return;
    }
    if (dense && st == DType::f32 && dt == DType::f16) {
      f32_row_to_f16(reinterpret_cast<const float*>(s) + lo, reinterpret_cast<f16_t*>(d) + lo, hi - lo, false);
      return;
    }
    OPSCOPE_DISPATCH_ALL_AND_BOOL(dt, To, [&] {
      OPSCOPE_DISPATCH_ALL_AND_BOOL(st, From, [&] {
        To* out = reinterpret_cast<To*>(d);
        const From* in = reinterpret_cast<const From*>(s);
        walk<2>(shape, strides, lo, hi, [&](const auto& off, const auto& inner, int64_t count) {
          To* o = out + off[0];
          const From* x = in + off[1];
          int64_t os = inner[0], is = inner[1];
          if (os == 1 && is == 1)
            for (int64_t i = 0; i < count; ++i) o[i] = convert<To>(x[i]);
          else if (os == 1)
            for (int64_t i = 0; i < count; ++i) o[i] = convert<To>(x[i * is]);
          else  // a strided destination: a view being written in place
            for (int64_t i = 0; i < count; ++i) o[i * os] = convert<To>(x[i * is]);
        });
      });
    });
  };
  runtime::launch(dst.device(), std::move(spec), {&src}, {&dst});
}

namespace {
// Host values (f32 or i64) converted to dst's dtype; the launch owns the host buffer.
template <class H>
void launch_from_host(const Tensor& dst, std::shared_ptr<const std::vector<H>> buf) {
  int64_t n = dst.numel();
  DType dt = dst.dtype();
  void* d = dst.data_ptr();
  LaunchSpec spec;
  spec.name = "memcpy_h2d";
  spec.kind = Launch::Kind::copy_h2d;
  spec.work = blocks(n);
  spec.grain = kElemGrainBlocks;
  spec.bytes = n * int64_t(sizeof(H) + itemsize(dt));
  spec.body = [=](int64_t b, int64_t e) {
    int64_t lo = b * kElemBlock, hi = std::min(n, e * kElemBlock);
    OPSCOPE_DISPATCH_ALL_AND_BOOL(dt, T, [&] {
      T* o = static_cast<T*>(d);
      const H* host = buf->data();
      for (int64_t i = lo; i < hi; ++i) o[i] = convert<T>(host[i]);
    });
  };
  runtime::launch(dst.device(), std::move(spec), {}, {&dst});
}
}  // namespace

void launch_from_host_f32(const Tensor& dst, std::shared_ptr<const std::vector<float>> buf) {
  launch_from_host(dst, std::move(buf));
}
void launch_from_host_i64(const Tensor& dst, std::shared_ptr<const std::vector<int64_t>> buf) {
  launch_from_host(dst, std::move(buf));
}

void launch_to_host_f32(float* host, const Tensor& src) {
  int64_t n = src.numel();
  Shape shape = src.shape();
  std::array<Strides, 1> strides{src.strides()};
  DType st = src.dtype();
  const void* s = src.data_ptr();
  LaunchSpec spec;
  spec.name = "memcpy_d2h";
  spec.kind = Launch::Kind::copy_d2h;
  spec.work = blocks(n);
  spec.grain = kElemGrainBlocks;
  spec.bytes = n * int64_t(4 + itemsize(st));
  spec.body = [=](int64_t b, int64_t e) {
    int64_t lo = b * kElemBlock, hi = std::min(n, e * kElemBlock);
    OPSCOPE_DISPATCH_ALL_AND_BOOL(st, T, [&] {
      const T* in = static_cast<const T*>(s);
      float* o = host + lo;
      for_each_run<1>(shape, strides, lo, hi, [&](auto off, auto inner, int64_t count) {
        for (int64_t i = 0; i < count; ++i) o[i] = convert<float>(in[off[0] + i * inner[0]]);
        o += count;
      });
    });
  };
  runtime::launch(src.device(), std::move(spec), {&src}, {});
}

void launch_to_host_bytes(void* host, const Tensor& src) {
  int64_t nbytes = src.nbytes();
  const char* s = static_cast<const char*>(src.data_ptr());
  char* h = static_cast<char*>(host);
  constexpr int64_t kChunk = 1 << 16;
  LaunchSpec spec;
  spec.name = "memcpy_d2h";
  spec.kind = Launch::Kind::copy_d2h;
  spec.work = (nbytes + kChunk - 1) / kChunk;
  spec.grain = 4;
  spec.bytes = 2 * nbytes;
  spec.body = [=](int64_t b, int64_t e) {
    int64_t lo = b * kChunk, hi = std::min(nbytes, e * kChunk);
    std::memcpy(h + lo, s + lo, size_t(hi - lo));
  };
  runtime::launch(src.device(), std::move(spec), {&src}, {});
}

void launch_fill(const Tensor& dst, double value) {
  int64_t n = dst.numel();
  DType dt = dst.dtype();
  void* d = dst.data_ptr();
  LaunchSpec spec;
  spec.name = fmt::format("fill_{}", dtype_name(dt));
  spec.work = blocks(n);
  spec.grain = kElemGrainBlocks;
  spec.bytes = n * int64_t(itemsize(dt));
  spec.body = [=](int64_t b, int64_t e) {
    int64_t lo = b * kElemBlock, hi = std::min(n, e * kElemBlock);
    OPSCOPE_DISPATCH_ALL_AND_BOOL(dt, T, [&] {
      T v;
      if constexpr (std::is_integral_v<T>) v = T(value);
      else v = from_f32<T>(float(value));
      T* o = static_cast<T*>(d);
      for (int64_t i = lo; i < hi; ++i) o[i] = v;
    });
  };
  runtime::launch(dst.device(), std::move(spec), {}, {&dst});
}

void launch_arange(const Tensor& dst, double start, double step) {
  int64_t n = dst.numel();
  DType dt = dst.dtype();
  void* d = dst.data_ptr();
  LaunchSpec spec;
  spec.name = fmt::format("arange_{}", dtype_name(dt));
  spec.work = blocks(n);
  spec.grain = kElemGrainBlocks;
  spec.bytes = n * int64_t(itemsize(dt));
  spec.body = [=](int64_t b, int64_t e) {
    int64_t lo = b * kElemBlock, hi = std::min(n, e * kElemBlock);
    OPSCOPE_DISPATCH_ALL_AND_BOOL(dt, T, [&] {
      T* o = static_cast<T*>(d);
      for (int64_t i = lo; i < hi; ++i) {
        double v = start + double(i) * step;
        if constexpr (std::is_integral_v<T>) o[i] = T(v);
        else o[i] = from_f32<T>(float(v));
      }
    });
  };
  runtime::launch(dst.device(), std::move(spec), {}, {&dst});
}

namespace {
// splitmix64: a strong 64-bit mix, so element i's value needs only (seed, i).
inline uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
inline float unit(uint64_t bits) { return float((bits >> 40) + 0.5) * (1.0f / 16777216.0f); }  // (0, 1)
}  // namespace

void launch_random(const Tensor& dst, uint64_t seed, bool normal, float a, float b) {
  int64_t n = dst.numel();
  DType dt = dst.dtype();
  void* d = dst.data_ptr();
  uint64_t key = mix(seed ^ 0x5eedull);
  LaunchSpec spec;
  spec.name = fmt::format("{}_{}", normal ? "randn" : "rand", dtype_name(dt));
  spec.work = blocks(n);
  spec.grain = kElemGrainBlocks;
  spec.bytes = n * int64_t(itemsize(dt));
  spec.body = [=](int64_t bb, int64_t e) {
    int64_t lo = bb * kElemBlock, hi = std::min(n, e * kElemBlock);
    OPSCOPE_DISPATCH_FLOAT(dt, T, [&] {
      T* o = static_cast<T*>(d);
      for (int64_t i = lo; i < hi; ++i) {
        uint64_t r = mix(key + uint64_t(i) * 0x632be59bd9b4e019ull);
        float v;
        if (normal) {  // Box-Muller on two 32-bit halves
          float u1 = float((r >> 40) + 0.5) * (1.0f / 16777216.0f);
          float u2 = float(((r >> 8) & 0xffffff) + 0.5) * (1.0f / 16777216.0f);
          v = a + b * std::sqrt(-2.0f * std::log(u1)) * std::cos(6.28318530718f * u2);
        } else {
          v = a + (b - a) * unit(r);
        }
        o[i] = from_f32<T>(v);
      }
    });
  };
  runtime::launch(dst.device(), std::move(spec), {}, {&dst});
}

}  // namespace opscope::cpu_kernels
