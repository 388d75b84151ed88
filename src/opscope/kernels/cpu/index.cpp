#include "opscope/kernels/cpu/index.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "opscope/core/error.h"
#include "opscope/kernels/cpu/strided.h"

namespace opscope::cpu_kernels {

namespace {

// One input of a concat: where its elements come from and go to.
struct Piece {
  const char* src;
  int64_t dst_off;                // element offset of its slice in out
  Shape shape;                    // index space (2-d for contiguous inputs)
  std::array<Strides, 2> strides;  // {dst, src}
  int64_t first_block, numel;
};

// Copies elements [lo, hi) of a piece; U is an unsigned type of the element's size.
template <class U> void copy_piece(const Piece& p, char* out, int64_t lo, int64_t hi) {
  U* dst = reinterpret_cast<U*>(out) + p.dst_off;
  const U* src = reinterpret_cast<const U*>(p.src);
  for_each_run<2>(p.shape, p.strides, lo, hi, [&](auto off, auto inner, int64_t count) {
    U* d = dst + off[0];
    const U* s = src + off[1];
    if (inner[0] == 1 && inner[1] == 1) {
      std::memcpy(d, s, size_t(count) * sizeof(U));
    } else {
      for (int64_t i = 0; i < count; ++i) d[i * inner[0]] = s[i * inner[1]];
    }
  });
}

}  // namespace

LaunchSpec concat_spec(const Tensor& out, std::span<const Tensor> xs, int axis, int64_t start) {
  const Shape& os = out.shape();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= os[d];
  for (int d = axis + 1; d < os.size(); ++d) inner *= os[d];
  Strides out_st = contiguous_strides(os);
  auto pieces = std::make_shared<std::vector<Piece>>();
  int64_t blocks = 0, bytes = 0, pos = start;
  for (const Tensor& x : xs) {
    int64_t c = x.shape()[axis];
    if (x.numel() > 0) {
      Piece p;
      p.src = static_cast<const char*>(x.data_ptr());
      p.dst_off = pos * inner;
      p.numel = x.numel();
      p.first_block = blocks;
      if (x.is_contiguous()) {  // one run of c * inner elements per outer index
        p.shape = Shape{outer, c * inner};
        p.strides = {Strides{os[axis] * inner, 1}, Strides{c * inner, 1}};
      } else {
        p.shape = x.shape();
        p.strides = {out_st, x.strides()};
      }
      pieces->push_back(p);
      blocks += (p.numel + kElemBlock - 1) / kElemBlock;
      bytes += 2 * x.nbytes();
    }
    pos += c;
  }
  LaunchSpec spec;
  spec.name = fmt::format("concat_{}", dtype_name(out.dtype()));
  spec.work = blocks;
  spec.grain = kElemGrainBlocks;
  spec.bytes = bytes;
  char* op = static_cast<char*>(out.data_ptr());
  size_t isz = out.itemsize();
  spec.body = [=](int64_t b, int64_t e) {
    const auto& ps = *pieces;
    size_t i = 0;
    for (int64_t u = b; u < e; ++u) {
      while (i + 1 < ps.size() && ps[i + 1].first_block <= u) ++i;
      const Piece& p = ps[i];
      int64_t lo = (u - p.first_block) * kElemBlock, hi = std::min(p.numel, lo + kElemBlock);
      switch (isz) {  // every dtype's size: bool's 1 byte copied as 8 overran the output
        case 1: copy_piece<uint8_t>(p, op, lo, hi); break;
        case 2: copy_piece<uint16_t>(p, op, lo, hi); break;
        case 4: copy_piece<uint32_t>(p, op, lo, hi); break;
        case 8: copy_piece<uint64_t>(p, op, lo, hi); break;
        default: fail("concat", "no copy for {}-byte elements", isz);
      }
    }
  };
  return spec;
}

LaunchSpec embedding_spec(const Tensor& out, const Tensor& weight, const Tensor& indices) {
  int64_t n = indices.numel(), V = weight.shape()[0], D = weight.shape()[1], row_stride = weight.strides()[0];
  size_t isz = weight.itemsize(), row_bytes = size_t(D) * isz;
  const char* wp = static_cast<const char*>(weight.data_ptr());
  char* op = static_cast<char*>(out.data_ptr());
  const void* ip = indices.data_ptr();
  bool i64 = indices.dtype() == DType::i64;
  LaunchSpec spec;
  spec.name = fmt::format("embedding_{}", dtype_name(weight.dtype()));
  spec.work = n;
  spec.grain = std::max<int64_t>(1, (int64_t(1) << 14) / std::max<int64_t>(D, 1));
  spec.bytes = indices.nbytes() + 2 * out.nbytes();
  spec.body = [=](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u) {
      int64_t idx = i64 ? static_cast<const int64_t*>(ip)[u] : static_cast<const int32_t*>(ip)[u];
      if (idx < 0 || idx >= V)
        fail("embedding", "index {} (at position {} of the indices) is out of range for a weight of {} rows (V = {})",
             idx, u, V, V);
      std::memcpy(op + size_t(u) * row_bytes, wp + idx * row_stride * int64_t(isz), row_bytes);
    }
  };
  return spec;
}

LaunchSpec embedding_bag_max_spec(const Tensor& out, const Tensor& argmax, const Tensor& weight, const Tensor& rows,
                                  const Tensor& starts) {
  const int64_t D = weight.shape()[1], row_stride = weight.strides()[0];
  const float* wp = weight.data<float>();
  const int64_t* rp = rows.data<int64_t>();
  const int64_t* sp = starts.data<int64_t>();
  float* op = out.data<float>();
  int64_t* ap = argmax.data<int64_t>();
  LaunchSpec spec;
  spec.name = "embedding_bag_max_f32";
  spec.work = out.shape()[0];
  spec.grain = std::max<int64_t>(1, (int64_t(1) << 12) / std::max<int64_t>(D, 1));
  spec.bytes = rows.numel() * D * 4 + out.nbytes() + argmax.nbytes() + rows.nbytes() + starts.nbytes();
  spec.body = [=](int64_t b, int64_t e) {
    for (int64_t bag = b; bag < e; ++bag) {
      float* o = op + bag * D;
      int64_t* a = ap + bag * D;
      std::fill(o, o + D, 0.0f);
      std::fill(a, a + D, int64_t(0));
      for (int64_t p = sp[bag]; p < sp[bag + 1]; ++p) {
        const float* w = wp + rp[p] * row_stride;
        const bool first = p == sp[bag];
        for (int64_t d = 0; d < D; ++d)
          if (first || w[d] > o[d]) o[d] = w[d], a[d] = rp[p];
      }
    }
  };
  return spec;
}

}  // namespace opscope::cpu_kernels
