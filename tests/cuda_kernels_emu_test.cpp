// The CUDA device's kernels (src/opscope/cuda/*.cuh) without a GPU: their device code is
// built for the host under the fiber emulator (cuda_emulator.h), each GPU thread a
// fiber, and run at small odd sizes against a double-precision reference. Covers the
// warp-per-row and block-per-row paths, 128-bit and scalar paths, f32 and bf16, grids
// smaller than the work (grid-stride loops). Needs a host C++ compiler, not CUDA.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "cuda_emulator.h"
#include "opscope/compiler/build.h"
#include "opscope/compiler/cache.h"
#include "opscope/core/dtype.h"
#include "opscope/cuda/layout.h"
#include "opscope/kernels/cpu/elementwise.h"
#include "opscope/kernels/window2d.h"
#include "opscope/runtime/runtime.h"
#include "opscope/runtime/tensor.h"

using namespace opscope;

namespace {

// What the emulator prelude lacks for these kernels: bf16/f16 storage types with their
// conversions, and shuffles of 64-bit integers.
const char* kExtraPrelude = R"(
struct __nv_bfloat16 { unsigned short x; };
struct __half { _Float16 h; };
static float __bfloat162float(__nv_bfloat16 v) { return __uint_as_float((unsigned)v.x << 16); }
static __nv_bfloat16 __float2bfloat16(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return __nv_bfloat16{(unsigned short)((u >> 16) | 0x40)};
  u += 0x7fffu + ((u >> 16) & 1u);
  return __nv_bfloat16{(unsigned short)(u >> 16)};
}
static void __threadfence_system() {}
// CUDA's erfinvf, which the host's math library lacks: erf bisected in double.
static float erfinvf(float x) {
  if (!(x > -1.0f && x < 1.0f)) return x == 1.0f ? INFINITY : x == -1.0f ? -INFINITY : NAN;
  double lo = -10, hi = 10;
  for (int i = 0; i < 200; ++i) {
    double mid = (lo + hi) / 2;
    if (erf(mid) < x) lo = mid;
    else hi = mid;
  }
  return (float)((lo + hi) / 2);
}
static float __half2float(__half v) { return (float)v.h; }
static __half __float2half(float f) { return __half{(_Float16)f}; }
static long long ofs_slot_ll[1024];
static long long __shfl_xor_sync(unsigned mask, long long v, int o) {
  if (mask != 0xffffffffu) abort();
  unsigned t = ofs_cur->idx.x, w = t >> 5;
  ofs_slot_ll[t] = v;
  ofs_barrier(&ofs_warp_arrived[w], &ofs_warp_gen[w], 32);
  long long r = ofs_slot_ll[(t & ~31u) | ((t & 31u) ^ (unsigned)o)];
  ofs_barrier(&ofs_warp_arrived[w], &ofs_warp_gen[w], 32);
  return r;
}
)";

// Entry points over the kernels: each sets the launch's closure and runs the grid.
const char* kEntries = R"(
#include "opscope/cuda/elementwise.cuh"
#include "opscope/cuda/norm.cuh"
#include "opscope/cuda/reduce.cuh"
#include "opscope/cuda/index.cuh"
#include "opscope/cuda/window.cuh"
using namespace opscope::cuda_impl;
using namespace opscope::cuda_impl::dev;
template <class F> static F* g_fn;
template <class F> static void call_fn(void*) { (*g_fn<F>)(); }
template <class F> static int run(F f, unsigned grid, unsigned block) {
  g_fn<F> = &f;
  void* arg = 0;
  return ofs_emu_launch((void*)&call_fn<F>, 1, &arg, grid, block);
}
// block: 0 warp per row, 1 block per row, 2 the row in a block's registers (K chunks a
// thread as the launcher picks them; -3 for a row that form does not take).
#define REGS(T, KERNEL, ...)                                                                      \
  (reg_row_chunks(cols, sizeof(T)) == 1    ? run([=] { KERNEL##_regs<T, 1>(__VA_ARGS__); }, grid, kRegRowBlock)  \
   : reg_row_chunks(cols, sizeof(T)) == 2    ? run([=] { KERNEL##_regs<T, 2>(__VA_ARGS__); }, grid, kRegRowBlock)  \
   : reg_row_chunks(cols, sizeof(T)) == 4  ? run([=] { KERNEL##_regs<T, 4>(__VA_ARGS__); }, grid, kRegRowBlock)  \
   : reg_row_chunks(cols, sizeof(T)) == 8  ? run([=] { KERNEL##_regs<T, 8>(__VA_ARGS__); }, grid, kRegRowBlock)  \
   : reg_row_chunks(cols, sizeof(T)) == 16 ? run([=] { KERNEL##_regs<T, 16>(__VA_ARGS__); }, grid, kRegRowBlock) \
                                           : -3)
#define PATHS(T, KERNEL, ...)                                                             \
  (block == 2 ? REGS(T, KERNEL, __VA_ARGS__) :                                            \
  block ? (vec ? run([=] { KERNEL##_block<T, true>(__VA_ARGS__); }, grid, kRowBlock)   \
                : run([=] { KERNEL##_block<T, false>(__VA_ARGS__); }, grid, kRowBlock)) \
         : (vec ? run([=] { KERNEL##_warp<T, true>(__VA_ARGS__); }, grid, 256)          \
                : run([=] { KERNEL##_warp<T, false>(__VA_ARGS__); }, grid, 256)))
template <class T> static int rms(int block, int vec, void* y, const void* x, const void* w, long long rows, long long cols, float eps, unsigned grid) {
  T* yp = (T*)y; const T* xp = (const T*)x; const T* wp = (const T*)w;
  return PATHS(T, rms_norm, yp, xp, wp, rows, cols, eps);
}
template <class T> static int ln(int block, int vec, void* y, const void* x, const void* w, const void* b, long long rows, long long cols, float eps, unsigned grid) {
  T* yp = (T*)y; const T* xp = (const T*)x; const T* wp = (const T*)w; const T* bp = (const T*)b;
  return PATHS(T, layer_norm, yp, xp, wp, bp, rows, cols, eps);
}
template <class T> static int sm(int block, int vec, void* y, const void* x, long long rows, long long cols, unsigned grid) {
  T* yp = (T*)y; const T* xp = (const T*)x;
  if (block) return run([=] { softmax_block<T>(yp, xp, rows, cols); }, grid, kRowBlock);
  return vec ? run([=] { softmax_warp<T, true>(yp, xp, rows, cols); }, grid, 256)
             : run([=] { softmax_warp<T, false>(yp, xp, rows, cols); }, grid, 256);
}
extern "C" int emu_reg_row_chunks(long long cols, int elem_bytes) { return reg_row_chunks(cols, elem_bytes); }
extern "C" int emu_rms_norm(int bf, int block, int vec, void* y, const void* x, const void* w, long long rows, long long cols, float eps, unsigned grid) {
  return bf ? rms<bf16>(block, vec, y, x, w, rows, cols, eps, grid) : rms<float>(block, vec, y, x, w, rows, cols, eps, grid);
}
extern "C" int emu_layer_norm(int bf, int block, int vec, void* y, const void* x, const void* w, const void* b, long long rows, long long cols, float eps, unsigned grid) {
  return bf ? ln<bf16>(block, vec, y, x, w, b, rows, cols, eps, grid) : ln<float>(block, vec, y, x, w, b, rows, cols, eps, grid);
}
extern "C" int emu_softmax(int bf, int block, int vec, void* y, const void* x, long long rows, long long cols, unsigned grid) {
  return bf ? sm<bf16>(block, vec, y, x, rows, cols, grid) : sm<float>(block, vec, y, x, rows, cols, grid);
}
// out = op(a, b) with a (rows, cols) and b broadcast as `b_row` (cols) or column (rows, 1).
extern "C" int emu_binary_bcast(int op, float* out, const float* a, const float* b, long long rows, long long cols, int b_row, unsigned grid) {
  Layout l;
  l.ndim = 2;
  l.shape[0] = rows; l.shape[1] = cols;
  l.stride[0][0] = cols; l.stride[0][1] = 1;
  l.stride[1][0] = cols; l.stride[1][1] = 1;
  l.stride[2][0] = b_row ? 0 : 1; l.stride[2][1] = b_row ? 1 : 0;
  MapOp f{1, op, 0.0f};
  long long n = rows * cols;
  return run([=] { map_strided<float, 2>(out, a, b, n, l, f); }, grid, 256);
}
// The unary kernels' op on one value, and how many ops the kernels know.
extern "C" float emu_unary(int op, float x) { return unary_f(op, x); }
extern "C" int emu_unary_ops() { return kUnaryOps; }
extern "C" float emu_binary(int op, float a, float b) { return binary_f(op, a, b); }
extern "C" int emu_binary_ops() { return kBinaryOps; }
// out = op(a, b), all contiguous: the 128-bit path with its tail.
extern "C" int emu_binary_vec(int op, float* out, const float* a, const float* b, long long n, unsigned grid) {
  MapOp f{1, op, 0.0f};
  return run([=] { map_vec<float, 2>(out, a, b, n, f); }, grid, 256);
}
extern "C" int emu_reduce_rows(int kind, int block, int bf, void* out, const void* x, long long rows, long long len, long long correction, unsigned grid) {
  if (bf) {
    const bf16* xp = (const bf16*)x;
    return block ? run([=] { reduce_rows_block<bf16>(kind, out, xp, rows, len, correction); }, grid, 512)
                 : run([=] { reduce_rows_warp<bf16>(kind, out, xp, rows, len, correction); }, grid, 256);
  }
  const float* xp = (const float*)x;
  return block ? run([=] { reduce_rows_block<float>(kind, out, xp, rows, len, correction); }, grid, 512)
               : run([=] { reduce_rows_warp<float>(kind, out, xp, rows, len, correction); }, grid, 256);
}
// ---- elementwise, copies, concat, embedding, strided reductions: each entry picks its
// kernel as the launcher in the .cu file does (the shared host helpers of the .cuh) ----
template <class T> static int map_t(int kin, int op, void* out, const void* a, const void* b, long long n, const Layout* l, unsigned grid, int* path) {
  MapOp f{kin == 2 ? 1 : 0, op, 0.0f};
  MapPath p = map_path(l != 0, out, a, kin == 2 ? b : 0);
  *path = (int)p;
  T* o = (T*)out; const T* pa = (const T*)a; const T* pb = (const T*)b;
  Layout L = l ? *l : Layout();
  if (p == MapPath::strided)
    return kin == 2 ? run([=] { map_strided<T, 2>(o, pa, pb, n, L, f); }, grid, 256) : run([=] { map_strided<T, 1>(o, pa, pb, n, L, f); }, grid, 256);
  if (p == MapPath::vec)
    return kin == 2 ? run([=] { map_vec<T, 2>(o, pa, pb, n, f); }, grid, 256) : run([=] { map_vec<T, 1>(o, pa, pb, n, f); }, grid, 256);
  return kin == 2 ? run([=] { map_flat<T, 2>(o, pa, pb, n, f); }, grid, 256) : run([=] { map_flat<T, 1>(o, pa, pb, n, f); }, grid, 256);
}
extern "C" int emu_map(int bf, int kin, int op, void* out, const void* a, const void* b, long long n, const Layout* l, unsigned grid, int* path) {
  return bf ? map_t<bf16>(kin, op, out, a, b, n, l, grid, path) : map_t<float>(kin, op, out, a, b, n, l, grid, path);
}
static long long numel_of(const Layout& l) {
  long long n = 1;
  for (int d = 0; d < l.ndim; ++d) n *= l.shape[d];
  return n;
}
template <class D> static int copy_from(int sdt, D* dst, const void* src, long long n, Layout l, unsigned grid) {
  switch (sdt) {
    case 0: { const float* s = (const float*)src; return run([=] { copy_convert<D, float>(dst, s, n, l); }, grid, 256); }
    case 1: { const bf16* s = (const bf16*)src; return run([=] { copy_convert<D, bf16>(dst, s, n, l); }, grid, 256); }
    default: { const f16* s = (const f16*)src; return run([=] { copy_convert<D, f16>(dst, s, n, l); }, grid, 256); }
  }
}
// dst = src converted: dtypes as Dt (0 f32, 1 bf16, 2 f16); equal dtypes copy bits.
extern "C" int emu_copy(int ddt, int sdt, void* dst, const void* src, const Layout* lp, unsigned grid) {
  Layout l = *lp;
  long long n = numel_of(l);
  if (ddt == sdt) {
    if (ddt == 0) { unsigned* d = (unsigned*)dst; const unsigned* s = (const unsigned*)src; return run([=] { copy_bits<unsigned>(d, s, n, l); }, grid, 256); }
    unsigned short* d = (unsigned short*)dst; const unsigned short* s = (const unsigned short*)src;
    return run([=] { copy_bits<unsigned short>(d, s, n, l); }, grid, 256);
  }
  switch (ddt) {
    case 0: return copy_from(sdt, (float*)dst, src, n, l, grid);
    case 1: return copy_from(sdt, (bf16*)dst, src, n, l, grid);
    default: return copy_from(sdt, (f16*)dst, src, n, l, grid);
  }
}
// concat of f32 inputs along `axis` into the contiguous out, as concat_spec's body.
extern "C" int emu_concat(float* out, int nd, const int64_t* out_shape, int axis, int nin, const float* const* xs,
                          const int64_t* x_shapes, const int64_t* x_strides, unsigned grid) {
  long long pos = 0;
  for (int i = 0; i < nin; ++i) {
    const int64_t* xs_shape = x_shapes + i * nd;
    ConcatPiece p = concat_piece(nd, out_shape, axis, pos, xs_shape, x_strides + i * nd);
    pos += xs_shape[axis];
    long long n = numel_of(p.layout);
    if (n == 0) continue;
    unsigned* d = (unsigned*)(out + p.dst_offset);
    const unsigned* s = (const unsigned*)xs[i];
    Layout l = p.layout;
    int r = run([=] { copy_bits<unsigned>(d, s, n, l); }, grid, 256);
    if (r) return r;
  }
  return 0;
}
template <class T, class I> static int emb(void* out, const void* w, const void* idx, long long n, long long D, long long V, long long ws, KernelError* err, unsigned grid, int* vec) {
  *vec = embedding_vec_ok<T>(out, w, D, ws);
  T* o = (T*)out; const T* wp = (const T*)w; const I* ip = (const I*)idx;
  if (*vec) return run([=] { embedding_k<T, I, true>(o, wp, ip, n, D, V, ws, err); }, grid, 128);
  return run([=] { embedding_k<T, I, false>(o, wp, ip, n, D, V, ws, err); }, grid, 128);
}
extern "C" int emu_embedding(int bf, int idx_bytes, void* out, const void* w, const void* idx, long long n, long long D, long long V, long long ws, KernelError* err, unsigned grid, int* vec) {
  if (bf) return idx_bytes == 4 ? emb<bf16, int>(out, w, idx, n, D, V, ws, err, grid, vec) : emb<bf16, long long>(out, w, idx, n, D, V, ws, err, grid, vec);
  return idx_bytes == 4 ? emb<float, int>(out, w, idx, n, D, V, ws, err, grid, vec) : emb<float, long long>(out, w, idx, n, D, V, ws, err, grid, vec);
}
// A reduction of f32 x (shape, strides) over the dims flagged in `reduced`, the way
// reduce_spec lays out its strided path.
extern "C" int emu_reduce_strided(int kind, void* out, const float* x, int nd, const int64_t* shape, const int64_t* strides, const int* reduced, long long correction, unsigned grid) {
  bool red[8] = {};
  for (int d = 0; d < nd; ++d) red[d] = reduced[d] != 0;
  Layout kept, rl;
  reduce_layouts(nd, shape, strides, red, kept, rl);
  long long nout = numel_of(kept), nred = numel_of(rl);
  return run([=] { reduce_strided_k<float>(kind, out, x, nout, nred, kept, rl, correction); }, grid, 256);
}
// ---- NCHW windows, with the launchers' element counts ----
extern "C" int emu_im2col(float* cols, const float* x, const Window2d* gp, unsigned grid) {
  Window2d g = *gp;
  long long total = g.n * g.c * g.kh * g.kw * g.oh * g.ow;
  return run([=] { im2col_k<float>(cols, x, g, total); }, grid, 256);
}
extern "C" int emu_max_pool2d(int bf, void* out, long long* idx, const void* x, const Window2d* gp, unsigned grid) {
  Window2d g = *gp;
  long long total = g.n * g.c * g.oh * g.ow;
  if (bf) {
    bf16* o = (bf16*)out; const bf16* xp = (const bf16*)x;
    return run([=] { max_pool2d_k<bf16>(o, idx, xp, g, total); }, grid, 256);
  }
  float* o = (float*)out; const float* xp = (const float*)x;
  return run([=] { max_pool2d_k<float>(o, idx, xp, g, total); }, grid, 256);
}
)";

using RmsFn = int (*)(int, int, int, void*, const void*, const void*, long long, long long, float, unsigned);
using LnFn = int (*)(int, int, int, void*, const void*, const void*, const void*, long long, long long, float, unsigned);
using SmFn = int (*)(int, int, int, void*, const void*, long long, long long, unsigned);
using BcastFn = int (*)(int, float*, const float*, const float*, long long, long long, int, unsigned);
using VecFn = int (*)(int, float*, const float*, const float*, long long, unsigned);
using ReduceFn = int (*)(int, int, int, void*, const void*, long long, long long, long long, unsigned);
using cuda_impl::KernelError;
using cuda_impl::Layout;
using MapFn = int (*)(int, int, int, void*, const void*, const void*, long long, const Layout*, unsigned, int*);
using CopyFn = int (*)(int, int, void*, const void*, const Layout*, unsigned);
using ConcatFn = int (*)(float*, int, const int64_t*, int, int, const float* const*, const int64_t*, const int64_t*,
                         unsigned);
using EmbeddingFn = int (*)(int, int, void*, const void*, const void*, long long, long long, long long, long long,
                            KernelError*, unsigned, int*);
using kernels::Window2d;
using Im2colFn = int (*)(float*, const float*, const Window2d*, unsigned);
using MaxPoolFn = int (*)(int, void*, long long*, const void*, const Window2d*, unsigned);
using ReduceStridedFn = int (*)(int, void*, const float*, int, const int64_t*, const int64_t*, const int*, long long,
                                unsigned);

// The source tree the kernels' headers are included from, given by tests/CMakeLists.txt: __FILE__ is
// relative when ccache rewrites paths under its base_dir, so it cannot locate the tree.
std::string src_dir() { return OPSCOPE_TEST_SRC_DIR; }

class CudaKernelsEmu : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::filesystem::temp_directory_path().string() + "/opscope-cuda-kernels-emu-" + std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ + "/k.cpp") << compiler::testing::kCudaEmulatorPrelude << kExtraPrelude << kEntries;
    // An exception here would make GoogleTest mark every test skipped: it is kept in log_
    // for each test's SetUp to fail on.
    try {
      compiler::CxxCompiler cc = compiler::find_compiler("", dir_);
      compiler::BuildResult br =
          compiler::run_compiler(cc, {"-O1", "-std=c++17", "-shared", "-fPIC", "-I" + src_dir()}, dir_ + "/k.cpp",
                                 dir_ + "/k.so", dir_ + "/log.txt", nullptr);
      compiler::read_file(dir_ + "/log.txt", log_);
      if (br.exit_code == 0) lib_ = compiler::Library::open(dir_ + "/k.so", &log_);
    } catch (const std::exception& e) {
      log_ += e.what();
    }
  }
  static void TearDownTestSuite() {
    if (lib_) std::filesystem::remove_all(dir_);
  }
  void SetUp() override { ASSERT_TRUE(lib_) << "building the kernels for the emulator failed:\n" << log_ << "\nin " << dir_; }
  template <class F> static F fn(const char* name) { return reinterpret_cast<F>(lib_->symbol(name)); }

  static inline std::string dir_, log_;
  static inline std::shared_ptr<compiler::Library> lib_;
};

std::vector<float> randoms(size_t n, uint64_t seed, float lo = -2, float hi = 2) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

// Storage of f32 or bf16 values (rounded), with one spare element in front so that the
// data can start misaligned (offset 1) for the scalar paths.
struct Buf {
  bool bf;
  std::vector<float> f;
  std::vector<bf16_t> b;
  int off;
  Buf(const std::vector<float>& v, bool bf16, int offset) : bf(bf16), off(offset) {
    // 16-byte aligned base from std::vector's allocator (operator new aligns to 16).
    if (bf) {
      b.resize(v.size() + 8);
      for (size_t i = 0; i < v.size(); ++i) b[off + i] = f32_to_bf16(v[i]);
    } else {
      f.resize(v.size() + 8);
      for (size_t i = 0; i < v.size(); ++i) f[off + i] = v[i];
    }
  }
  void* ptr() { return bf ? static_cast<void*>(b.data() + off) : static_cast<void*>(f.data() + off); }
  float at(size_t i) const { return bf ? bf16_to_f32(b[off + i]) : f[off + i]; }
};

// The values the kernel reads (bf16-rounded for bf16).
std::vector<float> rounded(const std::vector<float>& v, bool bf) {
  std::vector<float> r = v;
  if (bf)
    for (float& x : r) x = bf16_to_f32(f32_to_bf16(x));
  return r;
}

void expect_near_all(const Buf& y, const std::vector<double>& ref, bool bf, const std::string& what) {
  double tol_rel = bf ? 1.0 / 128 : 2e-5;
  int bad = 0;
  for (size_t i = 0; i < ref.size() && bad < 5; ++i) {
    double tol = tol_rel * std::max(1.0, std::abs(ref[i]));
    if (!(std::abs(y.at(i) - ref[i]) <= tol)) {
      ADD_FAILURE() << what << ": element " << i << " is " << y.at(i) << ", expected " << ref[i];
      ++bad;
    }
  }
}

struct RowCase {
  int64_t rows, cols;
  bool bf;
  int block;  // 0 warp per row, 1 block per row, 2 the row in a block's registers
  bool vec;
};

// The cases: warp rows (cols <= 1024) and block rows, both element types; the vector
// path where cols is a whole number of packs (aligned data), else the scalar path
// (misaligned data). Grid 1 or 2: fewer blocks than rows.
std::vector<RowCase> row_cases() {
  std::vector<RowCase> cs;
  for (bool bf : {false, true}) {
    int pack = bf ? 8 : 4;
    for (int64_t cols : {1, 3, 33, 1024, 1025, 2048}) {
      bool block = cols > 1024;
      cs.push_back({5, cols, bf, block, false});
      if (cols % pack == 0) cs.push_back({5, cols, bf, block, true});
    }
    cs.push_back({3, 40, bf, 1, false});  // block path on a short row: most threads idle
    cs.push_back({3, 64, bf, 1, true});
    // Register rows: 1 to 16 chunks a thread, the last chunks of some threads past the
    // row's end (1032 = 258 f32 packs in 512 slots, 129 bf16 packs in 256; 4104 = 1026
    // f32 packs in 2048).
    for (int64_t cols : {int64_t(1032), int64_t(2048), int64_t(4104), int64_t(16384)})
      if (cols % pack == 0) cs.push_back({5, cols, bf, 2, true});
  }
  return cs;
}

std::string name_of(const RowCase& c) {
  return std::string(c.bf ? "bf16" : "f32") + (c.block == 2 ? " regs" : c.block ? " block" : " warp") + (c.vec ? " vec" : " scalar") +
         " rows=" + std::to_string(c.rows) + " cols=" + std::to_string(c.cols);
}

// Which rows the launchers keep in a block's registers, and in how many chunks a thread.
TEST_F(CudaKernelsEmu, RegisterRowsTakeRowsBetweenAWarpsAndTheRegistersLimit) {
  auto f = fn<int (*)(long long, int)>("emu_reg_row_chunks");
  EXPECT_EQ(f(1024, 4), 0);      // a warp's row
  EXPECT_EQ(f(1028, 4), 2);      // 257 packs: two chunks for some threads
  EXPECT_EQ(f(4096, 4), 4);
  EXPECT_EQ(f(4100, 4), 8);
  EXPECT_EQ(f(8192, 4), 8);
  EXPECT_EQ(f(16384, 4), 16);
  EXPECT_EQ(f(16388, 4), 0);     // past 16 chunks: the two-pass block kernel
  EXPECT_EQ(f(4098, 4), 0);      // not a whole number of packs
  EXPECT_EQ(f(2048, 2), 1);      // bf16: 256 packs, one each
  EXPECT_EQ(f(32768, 2), 16);
  EXPECT_EQ(f(32776, 2), 0);
}

TEST_F(CudaKernelsEmu, RmsNormMatchesReference) {
  auto f = fn<RmsFn>("emu_rms_norm");
  for (const RowCase& c : row_cases()) {
    for (bool with_w : {true, false}) {
      int64_t n = c.rows * c.cols;
      std::vector<float> xv = randoms(n, 1 + c.cols), wv = randoms(c.cols, 2 + c.cols, 0.5f, 1.5f);
      Buf x(xv, c.bf, c.vec ? 0 : 1), w(wv, c.bf, 0), y(std::vector<float>(n), c.bf, c.vec ? 0 : 1);
      ASSERT_EQ(f(c.bf, c.block, c.vec, y.ptr(), x.ptr(), with_w ? w.ptr() : nullptr, c.rows, c.cols, 1e-5f, 2), 0)
          << name_of(c);
      std::vector<float> xr = rounded(xv, c.bf), wr = rounded(wv, c.bf);
      std::vector<double> ref(n);
      for (int64_t r = 0; r < c.rows; ++r) {
        double ss = 0;
        for (int64_t j = 0; j < c.cols; ++j) ss += double(xr[r * c.cols + j]) * xr[r * c.cols + j];
        double inv = 1.0 / std::sqrt(ss / double(c.cols) + 1e-5);
        for (int64_t j = 0; j < c.cols; ++j) ref[r * c.cols + j] = xr[r * c.cols + j] * inv * (with_w ? wr[j] : 1.0);
      }
      expect_near_all(y, ref, c.bf, "rms_norm " + name_of(c) + (with_w ? " weight" : ""));
    }
  }
}

TEST_F(CudaKernelsEmu, LayerNormMatchesReference) {
  auto f = fn<LnFn>("emu_layer_norm");
  for (const RowCase& c : row_cases()) {
    int64_t n = c.rows * c.cols;
    std::vector<float> xv = randoms(n, 3 + c.cols, 1, 3), wv = randoms(c.cols, 4 + c.cols), bv = randoms(c.cols, 5);
    Buf x(xv, c.bf, c.vec ? 0 : 1), w(wv, c.bf, 0), b(bv, c.bf, 0), y(std::vector<float>(n), c.bf, c.vec ? 0 : 1);
    ASSERT_EQ(f(c.bf, c.block, c.vec, y.ptr(), x.ptr(), w.ptr(), b.ptr(), c.rows, c.cols, 1e-5f, 1), 0) << name_of(c);
    std::vector<float> xr = rounded(xv, c.bf), wr = rounded(wv, c.bf), br = rounded(bv, c.bf);
    std::vector<double> ref(n);
    for (int64_t r = 0; r < c.rows; ++r) {
      double mu = 0, var = 0;
      for (int64_t j = 0; j < c.cols; ++j) mu += xr[r * c.cols + j];
      mu /= double(c.cols);
      for (int64_t j = 0; j < c.cols; ++j) var += (xr[r * c.cols + j] - mu) * (xr[r * c.cols + j] - mu);
      double inv = 1.0 / std::sqrt(var / double(c.cols) + 1e-5);
      for (int64_t j = 0; j < c.cols; ++j) ref[r * c.cols + j] = (xr[r * c.cols + j] - mu) * inv * wr[j] + br[j];
    }
    // The reference of a 1-column row is exactly the bias; of a constant row too.
    expect_near_all(y, ref, c.bf, "layer_norm " + name_of(c));
  }
}

TEST_F(CudaKernelsEmu, SoftmaxMatchesReference) {
  auto f = fn<SmFn>("emu_softmax");
  for (const RowCase& c : row_cases()) {
    if (c.block == 2 || (c.block && c.vec)) continue;  // the block softmax has one (scalar) path
    int64_t n = c.rows * c.cols;
    std::vector<float> xv = randoms(n, 6 + c.cols, -8, 8);
    Buf x(xv, c.bf, c.vec ? 0 : 1), y(std::vector<float>(n), c.bf, c.vec ? 0 : 1);
    ASSERT_EQ(f(c.bf, c.block, c.vec, y.ptr(), x.ptr(), c.rows, c.cols, 2), 0) << name_of(c);
    std::vector<float> xr = rounded(xv, c.bf);
    std::vector<double> ref(n);
    for (int64_t r = 0; r < c.rows; ++r) {
      double m = -INFINITY, s = 0;
      for (int64_t j = 0; j < c.cols; ++j) m = std::max(m, double(xr[r * c.cols + j]));
      for (int64_t j = 0; j < c.cols; ++j) s += std::exp(xr[r * c.cols + j] - m);
      for (int64_t j = 0; j < c.cols; ++j) ref[r * c.cols + j] = std::exp(xr[r * c.cols + j] - m) / s;
    }
    expect_near_all(y, ref, c.bf, "softmax " + name_of(c));
  }
}

TEST_F(CudaKernelsEmu, BroadcastBinaryMatchesReference) {
  auto bcast = fn<BcastFn>("emu_binary_bcast");
  auto vec = fn<VecFn>("emu_binary_vec");
  constexpr int kSub = 1, kMaximum = 5, kPow = 4;
  for (int op : {kSub, kMaximum, kPow}) {
    for (int b_row : {1, 0}) {
      int64_t rows = 7, cols = 33;
      std::vector<float> a = randoms(rows * cols, 7, 0.5f, 2), b = randoms(b_row ? cols : rows, 8, 0.5f, 2);
      std::vector<float> out(rows * cols, -1);
      ASSERT_EQ(bcast(op, out.data(), a.data(), b.data(), rows, cols, b_row, 1), 0);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < cols; ++j) {
          double x = a[r * cols + j], y = b_row ? b[j] : b[r];
          double ref = op == kSub ? x - y : op == kMaximum ? std::max(x, y) : std::pow(x, y);
          EXPECT_NEAR(out[r * cols + j], ref, 1e-5 * std::max(1.0, std::abs(ref))) << op << " " << r << "," << j;
        }
    }
  }
  // 128-bit path: 37 elements = 9 packs and a tail of 1, two blocks of 256 threads.
  std::vector<float> a = randoms(37, 9), b = randoms(37, 10), out(37, -1);
  ASSERT_EQ(vec(kSub, out.data(), a.data(), b.data(), 37, 2), 0);
  for (int i = 0; i < 37; ++i) EXPECT_FLOAT_EQ(out[i], a[i] - b[i]) << i;
}

// A GPU op's value against the CPU kernel's: NaN for NaN, infinities equal, else within 2e-6.
void expect_same(float got, float want, const std::string& what) {
  if (std::isnan(want)) EXPECT_TRUE(std::isnan(got)) << what << " = " << got << ", not NaN";
  else if (std::isinf(want)) EXPECT_EQ(got, want) << what;
  else EXPECT_NEAR(got, want, 2e-6 * std::max(1.0f, std::fabs(want))) << what;
}

// Each op of cpu_kernels::UnaryOp, by its value, computes on the GPU what the CPU kernel
// computes: an op the CUDA switch lacks returned x unchanged (floor to erf did, silently).
TEST_F(CudaKernelsEmu, EveryUnaryOpMatchesTheCpuKernel) {
  auto unary = fn<float (*)(int, float)>("emu_unary");
  const int ops = fn<int (*)()>("emu_unary_ops")();
  EXPECT_EQ(ops, cpu_kernels::kUnaryOpCount) << "the CUDA op codes and cpu_kernels::UnaryOp differ in length";
  const std::vector<float> xs = {-3.7f, -2.5f, -1.0f, -0.5f, -0.0f, 0.0f, 0.3f, 0.5f, 1.5f, 2.5f, 7.25f, 40.0f};
  Tensor x = from_host(xs, {int64_t(xs.size())});
  for (int op = 0; op < ops; ++op) {
    const auto kind = cpu_kernels::UnaryOp(op);
    Tensor want = runtime::allocate(x.shape(), DType::f32, x.device());
    runtime::launch(x.device(), cpu_kernels::unary_spec(kind, want, x), {&x}, {&want});
    std::vector<float> w = want.to_vector<float>();
    for (size_t i = 0; i < xs.size(); ++i) {
      expect_same(unary(op, xs[i]), w[i], fmt::format("{}({}) on the GPU", cpu_kernels::op_name(kind), xs[i]));
    }
  }
}

TEST_F(CudaKernelsEmu, EveryBinaryOpMatchesTheCpuKernel) {
  auto binary = fn<float (*)(int, float, float)>("emu_binary");
  const int ops = fn<int (*)()>("emu_binary_ops")();
  EXPECT_EQ(ops, int(cpu_kernels::BinaryOp::remainder) + 1) << "the CUDA op codes and cpu_kernels::BinaryOp differ in length";
  const std::vector<float> as = {-7.5f, -3.0f, -0.5f, 0.0f, 2.5f, 5.0f, 9.0f};
  const std::vector<float> bs = {-2.0f, 0.75f, 1.5f, 2.0f, 3.0f};
  std::vector<float> av, bv;
  for (float a : as)
    for (float b : bs) av.push_back(a), bv.push_back(b);
  Tensor a = from_host(av, {int64_t(av.size())}), b = from_host(bv, {int64_t(bv.size())});
  for (int op = 0; op < ops; ++op) {
    const auto kind = cpu_kernels::BinaryOp(op);
    Tensor want = runtime::allocate(a.shape(), DType::f32, a.device());
    runtime::launch(a.device(), cpu_kernels::binary_spec(kind, want, a, b), {&a, &b}, {&want});
    std::vector<float> w = want.to_vector<float>();
    for (size_t i = 0; i < av.size(); ++i) {
      expect_same(binary(op, av[i], bv[i]), w[i],
                  fmt::format("{}({}, {}) on the GPU", cpu_kernels::op_name(kind), av[i], bv[i]));
    }
  }
}

TEST_F(CudaKernelsEmu, LastAxisReductionsMatchReference) {
  auto f = fn<ReduceFn>("emu_reduce_rows");
  constexpr int kSum = 0, kMax = 2, kVar = 4, kArgmax = 5;
  for (bool bf : {false, true})
    for (int64_t len : {1, 3, 33, 1025, 2000})
      for (int kind : {kSum, kMax, kVar, kArgmax}) {
        bool block = len > 1024;
        int64_t rows = 4;
        std::vector<float> xv = randoms(rows * len, 11 + len);
        if (len > 3) xv[2 * len + len / 2] = 9;  // a clear maximum mid-row
        Buf x(xv, bf, 1);
        std::vector<float> xr = rounded(xv, bf);
        std::vector<int64_t> idx(rows, -1);
        Buf y(std::vector<float>(rows), bf, 0);
        void* out = kind == kArgmax ? static_cast<void*>(idx.data()) : y.ptr();
        ASSERT_EQ(f(kind, block, bf, out, x.ptr(), rows, len, 1, 1), 0);
        for (int64_t r = 0; r < rows; ++r) {
          const float* row = xr.data() + r * len;
          double s = 0, m = row[0];
          int64_t am = 0;
          for (int64_t j = 0; j < len; ++j) {
            s += row[j];
            if (row[j] > m) m = row[j], am = j;
          }
          double mu = s / double(len), v = 0;
          for (int64_t j = 0; j < len; ++j) v += (row[j] - mu) * (row[j] - mu);
          std::string what = std::string(bf ? "bf16" : "f32") + " kind " + std::to_string(kind) + " len " +
                             std::to_string(len) + " row " + std::to_string(r);
          if (kind == kArgmax) {
            EXPECT_EQ(idx[r], am) << what;
            continue;
          }
          double ref = kind == kSum ? s : kind == kMax ? m : (len > 1 ? v / double(len - 1) : NAN);
          if (std::isnan(ref)) {
            EXPECT_TRUE(std::isnan(y.at(r))) << what;
            continue;
          }
          double tol = (bf ? 1.0 / 128 : 1e-4) * std::max(1.0, std::abs(ref));
          EXPECT_NEAR(y.at(r), ref, tol) << what;
        }
      }
}

// ---- elementwise, casts, concat, embedding, strided reductions ----

enum { kPathStrided, kPathVec, kPathFlat };  // dev::MapPath

float round_to(float v, bool bf) { return bf ? bf16_to_f32(f32_to_bf16(v)) : v; }

// Row-major strides of `shape`.
std::vector<int64_t> row_major(const std::vector<int64_t>& shape) {
  std::vector<int64_t> st(shape.size());
  int64_t s = 1;
  for (int d = int(shape.size()) - 1; d >= 0; --d) st[d] = s, s *= shape[d];
  return st;
}

// Offset of row-major index i of `shape` under `strides`.
int64_t offset_of(int64_t i, const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
  int64_t off = 0;
  for (int d = int(shape.size()) - 1; d >= 0; --d) {
    off += (i % shape[d]) * strides[d];
    i /= shape[d];
  }
  return off;
}

TEST_F(CudaKernelsEmu, ElementwiseVectorPathNeedsEveryOperandAligned) {
  auto f = fn<MapFn>("emu_map");
  constexpr int kSub = 1, kExp = 2;
  for (bool bf : {false, true})
    for (int64_t n : {1, 3, 37, 4097})
      for (int misaligned : {-1, 0, 1, 2}) {  // none, out, a, b: one element past a 16-byte boundary
        std::string what = std::string(bf ? "bf16" : "f32") + " n=" + std::to_string(n) + " misaligned operand " +
                           std::to_string(misaligned);
        Buf a(randoms(size_t(n), 20 + n), bf, misaligned == 1), b(randoms(size_t(n), 21 + n), bf, misaligned == 2);
        Buf out(std::vector<float>(size_t(n), -1), bf, misaligned == 0);
        // A canary after the last element: the vector path's tail must stop at n.
        if (bf) out.b[out.off + n] = f32_to_bf16(12345);
        else out.f[out.off + n] = 12345;
        int path = -1;
        ASSERT_EQ(f(bf, 2, kSub, out.ptr(), a.ptr(), b.ptr(), n, nullptr, 2, &path), 0) << what;
        EXPECT_EQ(path, misaligned < 0 ? kPathVec : kPathFlat) << what;
        int bad = 0;
        for (int64_t i = 0; i < n && bad < 5; ++i)
          if (out.at(i) != round_to(a.at(i) - b.at(i), bf)) {
            ADD_FAILURE() << what << ": element " << i << " is " << out.at(i) << ", expected " << a.at(i) - b.at(i);
            ++bad;
          }
        EXPECT_EQ(out.at(n), round_to(12345, bf)) << what << ": written past the end";
        // Unary: b is not loaded, so only out and a decide the path.
        Buf u(std::vector<float>(size_t(n), -1), bf, misaligned == 0);
        ASSERT_EQ(f(bf, 1, kExp, u.ptr(), a.ptr(), nullptr, n, nullptr, 1, &path), 0) << what;
        EXPECT_EQ(path, misaligned == 0 || misaligned == 1 ? kPathFlat : kPathVec) << what;
        for (int64_t i = 0; i < n; ++i)
          EXPECT_NEAR(u.at(i), std::exp(a.at(i)), (bf ? 1.0 / 128 : 1e-6) * std::exp(a.at(i))) << what << " exp " << i;
      }
}

TEST_F(CudaKernelsEmu, StridedAndBroadcastOperandsInFiveDims) {
  auto f = fn<MapFn>("emu_map");
  constexpr int kMaximum = 5, kNeg = 0;
  // out (2, 3, 1, 4, 5); a: a (5, 4, 1, 3, 2) tensor with its dims reversed (a permuted
  // view); b: (3, 1, 1, 5) broadcast (stride 0 on dims 0, 2 and 3).
  std::vector<int64_t> shape{2, 3, 1, 4, 5};
  std::vector<int64_t> a_st{1, 2, 6, 6, 24}, b_st{0, 5, 0, 0, 1}, o_st = row_major(shape);
  int64_t n = 120;
  for (bool bf : {false, true}) {
    Layout l;
    l.ndim = 5;
    for (int d = 0; d < 5; ++d) {
      l.shape[d] = shape[d];
      l.stride[0][d] = o_st[d];
      l.stride[1][d] = a_st[d];
      l.stride[2][d] = b_st[d];
    }
    Buf a(randoms(120, 30), bf, 0), b(randoms(15, 31), bf, 0), out(std::vector<float>(120, -1), bf, 0);
    int path = -1;
    ASSERT_EQ(f(bf, 2, kMaximum, out.ptr(), a.ptr(), b.ptr(), n, &l, 3, &path), 0);
    EXPECT_EQ(path, kPathStrided);
    for (int64_t i = 0; i < n; ++i)
      EXPECT_EQ(out.at(i), std::max(a.at(offset_of(i, shape, a_st)), b.at(offset_of(i, shape, b_st))))
          << (bf ? "bf16 " : "f32 ") << "element " << i;
    Buf u(std::vector<float>(120, -1), bf, 1);  // a misaligned output takes the strided path all the same
    ASSERT_EQ(f(bf, 1, kNeg, u.ptr(), a.ptr(), nullptr, n, &l, 1, &path), 0);
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(u.at(i), -a.at(offset_of(i, shape, a_st))) << "neg " << i;
  }
}

TEST_F(CudaKernelsEmu, CastsBetweenF32Bf16AndF16) {
  auto f = fn<CopyFn>("emu_copy");
  std::vector<float> v = {1.0f, 1.00390625f, 1.01171875f, 3.14159265f, -2.5e-3f, 65504.0f, 1e30f, -1e-30f, 0.0f,
                          -0.0f, INFINITY, -INFINITY, NAN};
  for (float x : randoms(24, 40, -100, 100)) v.push_back(x);
  int64_t n = int64_t(v.size());  // 37
  std::vector<bf16_t> bsrc(v.size());
  for (size_t i = 0; i < v.size(); ++i) bsrc[i] = f32_to_bf16(v[i]);
  Layout flat;
  flat.ndim = 1;
  flat.shape[0] = n;
  flat.stride[0][0] = flat.stride[1][0] = 1;
  auto same = [](float x, float y) { return (std::isnan(x) && std::isnan(y)) || std::memcmp(&x, &y, 4) == 0; };
  // f32 -> bf16: round to nearest even, NaN stays NaN.
  std::vector<bf16_t> b(v.size());
  ASSERT_EQ(f(1, 0, b.data(), v.data(), &flat, 1), 0);
  for (size_t i = 0; i < v.size(); ++i)
    EXPECT_TRUE(same(bf16_to_f32(b[i]), bf16_to_f32(f32_to_bf16(v[i])))) << "f32->bf16 " << v[i];
  // bf16 -> f32: exact.
  std::vector<float> back(v.size(), -1);
  ASSERT_EQ(f(0, 1, back.data(), bsrc.data(), &flat, 1), 0);
  for (size_t i = 0; i < v.size(); ++i) EXPECT_TRUE(same(back[i], bf16_to_f32(bsrc[i]))) << "bf16->f32 " << i;
  // f32 -> f16 and bf16 -> f16 (through f32): overflow to inf as IEEE says.
  std::vector<f16_t> h(v.size());
  ASSERT_EQ(f(2, 0, h.data(), v.data(), &flat, 2), 0);
  for (size_t i = 0; i < v.size(); ++i) EXPECT_TRUE(same(float(h[i]), float(f16_t(v[i])))) << "f32->f16 " << v[i];
  ASSERT_EQ(f(2, 1, h.data(), bsrc.data(), &flat, 2), 0);
  for (size_t i = 0; i < v.size(); ++i)
    EXPECT_TRUE(same(float(h[i]), float(f16_t(bf16_to_f32(bsrc[i]))))) << "bf16->f16 " << i;
  // A transposed source (a (7, 5) tensor viewed as (5, 7)) into a contiguous bf16 output.
  std::vector<float> src = randoms(35, 41);
  Layout t;
  t.ndim = 2;
  t.shape[0] = 5, t.shape[1] = 7;
  t.stride[0][0] = 7, t.stride[0][1] = 1;
  t.stride[1][0] = 1, t.stride[1][1] = 5;
  std::vector<bf16_t> bt(35);
  ASSERT_EQ(f(1, 0, bt.data(), src.data(), &t, 1), 0);
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 7; ++j)
      EXPECT_EQ(bt[i * 7 + j].bits, f32_to_bf16(src[j * 5 + i]).bits) << "transposed cast " << i << "," << j;
  // Same dtype: the bits, through the same layout.
  std::vector<bf16_t> bsrc35(35), bcopy(35);
  for (int i = 0; i < 35; ++i) bsrc35[i] = f32_to_bf16(src[i]);
  ASSERT_EQ(f(1, 1, bcopy.data(), bsrc35.data(), &t, 1), 0);
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 7; ++j) EXPECT_EQ(bcopy[i * 7 + j].bits, bsrc35[j * 5 + i].bits) << i << "," << j;
}

// Which copies the launcher hands to cudaMemcpyAsync: both sides row-major without gaps.
TEST(CudaLayout, DenseRowMajorOperandsCopyAsOneMemcpy) {
  cuda_impl::Layout l;
  l.ndim = 3;
  int64_t shape[3] = {2, 3, 4}, dense[3] = {12, 4, 1};
  for (int d = 0; d < 3; ++d) l.shape[d] = shape[d], l.stride[0][d] = dense[d], l.stride[1][d] = dense[d];
  EXPECT_TRUE(cuda_impl::dense_row_major(l, 0));
  EXPECT_TRUE(cuda_impl::dense_row_major(l, 1));
  l.stride[1][1] = 1, l.stride[1][2] = 3;  // a transposed source: strided kernel
  EXPECT_FALSE(cuda_impl::dense_row_major(l, 1));
  l.stride[1][1] = 8, l.stride[1][2] = 1;  // rows of a wider tensor: a gap after each row
  EXPECT_FALSE(cuda_impl::dense_row_major(l, 1));
  l.stride[1][0] = 0, l.stride[1][1] = 4;  // broadcast along dim 0
  EXPECT_FALSE(cuda_impl::dense_row_major(l, 1));
  l.shape[0] = 1;  // ... which has size 1: any stride walks the same memory
  EXPECT_TRUE(cuda_impl::dense_row_major(l, 1));
  cuda_impl::Layout scalar;  // 0 dims: one element
  EXPECT_TRUE(cuda_impl::dense_row_major(scalar, 0));
}

TEST_F(CudaKernelsEmu, ConcatOfViewsAndEmptyInputs) {
  auto f = fn<ConcatFn>("emu_concat");
  // Along axis 1: (3, 2) contiguous, (3, 0) empty, (3, 5) a transposed (5, 3) tensor.
  std::vector<float> x0 = randoms(6, 50), x2 = randoms(15, 51);
  std::vector<int64_t> out_shape{3, 7}, shapes{3, 2, 3, 0, 3, 5}, strides{2, 1, 0, 1, 1, 3};
  const float* xs[] = {x0.data(), x0.data(), x2.data()};
  std::vector<float> out(21 + 1, -1);
  out[21] = 12345;
  ASSERT_EQ(f(out.data(), 2, out_shape.data(), 1, 3, xs, shapes.data(), strides.data(), 2), 0);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 7; ++j) {
      float want = j < 2 ? x0[i * 2 + j] : x2[(j - 2) * 3 + i];
      EXPECT_EQ(out[i * 7 + j], want) << "axis 1 at " << i << "," << j;
    }
  EXPECT_EQ(out[21], 12345) << "written past the end";
  // Along axis 0 of 3-d: (1, 2, 3) and (3, 2, 3) sliced with a row stride of 4 (x[..., :3]).
  std::vector<float> y0 = randoms(6, 52), y1 = randoms(24, 53);
  std::vector<int64_t> out3{4, 2, 3}, shapes3{1, 2, 3, 3, 2, 3}, strides3{6, 3, 1, 8, 4, 1};
  const float* ys[] = {y0.data(), y1.data()};
  std::vector<float> o3(24, -1);
  ASSERT_EQ(f(o3.data(), 3, out3.data(), 0, 2, ys, shapes3.data(), strides3.data(), 1), 0);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t k = 0; k < 3; ++k) {
        float want = i == 0 ? y0[j * 3 + k] : y1[(i - 1) * 8 + j * 4 + k];
        EXPECT_EQ(o3[(i * 2 + j) * 3 + k], want) << "axis 0 at " << i << "," << j << "," << k;
      }
}

TEST_F(CudaKernelsEmu, EmbeddingRowsAndBadIndexReport) {
  auto f = fn<EmbeddingFn>("emu_embedding");
  const int64_t V = 5;
  for (bool bf : {false, true})
    for (int idx_bytes : {4, 8})
      for (int64_t D : {6, 8, 16})
        for (int64_t pad : {0, 8}) {  // table rows D + pad apart (a column slice of a wider table)
          int64_t ws = D + pad, pack = bf ? 8 : 4;
          std::string what = std::string(bf ? "bf16" : "f32") + " i" + std::to_string(idx_bytes * 8) +
                             " D=" + std::to_string(D) + " row stride " + std::to_string(ws);
          Buf w(randoms(size_t(V * ws), 60 + D), bf, 0);
          for (bool with_bad : {false, true}) {
            std::vector<int64_t> ids = with_bad ? std::vector<int64_t>{0, 4, 7, 2, -1, 4} : std::vector<int64_t>{3, 0, 4};
            int64_t n = int64_t(ids.size());
            std::vector<int32_t> i32(ids.begin(), ids.end());
            const void* idx = idx_bytes == 4 ? static_cast<const void*>(i32.data()) : ids.data();
            Buf out(std::vector<float>(size_t(n * D), -1), bf, 0);
            KernelError err{};
            int vec = -1;
            ASSERT_EQ(f(bf, idx_bytes, out.ptr(), w.ptr(), idx, n, D, V, ws, &err, 2, &vec), 0) << what;
            EXPECT_EQ(vec, D % pack == 0 && ws % pack == 0) << what;
            for (int64_t r = 0; r < n; ++r) {
              bool ok = ids[r] >= 0 && ids[r] < V;
              for (int64_t j = 0; j < D; ++j)
                EXPECT_EQ(out.at(r * D + j), ok ? w.at(ids[r] * ws + j) : 0.0f) << what << " row " << r << " col " << j;
            }
            if (with_bad) {
              EXPECT_EQ(err.code, 1) << what;
              EXPECT_TRUE(err.a == 7 || err.a == -1) << what << ": reported index " << err.a;
              EXPECT_EQ(err.b, V) << what;
            } else {
              EXPECT_EQ(err.code, 0) << what;
            }
          }
        }
}

TEST_F(CudaKernelsEmu, ReductionsOverLeadingAxesMatchReference) {
  auto f = fn<ReduceStridedFn>("emu_reduce_strided");
  constexpr int kSum = 0, kMean = 1, kMax = 2, kMin = 3, kVar = 4, kArgmax = 5;
  // x (5, 3, 4) contiguous; column (1, 2) constant (argmax: the first index), column
  // (2, 3) with its maximum at i = 1 and i = 3 (the first wins, as on the CPU device).
  std::vector<float> x = randoms(60, 70);
  for (int i = 0; i < 5; ++i) x[i * 12 + 1 * 4 + 2] = 0.5f;
  x[1 * 12 + 2 * 4 + 3] = x[3 * 12 + 2 * 4 + 3] = 7.0f;
  struct Case {
    std::string name;
    std::vector<int64_t> shape, strides;
    std::vector<int> reduced;
  };
  std::vector<Case> cases = {
      {"axis 0 of (5, 3, 4)", {5, 3, 4}, {12, 4, 1}, {1, 0, 0}},
      {"axes 0, 2 of (5, 3, 4)", {5, 3, 4}, {12, 4, 1}, {1, 0, 1}},
      {"axis 1 of a permuted (4, 3, 5) view", {4, 3, 5}, {1, 4, 12}, {0, 1, 0}},
      {"axis 2 (stored axis 0) of the permuted view", {4, 3, 5}, {1, 4, 12}, {0, 0, 1}},
  };
  for (const Case& c : cases)
    for (int kind : {kSum, kMean, kMax, kMin, kVar, kArgmax}) {
      std::string what = c.name + " kind " + std::to_string(kind);
      std::vector<int64_t> kept_shape, kept_st, red_shape, red_st;
      for (int d = 0; d < 3; ++d) {
        (c.reduced[d] ? red_shape : kept_shape).push_back(c.shape[d]);
        (c.reduced[d] ? red_st : kept_st).push_back(c.strides[d]);
      }
      int64_t nout = 1, nred = 1;
      for (int64_t s : kept_shape) nout *= s;
      for (int64_t s : red_shape) nred *= s;
      std::vector<float> out(size_t(nout), -1);
      std::vector<int64_t> idx(size_t(nout), -1);
      void* op = kind == kArgmax ? static_cast<void*>(idx.data()) : out.data();
      ASSERT_EQ(f(kind, op, x.data(), 3, c.shape.data(), c.strides.data(), c.reduced.data(), 1, 2), 0) << what;
      for (int64_t o = 0; o < nout; ++o) {
        int64_t base = offset_of(o, kept_shape, kept_st);
        std::vector<double> v;
        for (int64_t k = 0; k < nred; ++k) v.push_back(x[size_t(base + offset_of(k, red_shape, red_st))]);
        double s = 0, mx = v[0], mn = v[0];
        int64_t am = 0;
        for (size_t k = 0; k < v.size(); ++k) {
          s += v[k];
          mn = std::min(mn, v[k]);
          if (v[k] > mx) mx = v[k], am = int64_t(k);
        }
        double mu = s / double(nred), sq = 0;
        for (double e : v) sq += (e - mu) * (e - mu);
        if (kind == kArgmax) {
          EXPECT_EQ(idx[o], am) << what << " output " << o;
          continue;
        }
        double want = kind == kSum ? s : kind == kMean ? mu : kind == kMax ? mx : kind == kMin ? mn : sq / double(nred - 1);
        EXPECT_NEAR(out[o], want, 1e-5 * std::max(1.0, std::abs(want))) << what << " output " << o;
      }
    }
}

TEST_F(CudaKernelsEmu, ArgmaxTiesTakeTheFirstIndexOnBothRowPaths) {
  auto f = fn<ReduceFn>("emu_reduce_rows");
  constexpr int kArgmax = 5;
  for (int64_t len : {64, 1500}) {  // warp per row, block per row
    bool block = len > 1024;
    // Row 0 constant; row 1 its maximum at 40 and 5 (other lanes, other warps); row 2 at
    // len - 1 and 33; row 3 NaN at 50 and 9 (NaN wins, first NaN).
    std::vector<float> x = randoms(size_t(4 * len), 80, -1, 1);
    for (int64_t j = 0; j < len; ++j) x[j] = 0.25f;
    x[len + 40] = x[len + 5] = 3.0f;
    x[2 * len + len - 1] = x[2 * len + 33] = 3.0f;
    x[3 * len + 50] = x[3 * len + 9] = NAN;
    std::vector<int64_t> idx(4, -1);
    ASSERT_EQ(f(kArgmax, block, 0, idx.data(), x.data(), 4, len, 0, 2), 0);
    EXPECT_EQ(idx, (std::vector<int64_t>{0, 5, 33, 9})) << "len " << len;
  }
}

// im2col: every column entry is the input under its window position (0 in the padding),
// at the (n, c * taps + tap, pixel) position the cuBLAS gemm reads; grid 3 is fewer
// blocks than the work.
TEST_F(CudaKernelsEmu, Im2colMatchesReference) {
  auto f = fn<Im2colFn>("emu_im2col");
  Window2d g;
  g.n = 2, g.c = 3, g.h = 6, g.w = 7, g.kh = 3, g.kw = 2;
  g.sh = 2, g.sw = 1, g.ph = 2, g.pw = 2, g.dh = 1, g.dw = 3;
  g.oh = kernels::window_out_size(g.h, g.kh, g.sh, g.ph, g.dh, false);
  g.ow = kernels::window_out_size(g.w, g.kw, g.sw, g.pw, g.dw, false);
  ASSERT_EQ(g.oh, 4);  // windows reach into the padding on all four sides
  ASSERT_EQ(g.ow, 8);
  std::vector<float> x = randoms(size_t(g.n * g.c * g.h * g.w), 90);
  int64_t taps = g.kh * g.kw, P = g.oh * g.ow;
  std::vector<float> cols(size_t(g.n * g.c * taps * P), -7);
  ASSERT_EQ(f(cols.data(), x.data(), &g, 3), 0);
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t c = 0; c < g.c; ++c)
      for (int64_t a = 0; a < g.kh; ++a)
        for (int64_t b = 0; b < g.kw; ++b)
          for (int64_t i = 0; i < g.oh; ++i)
            for (int64_t j = 0; j < g.ow; ++j) {
              int64_t iy = i * g.sh - g.ph + a * g.dh, ix = j * g.sw - g.pw + b * g.dw;
              bool in = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w;
              float want = in ? x[size_t(((n * g.c + c) * g.h + iy) * g.w + ix)] : 0.0f;
              size_t at = size_t(((n * g.c + c) * taps + a * g.kw + b) * P + i * g.ow + j);
              ASSERT_EQ(cols[at], want) << "n " << n << " c " << c << " tap " << a << "," << b << " pixel " << i << "," << j;
            }
}

// max_pool2d: the window's maximum copied exactly, its first position (a NaN wins), with
// and without indices, f32 and bf16, padding and ceil_mode's partial last window.
TEST_F(CudaKernelsEmu, MaxPool2dMatchesReference) {
  auto f = fn<MaxPoolFn>("emu_max_pool2d");
  Window2d g;
  g.n = 1, g.c = 2, g.h = 7, g.w = 6, g.kh = 3, g.kw = 3;
  g.sh = 2, g.sw = 2, g.ph = 1, g.pw = 1;
  g.oh = kernels::window_out_size(g.h, g.kh, g.sh, g.ph, g.dh, true);
  g.ow = kernels::window_out_size(g.w, g.kw, g.sw, g.pw, g.dw, true);
  ASSERT_EQ(g.oh, 4);
  ASSERT_EQ(g.ow, 4);  // rounded down it would be 3: the last window holds column 5 alone
  std::vector<float> xv = randoms(size_t(g.c * g.h * g.w), 91);
  xv[2] = NAN;  // in window (0, 1) of plane 0
  for (bool bf : {false, true})
    for (bool with_idx : {true, false}) {
      Buf x(xv, bf, 0), y(std::vector<float>(size_t(g.c * g.oh * g.ow)), bf, 0);
      std::vector<long long> idx(size_t(g.c * g.oh * g.ow), -5);
      ASSERT_EQ(f(bf, y.ptr(), with_idx ? idx.data() : nullptr, x.ptr(), &g, 2), 0);
      std::vector<float> xr = rounded(xv, bf);
      for (int64_t p = 0; p < g.c; ++p)
        for (int64_t i = 0; i < g.oh; ++i)
          for (int64_t j = 0; j < g.ow; ++j) {
            float best = -INFINITY;
            int64_t at = -1;
            for (int64_t a = 0; a < g.kh; ++a)
              for (int64_t b = 0; b < g.kw; ++b) {
                int64_t iy = i * g.sh - g.ph + a, ix = j * g.sw - g.pw + b;
                if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
                float v = xr[size_t(p * g.h * g.w + iy * g.w + ix)];
                if (at < 0 || v > best || std::isnan(v)) best = v, at = iy * g.w + ix;
              }
            size_t o = size_t((p * g.oh + i) * g.ow + j);
            std::string what = std::string(bf ? "bf16" : "f32") + " plane " + std::to_string(p) + " output " +
                               std::to_string(i) + "," + std::to_string(j);
            if (std::isnan(best)) EXPECT_TRUE(std::isnan(y.at(o))) << what;
            else EXPECT_EQ(y.at(o), best) << what;
            EXPECT_EQ(idx[o], with_idx ? at : -5) << what;
          }
    }
}

}  // namespace
