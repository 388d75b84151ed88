// The CUDA device's kernels (src/opscope/cuda/*.cuh) without a GPU: their device code is
// built for the host under the fiber emulator (cuda_emulator.h), each GPU thread a
// fiber, and run at small odd sizes against a double-precision reference. Covers the
// warp-per-row and block-per-row paths, 128-bit and scalar paths, f32 and bf16, grids
// smaller than the work (grid-stride loops). Needs a host C++ compiler, not CUDA.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "cuda_emulator.h"
#include "opscope/compiler/build.h"
#include "opscope/compiler/cache.h"
#include "opscope/core/dtype.h"

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
using namespace opscope::cuda_impl;
using namespace opscope::cuda_impl::dev;
template <class F> static F* g_fn;
template <class F> static void call_fn(void*) { (*g_fn<F>)(); }
template <class F> static int run(F f, unsigned grid, unsigned block) {
  g_fn<F> = &f;
  void* arg = 0;
  return ofs_emu_launch((void*)&call_fn<F>, 1, &arg, grid, block);
}
#define PATHS(T, KERNEL, ...)                                                             \
  (block ? (vec ? run([=] { KERNEL##_block<T, true>(__VA_ARGS__); }, grid, kRowBlock)   \
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
)";

using RmsFn = int (*)(int, int, int, void*, const void*, const void*, long long, long long, float, unsigned);
using LnFn = int (*)(int, int, int, void*, const void*, const void*, const void*, long long, long long, float, unsigned);
using SmFn = int (*)(int, int, int, void*, const void*, long long, long long, unsigned);
using BcastFn = int (*)(int, float*, const float*, const float*, long long, long long, int, unsigned);
using VecFn = int (*)(int, float*, const float*, const float*, long long, unsigned);
using ReduceFn = int (*)(int, int, int, void*, const void*, long long, long long, long long, unsigned);

// The source tree, from this file's path: the kernels' headers are included from it.
std::string src_dir() { return std::filesystem::path(__FILE__).parent_path().parent_path().string() + "/src"; }

class CudaKernelsEmu : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::filesystem::temp_directory_path().string() + "/opscope-cuda-kernels-emu-" + std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ + "/k.cpp") << compiler::testing::kCudaEmulatorPrelude << kExtraPrelude << kEntries;
    compiler::CxxCompiler cc = compiler::find_compiler("", dir_);
    compiler::BuildResult br =
        compiler::run_compiler(cc, {"-O1", "-std=c++17", "-shared", "-fPIC", "-I" + src_dir()}, dir_ + "/k.cpp",
                               dir_ + "/k.so", dir_ + "/log.txt", nullptr);
    compiler::read_file(dir_ + "/log.txt", log_);
    if (br.exit_code == 0) lib_ = compiler::Library::open(dir_ + "/k.so", &log_);
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
  bool block;  // block per row (else warp per row)
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
    cs.push_back({3, 40, bf, true, false});  // block path on a short row: most threads idle
    cs.push_back({3, 64, bf, true, true});
  }
  return cs;
}

std::string name_of(const RowCase& c) {
  return std::string(c.bf ? "bf16" : "f32") + (c.block ? " block" : " warp") + (c.vec ? " vec" : " scalar") +
         " rows=" + std::to_string(c.rows) + " cols=" + std::to_string(c.cols);
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
    if (c.block && c.vec) continue;  // the block softmax has one (scalar) path
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

}  // namespace
