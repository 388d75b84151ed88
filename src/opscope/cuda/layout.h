// Types shared by the kernels' host launchers and their device code (which the tests
// also build for the host, without the CUDA toolkit): no CUDA header here.
#pragma once
#include <stdint.h>

namespace opscope::cuda_impl {

// Element types of the kernels; the values of opscope::DType.
enum class Dt : int { f32 = 0, bf16 = 1, f16 = 2, i32 = 3, i64 = 4 };

constexpr int kMaxLayoutDims = 8;
// An index space of up to 8 dims (row-major), with each operand's strides in elements
// (0 along broadcast dims). Operand 0 is the output.
struct Layout {
  int ndim = 0;
  int64_t shape[kMaxLayoutDims] = {};
  int64_t stride[3][kMaxLayoutDims] = {};
};

// ---- the layout work of the launchers, plain host code the tests run too ----

// Whether operand k of `l` walks memory in row-major order without gaps (dims of size 1
// ignored): a same-dtype copy between two such operands is one cudaMemcpyAsync, which
// moved 4.2 TB/s on the H200 where the strided copy kernel moved 1.9.
inline bool dense_row_major(const Layout& l, int k) {
  int64_t expect = 1;
  for (int d = l.ndim - 1; d >= 0; --d) {
    if (l.shape[d] == 1) continue;
    if (l.stride[k][d] != expect) return false;
    expect *= l.shape[d];
  }
  return true;
}

// A reduction over the dims flagged in `reduced` of x (shape, strides): the kept dims
// (out's, row-major; operand 1: x's strides) and the reduced dims (operand 1: x's strides).
inline void reduce_layouts(int nd, const int64_t* shape, const int64_t* strides, const bool* reduced, Layout& kept,
                           Layout& red) {
  kept = Layout{};
  red = Layout{};
  for (int d = 0; d < nd; ++d) {
    Layout& l = reduced[d] ? red : kept;
    l.shape[l.ndim] = shape[d];
    l.stride[1][l.ndim] = strides[d];
    ++l.ndim;
  }
}

// One input of concat: its first element's offset in out (contiguous, elements) and the
// copy's layout (operand 0: out's strides, operand 1: x's), x starting at `pos` along `axis`.
struct ConcatPiece {
  int64_t dst_offset = 0;
  Layout layout;
};
inline ConcatPiece concat_piece(int nd, const int64_t* out_shape, int axis, int64_t pos, const int64_t* x_shape,
                                const int64_t* x_strides) {
  int64_t out_st[kMaxLayoutDims] = {};
  int64_t s = 1;
  for (int d = nd - 1; d >= 0; --d) {
    out_st[d] = s;
    s *= out_shape[d];
  }
  ConcatPiece p;
  p.dst_offset = pos * out_st[axis];
  p.layout.ndim = nd;
  for (int d = 0; d < nd; ++d) {
    p.layout.shape[d] = x_shape[d];
    p.layout.stride[0][d] = out_st[d];
    p.layout.stride[1][d] = x_strides[d];
  }
  return p;
}

// What a kernel reports about bad input, through a slot in mapped pinned memory.
struct KernelError {
  int code;  // 0: none; 1: index `a` outside [0, b)
  int pad;
  long long a, b;
};

}  // namespace opscope::cuda_impl
