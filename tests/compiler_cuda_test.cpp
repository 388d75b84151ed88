// The CUDA compile path without a GPU. Generated CUDA kernels (RMSNorm, SwiGLU, broadcast
// chains, softmax, layer norm, strided operands, seeded random graphs; f32/bf16/f16; odd
// sizes) are (1) run on the host under the fiber emulator (cuda_emulator.h) against the
// double-precision reference, on the vector path and on the scalar path (misaligned
// pointers), with grids smaller than the work; (2) compiled with NVRTC for sm_90 (PTX
// with every entry, a cubin), cached, broken on purpose. (2) skips without the toolkit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <nlohmann/json.hpp>

#include "compiler_test_util.h"
#include "cuda_emulator.h"
#include "opscope/compiler/build.h"
#include "opscope/compiler/cache.h"
#include "opscope/compiler/codegen_cuda.h"
#include "opscope/compiler/compile_cuda.h"
#include "opscope/compiler/kernel.h"
#include "opscope/compiler/nvrtc.h"
#include "opscope/compiler/passes.h"
#include "opscope/core/error.h"

using namespace opscope;
using namespace opscope::compiler;
using namespace opscope::compiler::testing;

namespace {

#define SKIP_WITHOUT_NVRTC()                                                                       \
  if (!nvrtc_available())                                                                          \
  GTEST_SKIP() << "no CUDA toolkit: CMake did not find it, so this build has no NVRTC"

std::string temp_dir(const std::string& tag) {
  std::string d = std::filesystem::temp_directory_path().string() + "/opscope-" + tag + "-" + std::to_string(::getpid());
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

void optimize(Graph& g) {
  dce(g);
  cse(g);
  fold_constants(g);
  dce(g);
  fuse(g);
}

// silu(g) * u: the SwiGLU gate.
Graph swiglu_graph(const Shape& s, DType dt) {
  Graph g;
  g.name = "swiglu";
  int a = input(g, s, dt), b = input(g, s, dt);
  g.outputs = {binary(g, OpKind::mul, unary(g, OpKind::silu, a), b)};
  return g;
}

// (x + bias) * 0.5 + r: a bias over columns and a value per row.
Graph broadcast_add_graph(int64_t rows, int64_t cols, DType dt) {
  Graph g;
  g.name = "bcast_add";
  int x = input(g, {rows, cols}, dt), b = input(g, {cols}, dt), r = input(g, {rows, 1}, dt);
  g.outputs = {binary(g, OpKind::add, scalar_op(g, OpKind::mul, binary(g, OpKind::add, x, b), 0.5), r)};
  return g;
}

Graph softmax_graph(const Shape& s, DType dt) {
  Graph g;
  g.name = "softmax_ops";
  int x = input(g, s, dt);
  int m = reduce_last(g, OpKind::max, x, true);
  int e = unary(g, OpKind::exp, binary(g, OpKind::sub, x, m));
  g.outputs = {binary(g, OpKind::div, e, reduce_last(g, OpKind::sum, e, true))};
  return g;
}

Graph layer_norm_graph(const Shape& s, DType dt) {
  Graph g;
  g.name = "layer_norm_ops";
  int x = input(g, s, dt), w = input(g, {s.back()}, dt), b = input(g, {s.back()}, dt);
  int mu = reduce_last(g, OpKind::mean, x, true);
  int d = binary(g, OpKind::sub, x, mu);
  int var = reduce_last(g, OpKind::mean, binary(g, OpKind::mul, d, d), true);
  int r = unary(g, OpKind::rsqrt, scalar_op(g, OpKind::add, var, 1e-5));
  g.outputs = {binary(g, OpKind::add, binary(g, OpKind::mul, binary(g, OpKind::mul, d, r), w), b)};
  return g;
}

// x^T (inner stride 33) * y + an expanded column (inner stride 0), then tanh.
Graph strided_graph() {
  Graph g;
  g.name = "strided";
  int xt = g.add_input({33, 7}, Strides{1, 33}, DType::f32);
  int y = input(g, {33, 7});
  int z = g.add_input({33, 7}, Strides{1, 0}, DType::f32);
  g.outputs = {unary(g, OpKind::tanh, binary(g, OpKind::add, binary(g, OpKind::mul, xt, y), z))};
  return g;
}

// y (5, 64) broadcast over the first axis of x (4, 5, 64): row offsets need div/mod;
// results: the product and its row sums.
Graph mid_broadcast_graph() {
  Graph g;
  g.name = "mid_bcast";
  int x = input(g, {4, 5, 64}), y = input(g, {5, 64});
  int p = binary(g, OpKind::mul, x, y);
  int s = reduce_last(g, OpKind::sum, p, true);
  g.outputs = {binary(g, OpKind::sub, p, s), s};
  return g;
}

// Every graph the tests generate kernels for.
std::deque<Graph> all_graphs() {
  std::deque<Graph> gs;
  for (DType dt : {DType::f32, DType::bf16}) {
    for (int64_t c : {1, 3, 4097}) {
      gs.push_back(rms_norm_graph({3, c}, dt));
      gs.push_back(swiglu_graph({2, c}, dt));
      gs.push_back(broadcast_add_graph(3, c, dt));
    }
    gs.push_back(rms_norm_graph({5, 1024}, dt));  // the last warp-per-row size
    gs.push_back(rms_norm_graph({2, 4096}, dt));  // block per row, vectorized
    gs.push_back(broadcast_add_graph(3, 64, dt));
  }
  gs.push_back(rms_norm_graph({4, 100}, DType::f16));
  gs.push_back(swiglu_graph({3, 333}, DType::f16));
  gs.push_back(rms_norm_graph({1, 2048}));
  gs.push_back(rms_norm_graph({3, 1025}));  // block per row, scalar
  gs.push_back(softmax_graph({6, 333}, DType::f32));
  gs.push_back(softmax_graph({2, 3, 64}, DType::bf16));
  gs.push_back(softmax_graph({2, 3000}, DType::f32));
  gs.push_back(layer_norm_graph({5, 256}, DType::f32));
  gs.push_back(layer_norm_graph({2, 2052}, DType::bf16));
  gs.push_back(strided_graph());
  gs.push_back(mid_broadcast_graph());
  const std::vector<Shape> domains = {{4097}, {3, 5}, {7, 33}, {4, 5, 64}, {2, 1, 40}, {1, 1}, {5, 1}, {2, 300}, {2, 1500}};
  for (int i = 0; i < 27; ++i) {
    DType dt = i % 3 == 0 ? DType::f32 : i % 3 == 1 ? DType::bf16 : DType::f16;
    gs.push_back(random_graph(2000 + uint64_t(i), domains[size_t(i) % domains.size()], dt, 4 + i % 9));
  }
  return gs;
}

std::vector<const FusedKernel*> fused_kernels(std::deque<Graph>& gs) {
  std::vector<const FusedKernel*> ks;
  for (Graph& g : gs) {
    optimize(g);
    for (Node& n : g.nodes)
      if (n.kind == OpKind::fused) ks.push_back(n.attrs.kernel.get());
  }
  return ks;
}

// ---- host buffers ----
struct Buffer {
  std::unique_ptr<unsigned char, decltype(&std::free)> mem{nullptr, &std::free};
  unsigned char* data = nullptr;  // the operand's first element (mem + misalignment)
};

float read_elem(const unsigned char* p, DType dt, int64_t i) {
  if (dt == DType::f32) {
    float f;
    std::memcpy(&f, p + i * 4, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p + i * 2, 2);
  if (dt == DType::bf16) return bf16_to_f32(bf16_t{h});
  f16_t v;
  std::memcpy(&v, &h, 2);
  return float(v);
}

void write_elem(unsigned char* p, DType dt, int64_t i, float x) {
  if (dt == DType::f32) {
    std::memcpy(p + i * 4, &x, 4);
  } else if (dt == DType::bf16) {
    bf16_t h = f32_to_bf16(x);
    std::memcpy(p + i * 2, &h, 2);
  } else {
    f16_t v = f16_t(x);
    std::memcpy(p + i * 2, &v, 2);
  }
}

Buffer alloc(int64_t elems, DType dt, int misalign) {
  Buffer b;
  size_t bytes = size_t(elems + 16) * itemsize(dt);
  bytes = (bytes + 63) / 64 * 64;
  b.mem.reset(static_cast<unsigned char*>(std::aligned_alloc(64, bytes)));
  std::memset(b.mem.get(), 0xff, bytes);
  b.data = b.mem.get() + misalign * itemsize(dt);
  return b;
}

// Random values for input `v` laid out by its strides, and their row-major reference.
Buffer make_input(const Value& v, std::mt19937_64& rng, HostValue& ref, int misalign) {
  std::uniform_real_distribution<float> dist(-2.f, 2.f);
  int64_t n = v.shape.numel(), span = 1;
  for (int d = 0; d < v.shape.size(); ++d) span += (v.shape[d] - 1) * v.strides[d];
  Buffer b = alloc(span, v.dtype, misalign);
  auto offset = [&](int64_t i) {
    int64_t off = 0;
    for (int d = v.shape.size() - 1; d >= 0; --d) {
      off += (i % v.shape[d]) * v.strides[d];
      i /= v.shape[d];
    }
    return off;
  };
  for (int64_t i = 0; i < n; ++i) write_elem(b.data, v.dtype, offset(i), dist(rng));
  ref.shape = v.shape;
  ref.v.resize(size_t(n));
  // Read back through the layout: aliased (stride 0) elements hold the last write.
  for (int64_t i = 0; i < n; ++i) ref.v[size_t(i)] = read_elem(b.data, v.dtype, offset(i));
  return b;
}

bool has_16bit(const Graph& b) {
  for (const Node& n : b.nodes)
    if ((n.kind == OpKind::cast && n.attrs.dtype != DType::f32) || b.values[n.outputs[0]].dtype != DType::f32) return true;
  return false;
}

// Runs kernel `ck` of fused kernel `k` under the emulator on random inputs (all pointers
// misaligned by one element when `misalign`) with at most `max_grid` blocks.
void check_emulated(const FusedKernel& k, const CudaKernel& ck, void* fn, EmuLaunch launch, uint64_t seed,
                    bool misalign, int64_t max_grid) {
  const Graph& b = k.body;
  std::mt19937_64 rng(seed);
  std::vector<Buffer> bufs;
  std::vector<HostValue> refs;
  for (int v : b.inputs) {
    HostValue hv;
    bufs.push_back(make_input(b.values[v], rng, hv, misalign ? 1 : 0));
    refs.push_back(std::move(hv));
  }
  for (int v : b.outputs) bufs.push_back(alloc(b.values[v].shape.numel(), b.values[v].dtype, misalign ? 1 : 0));
  std::vector<void*> args;
  for (auto& x : bufs) args.push_back(x.data);
  unsigned grid = unsigned(std::min(ck.launch.grid(), max_grid));
  SCOPED_TRACE(k.name + " (" + ck.symbol + ") " + ck.launch.str() + (misalign ? " misaligned" : "") +
               " grid " + std::to_string(grid) + "\n" + b.str());
  ASSERT_EQ(launch(fn, int(args.size()), args.data(), grid, unsigned(ck.launch.block)), 0) << "emulator: deadlock or bad launch";
  auto want = reference(b, refs);
  bool low = has_16bit(b);
  for (size_t i = 0; i < b.outputs.size(); ++i) {
    const Value& ov = b.values[b.outputs[i]];
    const unsigned char* got = bufs[b.inputs.size() + i].data;
    double rtol = low ? 3e-2 : 2e-3;
    int bad = 0;
    for (int64_t j = 0; j < ov.shape.numel(); ++j) {
      float g = read_elem(got, ov.dtype, j);
      double r = want[i].v[size_t(j)];
      if (!(std::fabs(g - r) <= rtol * (std::fabs(r) + 1.0)) && bad++ < 3)
        ADD_FAILURE() << "output " << i << " element " << j << ": got " << g << ", want " << r;
    }
  }
}

}  // namespace

TEST(CompilerCuda, RmsNormIsOneRowKernelOfTheRightForm) {
  struct Want {
    Shape shape;
    DType dt;
    CudaForm form;
    int vector;
  };
  const std::vector<Want> cases = {
      {{3, 1}, DType::f32, CudaForm::warp_row, 1},       {{3, 3}, DType::f32, CudaForm::warp_row, 1},
      {{5, 1024}, DType::f32, CudaForm::warp_row, 4},    {{5, 1024}, DType::bf16, CudaForm::warp_row, 8},
      {{2, 4096}, DType::f32, CudaForm::block_row, 4},   {{3, 4097}, DType::f32, CudaForm::block_row, 1},
      {{3, 4097}, DType::bf16, CudaForm::block_row, 1},  {{2, 4096}, DType::bf16, CudaForm::block_row, 8},
  };
  for (const Want& w : cases) {
    Graph g = rms_norm_graph(w.shape, w.dt);
    optimize(g);
    ASSERT_EQ(count_kind(g, OpKind::fused), 1) << g.str();
    const FusedKernel& k = *g.nodes.back().attrs.kernel;
    CudaKernel ck = generate_cuda_kernel(k);
    SCOPED_TRACE(w.shape.str() + " " + std::string(dtype_name(w.dt)) + "\n" + ck.source);
    EXPECT_EQ(ck.name, "fused_mul_mean_add_rsqrt_mul_mul_" + std::string(dtype_name(w.dt)));
    EXPECT_EQ(ck.symbol.rfind(ck.name + "_", 0), 0u);
    EXPECT_NE(ck.source.find("extern \"C\" __global__ void __launch_bounds__(" + std::to_string(ck.launch.block) + ") " +
                             ck.symbol + "("),
              std::string::npos);
    EXPECT_EQ(ck.launch.form, w.form);
    EXPECT_EQ(ck.launch.vector, w.vector);
    EXPECT_EQ(ck.num_inputs, 2);
    EXPECT_EQ(ck.num_outputs, 1);
    EXPECT_EQ(ck.launch.units, w.shape[0]);
    if (w.form == CudaForm::warp_row) {
      EXPECT_EQ(ck.launch.block, 256);
      EXPECT_EQ(ck.launch.grid(), (w.shape[0] + 7) / 8);
      EXPECT_NE(ck.source.find("ofs_warp_sum("), std::string::npos);
      // x is read in both passes: held in registers, not read twice
      if (w.shape[1] > 1) {
        EXPECT_NE(ck.source.find("float k"), std::string::npos);
      }
    } else {
      EXPECT_GE(ck.launch.block, 128);
      EXPECT_LE(ck.launch.block, 1024);
      EXPECT_EQ(ck.launch.grid(), w.shape[0]);
      EXPECT_EQ(ck.launch.shared_bytes, 128);
      EXPECT_NE(ck.source.find("ofs_block_sum("), std::string::npos);
    }
    if (w.vector > 1) {
      // x (each element in one row, held in registers) streams through the caches; the
      // weight, which every row reads, and y are 16-byte accesses too: the weight plain,
      // y streamed.
      std::string ld = fmt::format("ofs_ld{}_{}", w.vector, dtype_name(w.dt));
      EXPECT_NE(ck.source.find(ld + "_cs(a0"), std::string::npos);
      EXPECT_NE(ck.source.find(ld + "(a1"), std::string::npos);
      EXPECT_NE(ck.source.find(fmt::format("ofs_st{}_{}_cs(", w.vector, dtype_name(w.dt))), std::string::npos);
      EXPECT_NE(ck.source.find("if (vec)"), std::string::npos);  // and the scalar fallback
    } else {
      EXPECT_EQ(ck.source.find("ofs_ld"), std::string::npos);
    }
    // The same kernel gives the same source; the CPU symbol is left alone.
    EXPECT_EQ(generate_cuda_kernel(k).source, ck.source);
  }
}

TEST(CompilerCuda, ElementwiseFormsAndLaunchConfigs) {
  {
    Graph g = swiglu_graph({3, 4097}, DType::f32);  // flat: contiguous operands, vector + tail
    optimize(g);
    CudaKernel ck = generate_cuda_kernel(*g.nodes.back().attrs.kernel);
    EXPECT_EQ(ck.launch.form, CudaForm::flat) << ck.source;
    EXPECT_EQ(ck.launch.vector, 4);
    EXPECT_EQ(ck.launch.units, (3 * 4097 + 3) / 4);
    EXPECT_EQ(ck.launch.grid(), (ck.launch.units + 255) / 256);
    EXPECT_NE(ck.source.find("ofs_st4_f32("), std::string::npos) << ck.source;
  }
  {
    Graph g = broadcast_add_graph(3, 64, DType::bf16);  // broadcast operands: elementwise
    optimize(g);
    ASSERT_EQ(count_kind(g, OpKind::fused), 1) << g.str();
    CudaKernel ck = generate_cuda_kernel(*g.nodes.back().attrs.kernel);
    EXPECT_EQ(ck.launch.form, CudaForm::elementwise) << ck.source;
    EXPECT_EQ(ck.launch.vector, 8);
    EXPECT_NE(ck.source.find("ofs_ld8_bf16("), std::string::npos) << ck.source;
  }
  {
    Graph g = strided_graph();  // a transposed operand: gathered, not vector-loaded
    optimize(g);
    CudaKernel ck = generate_cuda_kernel(*g.nodes.back().attrs.kernel);
    EXPECT_EQ(ck.launch.form, CudaForm::elementwise);
    EXPECT_NE(ck.source.find("* 33]"), std::string::npos) << ck.source;
  }
  CudaLaunch big;
  big.units = int64_t(1) << 40;
  big.units_per_block = 1;
  EXPECT_EQ(big.grid(), INT_MAX);  // a grid-stride kernel covers the rest
}

// The index math, grid-stride loops, shuffles and shared-memory reductions as written,
// run on the host. Needs no CUDA toolkit.
TEST(CompilerCuda, EmulatedKernelsMatchReference) {
  std::deque<Graph> gs = all_graphs();
  std::vector<const FusedKernel*> ks = fused_kernels(gs);
  ASSERT_GE(ks.size(), size_t(45));
  std::vector<CudaKernel> cks;
  std::map<CudaForm, int> forms;
  int vectorized = 0;
  for (const FusedKernel* k : ks) {
    cks.push_back(generate_cuda_kernel(*k));
    ++forms[cks.back().launch.form];
    vectorized += cks.back().launch.vector > 1;
  }
  for (CudaForm f : {CudaForm::flat, CudaForm::elementwise, CudaForm::warp_row, CudaForm::block_row})
    EXPECT_GE(forms[f], 3) << cuda_form_name(f);
  EXPECT_GE(vectorized, 10);

  std::string dir = temp_dir("cuda-emu");
  std::ofstream(dir + "/k.cpp") << kCudaEmulatorPrelude << generate_cuda_library(cks);
  CxxCompiler cc = find_compiler("", dir);
  BuildResult br = run_compiler(cc, {"-O1", "-fno-strict-aliasing", "-std=c++17", "-shared", "-fPIC"}, dir + "/k.cpp",
                                dir + "/k.so", dir + "/log.txt", nullptr);
  std::string log;
  read_file(dir + "/log.txt", log);
  ASSERT_EQ(br.exit_code, 0) << log << "\nsource in " << dir;
  std::string err;
  auto lib = Library::open(dir + "/k.so", &err);
  ASSERT_TRUE(lib) << err;
  auto launch = reinterpret_cast<EmuLaunch>(lib->symbol("ofs_emu_launch"));
  ASSERT_TRUE(launch);
  for (size_t i = 0; i < ks.size(); ++i) {
    void* fn = lib->symbol(cks[i].symbol);
    ASSERT_TRUE(fn) << cks[i].symbol;
    check_emulated(*ks[i], cks[i], fn, launch, 11 + i, false, 3);  // vector path, grid-stride
    check_emulated(*ks[i], cks[i], fn, launch, 511 + i, true, 1);  // scalar path, one block
  }
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

TEST(CompilerCuda, NvrtcCompilesEveryGeneratedKernel) {
  SKIP_WITHOUT_NVRTC();
  std::deque<Graph> gs = all_graphs();
  std::vector<const FusedKernel*> ks = fused_kernels(gs);
  std::string dir = temp_dir("cuda-nvrtc");
  CudaCompileOptions opts;
  opts.cache_dir = dir;
  opts.name = "all_graphs";
  CudaArtifact a = compile_cuda_kernels(ks, opts);
  EXPECT_FALSE(a.hit);
  EXPECT_EQ(a.arch, "sm_90");
  EXPECT_EQ(a.nvrtc_version, nvrtc_version());
  EXPECT_EQ(a.dir, dir + "/" + a.hash);
  ASSERT_EQ(a.kernels.size(), ks.size());
  for (const CudaKernel& k : a.kernels)
    EXPECT_NE(a.ptx.find(".entry " + k.symbol + "("), std::string::npos) << k.symbol;
  // Arrays kept across passes are registers (fully unrolled), not local memory. (sinf
  // and cosf have their own: a 28-byte table for reducing large arguments.)
  std::set<std::string> trig;
  for (size_t i = 0; i < ks.size(); ++i)
    if (count_kind(ks[i]->body, OpKind::sin) + count_kind(ks[i]->body, OpKind::cos) > 0) trig.insert(a.kernels[i].symbol);
  for (size_t at = a.ptx.find(".local"); at != std::string::npos; at = a.ptx.find(".local", at + 1)) {
    size_t entry = a.ptx.rfind(".entry ", at) + 7;
    std::string sym = a.ptx.substr(entry, a.ptx.find('(', entry) - entry);
    if (!trig.count(sym)) ADD_FAILURE() << "local memory in " << sym << ": " << a.ptx.substr(at, a.ptx.find('\n', at) - at);
  }
  ASSERT_GE(a.cubin.size(), 4u);
  EXPECT_EQ(a.cubin.substr(0, 4), std::string("\x7f" "ELF"));
  EXPECT_TRUE(std::filesystem::exists(a.source_path));
  EXPECT_TRUE(std::filesystem::exists(a.cubin_path));
  EXPECT_EQ(check_entry(a.dir), "");  // what `opscope cache ls` checks
  std::string text;
  ASSERT_TRUE(read_file(a.dir + "/manifest.json", text));
  auto m = nlohmann::json::parse(text);
  EXPECT_EQ(m["device"], "cuda");
  EXPECT_EQ(m["arch"], "sm_90");
  EXPECT_EQ(m["source"], "kernels.cu");
  EXPECT_EQ(m["kernels"].size(), ks.size());
  EXPECT_EQ(m["kernels"][0]["launch"]["block"], a.kernels[0].launch.block);
  EXPECT_FALSE(m["nvrtc"].contains("log")) << "NVRTC warned:\n" << m["nvrtc"]["log"].get<std::string>();

  // Second compile: from the cache, the same files.
  CudaArtifact b = compile_cuda_kernels(ks, opts);
  EXPECT_TRUE(b.hit);
  EXPECT_EQ(b.hash, a.hash);
  EXPECT_EQ(b.cubin, a.cubin);
  EXPECT_EQ(b.ptx, a.ptx);
  EXPECT_EQ(b.compile_ms, 0);

  // Another architecture is another artifact; a virtual one gives PTX only.
  opts.arch = "compute_90";
  CudaArtifact v = compile_cuda_kernels(gs.front(), opts);  // the graph's fused kernels: ks[0]
  EXPECT_NE(v.hash, a.hash);
  EXPECT_TRUE(v.cubin.empty());
  EXPECT_EQ(v.cubin_path, "");
  EXPECT_NE(v.ptx.find(".entry " + v.kernels[0].symbol + "("), std::string::npos);
  EXPECT_EQ(check_entry(v.dir), "");

  // A damaged entry is rebuilt.
  std::ofstream(v.ptx_path, std::ios::app) << "// changed\n";
  CudaArtifact c = compile_cuda_kernels(gs.front(), opts);
  EXPECT_FALSE(c.hit);
  EXPECT_NE(c.damage.find("kernels.ptx does not match"), std::string::npos) << c.damage;
  EXPECT_EQ(c.ptx, v.ptx);
  std::filesystem::remove_all(dir);
}

TEST(CompilerCuda, CompileErrorNamesTheKernelAndKeepsSourceAndLog) {
  SKIP_WITHOUT_NVRTC();
  Graph g = rms_norm_graph({3, 4097});
  optimize(g);
  CudaKernel good = generate_cuda_kernel(*g.nodes.back().attrs.kernel);
  CudaKernel bad = good;
  bad.name = "fused_broken_f32";
  bad.symbol = "fused_broken_f32_00000000";
  bad.source = "extern \"C\" __global__ void fused_broken_f32_00000000(float* a0) {\n  a0[0] = undefined_thing;\n}\n";
  std::string source = generate_cuda_library({good, bad});
  std::string dir = temp_dir("cuda-broken");
  CudaCompileOptions opts;
  opts.cache_dir = dir;
  opts.name = "broken";
  try {
    compile_cuda_source(source, {good, bad}, opts);
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("[nvrtc] fused_broken_f32: compile failed for sm_90: ", 0), 0u) << msg;
    EXPECT_NE(msg.find("undefined_thing"), std::string::npos) << msg;
    EXPECT_NE(msg.find("CUDA device code"), std::string::npos) << msg;
    size_t at = msg.find("full log: ");
    ASSERT_NE(at, std::string::npos) << msg;
    std::string log_path = msg.substr(at + 10);
    log_path = log_path.substr(0, log_path.find_first_of(")\n"));
    EXPECT_EQ(log_path.rfind(dir + "/failed-", 0), 0u) << log_path;
    std::string log, src;
    ASSERT_TRUE(read_file(log_path, log)) << log_path;
    EXPECT_NE(log.find("error"), std::string::npos) << log;
    std::string kept = std::filesystem::path(log_path).parent_path().string() + "/kernels.cu";
    ASSERT_TRUE(read_file(kept, src));
    EXPECT_EQ(src, source);
  }
  // An unknown architecture is refused before NVRTC runs.
  opts.arch = "sm90";
  try {
    compile_cuda_source(source, {good}, opts);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[nvrtc] 'sm90' is not a CUDA architecture", 0), 0u) << e.what();
  }
  std::filesystem::remove_all(dir);
}

// A build with the toolkit compiles a graph's kernels with NVRTC (no GPU needed); one
// without it says so, naming NVRTC.
TEST(CompilerCuda, CompilesWithTheToolkitOrSaysItIsMissing) {
  Graph g = rms_norm_graph({3, 8});
  optimize(g);
  if (nvrtc_available()) {
    CudaCompileOptions opts;
    opts.cache_dir = temp_dir("nvrtc-either");
    CudaArtifact a = compile_cuda_kernels(g, opts);
    std::filesystem::remove_all(opts.cache_dir);
    ASSERT_FALSE(a.kernels.empty());
    for (const CudaKernel& k : a.kernels)
      EXPECT_NE(a.ptx.find(".entry " + k.symbol + "("), std::string::npos) << k.symbol;
    return;
  }
  try {
    compile_cuda_kernels(g);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[nvrtc] ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("no CUDA toolkit"), std::string::npos) << e.what();
  }
}
