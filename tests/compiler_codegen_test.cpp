// Generated kernels against a double-precision reference: many seeded random graphs of
// elementwise ops (with broadcasting) and last-axis reductions in f32, bf16 and f16, plus the
// known patterns (RMSNorm, softmax, layer norm, SiLU·mul) and strided operands. All
// kernels go into one library: one compiler run for the whole suite.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>

#include "compiler_test_util.h"
#include "opscope/compiler/build.h"
#include "opscope/compiler/cache.h"
#include "opscope/compiler/codegen_cpu.h"
#include "opscope/compiler/executor.h"
#include "opscope/compiler/kernel.h"
#include "opscope/compiler/passes.h"
#include "opscope/core/error.h"

using namespace opscope;
using namespace opscope::compiler;
using namespace opscope::compiler::testing;

namespace {

std::string temp_dir(const std::string& tag) {
  std::string d = std::filesystem::temp_directory_path().string() + "/opscope-" + tag + "-" + std::to_string(::getpid());
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
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

Graph silu_mul_graph(const Shape& s, DType dt) {
  Graph g;
  g.name = "silu_mul";
  int a = input(g, s, dt), b = input(g, s, dt);
  g.outputs = {binary(g, OpKind::mul, unary(g, OpKind::silu, a), b)};
  return g;
}

// x^T (a transposed view) * y + column-broadcast z with stride 0: strided loads.
Graph strided_graph() {
  Graph g;
  g.name = "strided";
  int xt = g.add_input({33, 7}, Strides{1, 33}, DType::f32);
  int y = input(g, {33, 7});
  int z = g.add_input({33, 7}, Strides{1, 0}, DType::f32);  // an expanded column
  int s = binary(g, OpKind::mul, xt, y);
  g.outputs = {unary(g, OpKind::tanh, binary(g, OpKind::add, s, z))};
  return g;
}

void optimize(Graph& g) {
  dce(g);
  cse(g);
  fold_constants(g);
  dce(g);
  fuse(g);
}

float bf16_value(float v) { return bf16_to_f32(f32_to_bf16(v)); }

struct HostBuffer {
  std::vector<unsigned char> bytes;
  void* data() { return bytes.data(); }
};

// Random data for value `v` laid out by its strides, and its row-major reference copy.
HostBuffer make_input(const Value& v, std::mt19937_64& rng, HostValue& ref) {
  std::uniform_real_distribution<float> dist(-2.f, 2.f);
  int64_t n = v.shape.numel(), span = 1;
  for (int d = 0; d < v.shape.size(); ++d) span += (v.shape[d] - 1) * v.strides[d];
  HostBuffer b;
  b.bytes.assign(size_t(span) * itemsize(v.dtype), 0);
  ref.shape = v.shape;
  ref.v.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0, rem = i;
    for (int d = v.shape.size() - 1; d >= 0; --d) {
      off += (rem % v.shape[d]) * v.strides[d];
      rem /= v.shape[d];
    }
    float x = dist(rng);
    if (v.dtype == DType::bf16) {
      x = bf16_value(x);
      bf16_t h = f32_to_bf16(x);
      std::memcpy(b.bytes.data() + off * 2, &h, 2);
    } else if (v.dtype == DType::f16) {
      f16_t h = f16_t(x);
      x = float(h);
      std::memcpy(b.bytes.data() + off * 2, &h, 2);
    } else {
      std::memcpy(b.bytes.data() + off * 4, &x, 4);
    }
    ref.v[size_t(i)] = x;  // a strided view may alias: the last write wins, as in the buffer
  }
  // Re-read through the layout so aliased (stride 0) elements agree with the buffer.
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0, rem = i;
    for (int d = v.shape.size() - 1; d >= 0; --d) {
      off += (rem % v.shape[d]) * v.strides[d];
      rem /= v.shape[d];
    }
    if (v.dtype == DType::bf16) {
      bf16_t h;
      std::memcpy(&h, b.bytes.data() + off * 2, 2);
      ref.v[size_t(i)] = bf16_to_f32(h);
    } else if (v.dtype == DType::f16) {
      f16_t h;
      std::memcpy(&h, b.bytes.data() + off * 2, 2);
      ref.v[size_t(i)] = float(h);
    } else {
      float x;
      std::memcpy(&x, b.bytes.data() + off * 4, 4);
      ref.v[size_t(i)] = x;
    }
  }
  return b;
}

bool has_16bit_cast(const Graph& b) {
  for (const Node& n : b.nodes)
    if (n.kind == OpKind::cast && n.attrs.dtype != DType::f32) return true;
  return false;
}

// Runs kernel `k` (entry `f`) on random inputs, in two row ranges, against the reference.
void check_kernel(const FusedKernel& k, KernelEntry f, uint64_t seed) {
  const Graph& b = k.body;
  std::mt19937_64 rng(seed);
  std::vector<HostBuffer> bufs;
  std::vector<HostValue> refs;
  std::vector<void*> args;
  for (int v : b.inputs) {
    HostValue hv;
    bufs.push_back(make_input(b.values[v], rng, hv));
    refs.push_back(std::move(hv));
  }
  for (int v : b.outputs) {
    HostBuffer o;
    o.bytes.assign(size_t(b.values[v].shape.numel()) * itemsize(b.values[v].dtype), 0xff);
    bufs.push_back(std::move(o));
  }
  for (auto& x : bufs) args.push_back(x.data());
  int64_t w = k.work();
  ASSERT_EQ(f(args.data(), 0, w / 2), 0);
  ASSERT_EQ(f(args.data(), w / 2, w), 0);
  auto want = reference(b, refs);
  bool low = has_16bit_cast(b);
  for (size_t i = 0; i < b.outputs.size(); ++i) {
    const Value& ov = b.values[b.outputs[i]];
    const HostBuffer& ob = bufs[b.inputs.size() + i];
    bool bf = ov.dtype == DType::bf16 || low;
    double rtol = bf ? 3e-2 : ov.dtype == DType::f16 ? 5e-3 : 2e-3;
    int bad = 0;
    for (int64_t j = 0; j < ov.shape.numel(); ++j) {
      float got;
      if (ov.dtype == DType::bf16) {
        bf16_t h;
        std::memcpy(&h, ob.bytes.data() + j * 2, 2);
        got = bf16_to_f32(h);
      } else if (ov.dtype == DType::f16) {
        f16_t h;
        std::memcpy(&h, ob.bytes.data() + j * 2, 2);
        got = float(h);
      } else {
        std::memcpy(&got, ob.bytes.data() + j * 4, 4);
      }
      double r = want[i].v[size_t(j)];
      if (!(std::fabs(got - r) <= rtol * (std::fabs(r) + 1.0)) && bad++ < 3)
        ADD_FAILURE() << k.name << " (" << k.symbol << ") output " << i << " element " << j << ": got " << got
                      << ", want " << r << "\n"
                      << b.str();
    }
  }
}

}  // namespace

TEST(CompilerCodegen, RandomAndKnownGraphsMatchReference) {
  std::deque<Graph> graphs;
  const std::vector<Shape> domains = {{4097}, {3, 5}, {7, 33}, {4, 5, 64}, {2, 1, 40}, {1, 1}, {5, 1}, {2, 300}};
  int n_random = 0;
  for (int i = 0; i < 42; ++i) {
    const Shape& d = domains[size_t(i) % domains.size()];
    DType dt = i >= 36 ? DType::f16 : i % 3 == 2 ? DType::bf16 : DType::f32;
    graphs.push_back(random_graph(1000 + uint64_t(i), d, dt, 4 + i % 9));
    ++n_random;
  }
  graphs.push_back(rms_norm_graph({4, 4096}));
  graphs.push_back(rms_norm_graph({3, 1000}, DType::bf16));
  graphs.push_back(softmax_graph({6, 333}, DType::f32));
  graphs.push_back(softmax_graph({2, 3, 64}, DType::bf16));
  graphs.push_back(layer_norm_graph({5, 257}, DType::f32));
  graphs.push_back(silu_mul_graph({3, 4097}, DType::f32));
  graphs.push_back(silu_mul_graph({2, 100}, DType::bf16));
  graphs.push_back(rms_norm_graph({3, 1000}, DType::f16));
  graphs.push_back(softmax_graph({2, 3, 64}, DType::f16));
  graphs.push_back(layer_norm_graph({5, 257}, DType::f16));
  graphs.push_back(strided_graph());
  // Results of 8 MiB or more are streamed: odd row lengths (a line boundary anywhere in
  // a row), a flat loop over an odd count, bf16 lines of 32, a softmax's last pass.
  graphs.push_back(rms_norm_graph({520, 4097}));
  graphs.push_back(rms_norm_graph({1030, 4099}, DType::bf16));
  graphs.push_back(rms_norm_graph({1030, 4099}, DType::f16));
  graphs.push_back(silu_mul_graph({2100001}, DType::f32));
  graphs.push_back(softmax_graph({1100, 2000}, DType::f32));

  std::vector<FusedKernel*> kernels;
  for (Graph& g : graphs) {
    optimize(g);
    for (Node& n : g.nodes)
      if (n.kind == OpKind::fused) kernels.push_back(n.attrs.kernel.get());
  }
  ASSERT_GE(kernels.size(), size_t(n_random) / 2) << "most random graphs should fuse";
  std::string src = generate_library(kernels);
  EXPECT_EQ(src.find("virtual"), std::string::npos);

  std::string dir = temp_dir("codegen");
  std::ofstream(dir + "/k.cpp") << src;
  CxxCompiler cc = find_compiler("", dir);
  BuildResult br = run_compiler(cc, {"-O2", "-march=native", "-fno-math-errno", "-std=c++17", "-shared", "-fPIC"},
                                dir + "/k.cpp", dir + "/k.so", dir + "/log.txt", nullptr);
  std::string log;
  read_file(dir + "/log.txt", log);
  ASSERT_EQ(br.exit_code, 0) << log << "\nsource in " << dir;
  std::string err;
  auto lib = Library::open(dir + "/k.so", &err);
  ASSERT_TRUE(lib) << err;
  for (size_t i = 0; i < kernels.size(); ++i) {
    auto f = reinterpret_cast<KernelEntry>(lib->symbol(kernels[i]->symbol));
    ASSERT_TRUE(f) << kernels[i]->symbol;
    check_kernel(*kernels[i], f, 77 + i);
  }
  std::filesystem::remove_all(dir);
}

TEST(CompilerCodegen, KernelNamesComeFromTheGraph) {
  Graph g = rms_norm_graph({32, 4096});
  optimize(g);
  ASSERT_EQ(count_kind(g, OpKind::fused), 1);
  FusedKernel& k = *g.nodes.back().attrs.kernel;
  std::string src = generate_kernel(k);
  EXPECT_EQ(k.name, "fused_mul_mean_add_rsqrt_mul_mul_f32");
  EXPECT_EQ(k.symbol.rfind(k.name + "_", 0), 0u);
  EXPECT_NE(src.find("__restrict"), std::string::npos);
  EXPECT_EQ(k.passes, 2);
  // The same graph gives the same source and symbol; another shape another symbol.
  Graph g2 = rms_norm_graph({32, 4096});
  optimize(g2);
  FusedKernel& k2 = *g2.nodes.back().attrs.kernel;
  EXPECT_EQ(generate_kernel(k2), src);
  Graph g3 = rms_norm_graph({32, 4095});
  optimize(g3);
  FusedKernel& k3 = *g3.nodes.back().attrs.kernel;
  generate_kernel(k3);
  EXPECT_EQ(k3.name, k.name);
  EXPECT_NE(k3.symbol, k.symbol);
}

TEST(CompilerCodegen, LargeResultsAreWrittenWithStreamingStores) {
  auto source = [](Graph g) {
    optimize(g);
    EXPECT_EQ(count_kind(g, OpKind::fused), 1) << g.str();
    for (Node& n : g.nodes)
      if (n.kind == OpKind::fused) return generate_kernel(*n.attrs.kernel);
    return std::string();
  };
  const std::string streamed = "ofs_stream64(a";
  EXPECT_EQ(source(rms_norm_graph({32, 4096})).find(streamed), std::string::npos);  // 512 KiB stays cached
  std::string big = source(rms_norm_graph({512, 4096}));                           // 8 MiB
  EXPECT_NE(big.find(streamed), std::string::npos) << big;
  EXPECT_NE(big.find("ofs_sfence();"), std::string::npos) << big;
  EXPECT_EQ(source(rms_norm_graph({511, 4096})).find(streamed), std::string::npos);
  EXPECT_NE(source(silu_mul_graph({1 << 21}, DType::f32)).find(streamed), std::string::npos);
  EXPECT_NE(source(softmax_graph({2048, 1024}, DType::f32)).find(streamed), std::string::npos);
  // Two results would not share line boundaries: plain stores.
  Graph two;
  two.name = "two";
  int x = input(two, {2048, 1024});
  int e = unary(two, OpKind::exp, x);
  two.outputs = {e, binary(two, OpKind::mul, e, x)};
  EXPECT_EQ(source(std::move(two)).find(streamed), std::string::npos);
}

// Every supported compiler builds the prelude and the streamed loops (clang 14 has no
// _Float16 on x86: only f16 kernels may need a newer one).
TEST(CompilerCodegen, GeneratedSourceBuildsWithClangToo) {
  std::string dir = temp_dir("codegen-clang");
  CxxCompiler cc;
  try {
    cc = find_compiler("clang++", dir);
  } catch (const Error&) {
    std::filesystem::remove_all(dir);
    GTEST_SKIP() << "no clang++ on PATH";
  }
  std::deque<Graph> graphs;
  graphs.push_back(rms_norm_graph({520, 4097}));
  graphs.push_back(silu_mul_graph({3, 100}, DType::bf16));
  std::vector<FusedKernel*> kernels;
  for (Graph& g : graphs) {
    optimize(g);
    for (Node& n : g.nodes)
      if (n.kind == OpKind::fused) kernels.push_back(n.attrs.kernel.get());
  }
  ASSERT_EQ(kernels.size(), 2u);
  std::ofstream(dir + "/k.cpp") << generate_library(kernels);
  BuildResult br = run_compiler(cc, {"-O2", "-march=native", "-fno-math-errno", "-std=c++17", "-shared", "-fPIC"},
                                dir + "/k.cpp", dir + "/k.so", dir + "/log.txt", nullptr);
  std::string log;
  read_file(dir + "/log.txt", log);
  ASSERT_EQ(br.exit_code, 0) << log << "\nsource in " << dir;
  std::string err;
  auto lib = Library::open(dir + "/k.so", &err);
  ASSERT_TRUE(lib) << err;
  for (size_t i = 0; i < kernels.size(); ++i) {
    auto f = reinterpret_cast<KernelEntry>(lib->symbol(kernels[i]->symbol));
    ASSERT_TRUE(f) << kernels[i]->symbol;
    check_kernel(*kernels[i], f, 5 + i);
  }
  std::filesystem::remove_all(dir);
}
