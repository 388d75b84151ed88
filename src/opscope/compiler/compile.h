// opscope::compile — trace a function into a graph, fuse it, generate C++ kernels, build
// them with the system compiler and cache the artifact (the analog of torch.compile on
// Neuron, whose artifact is the NEFF).
//
//   Tensor rms_naive(const Tensor& x, const Tensor& w) {
//     Tensor r = rsqrt(mean(x * x, {-1}, true) + 1e-6);
//     return x * r * w;
//   }
//   auto f = opscope::compile(rms_naive, "rms_naive");
//   Tensor y = f(x, w);   // first call for this signature: trace, passes, build or load
//   Tensor z = f(x, w);   // later calls: one fused kernel ("fused_mul_mean_add_rsqrt_mul_mul_f32")
//
// The function is traced once per input signature (shapes, strides, dtypes, device) by
// running it eagerly, as torch.jit.trace does: Python-free C++ control flow and scalars
// (like eps) are baked into the graph as constants; tensors it captures from outside
// (weights) are constants too. A new signature is traced again.
//
// A call shows in profiles as one framework op named after the function; its kernels'
// launches link to it. Compilation is the op "compile:<name>"; profiles record each
// fused kernel's artifact (artifacts.h). Knobs: CompileOptions,
// OPSCOPE_COMPILE_DISABLE=dce,cse,fold,fuse (or all), OPSCOPE_COMPILE_EXPLAIN=1,
// OPSCOPE_CACHE_DIR, CXX. From the shell: `opscope compile rmsnorm --explain` and
// `opscope cache ls|show|clear`.
#pragma once
#include <concepts>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "opscope/compiler/passes.h"
#include "opscope/runtime/tensor.h"

namespace opscope {

struct CompileOptions {
  compiler::PassOptions passes;  // each pass on by default
  bool explain = false;          // print the graph before and after each pass (stderr)
  std::string cache_dir;         // default: compiler::cache_root()
  std::string cxx;               // compiler command; default $CXX, else c++/g++/clang++
  // -g1: line tables only, so an instruction sample in a compiled kernel names its line of
  // the generated source (the instructions layer; the code is the same with or without).
  // -fno-trapping-math: as for the CPU kernels (CMakeLists.txt), so the math vectorizes on AVX2.
  std::vector<std::string> cxx_flags = {"-O3", "-march=native", "-fno-math-errno", "-fno-trapping-math", "-g1"};
};

// What one input signature compiled into.
struct CompileReport {
  std::string name, signature;
  std::string traced_graph, compiled_graph;  // Graph::str() before and after the passes
  std::string pass_log;                      // the graph after each pass (explain)
  std::vector<std::string> kernels;          // fused kernels' launch names
  std::vector<std::string> symbols;          // their entry points in the library
  int eager_nodes = 0;                       // nodes that launch their eager op (views not counted)
  std::string source;                        // generated C++ ("" without fused kernels)
  std::string hash, artifact_dir;            // "" without fused kernels
  bool cache_hit = false;                    // artifact loaded, no compiler run
  std::string rebuilt_because;               // a damaged cache entry was rebuilt
  bool eager_fallback = false;               // the whole function runs eagerly
  std::string fallback_reason;
  double trace_ms = 0, passes_ms = 0, codegen_ms = 0, build_ms = 0, load_ms = 0;
  // Everything above as text, for `opscope compile --explain`.
  std::string str() const;
};

using TensorFn = std::function<Tensor(const std::vector<Tensor>&)>;
// A function of several results (a graph region that feeds several later ops).
using TensorsFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

namespace compiler::detail {
struct CompiledState;
}

class CompiledFunction {
 public:
  explicit CompiledFunction(std::shared_ptr<compiler::detail::CompiledState> st) : st_(std::move(st)) {}

  Tensor operator()(const std::vector<Tensor>& inputs) const;  // the first result
  // Every result, for a function compiled with compile_all().
  std::vector<Tensor> call_all(const std::vector<Tensor>& inputs) const;
  template <class... Ts>
    requires(sizeof...(Ts) >= 1 && (std::same_as<std::remove_cvref_t<Ts>, Tensor> && ...))
  Tensor operator()(const Ts&... xs) const {
    return (*this)(std::vector<Tensor>{xs...});
  }

  const std::string& name() const;
  // The report for the signature of `inputs`, compiling it first if needed (which runs
  // the function once, eagerly, to trace it).
  CompileReport report(const std::vector<Tensor>& inputs) const;
  // Signatures compiled so far.
  size_t num_signatures() const;

 private:
  std::shared_ptr<compiler::detail::CompiledState> st_;
};

// Compiles `fn` (a function of a list of tensors) under `name` (the op name of its calls).
CompiledFunction compile(TensorFn fn, std::string name = "compiled", CompileOptions options = {});
// The same for a function of several results: one graph computes them all.
CompiledFunction compile_all(TensorsFn fn, std::string name = "compiled", CompileOptions options = {});

namespace compiler::detail {
void check_arity(const std::string& name, size_t want, size_t got);
template <class F, size_t... I>
TensorFn unpack(F f, std::string name, std::index_sequence<I...>) {
  return [f = std::move(f), name = std::move(name)](const std::vector<Tensor>& xs) -> Tensor {
    check_arity(name, sizeof...(I), xs.size());
    return f(xs[I]...);
  };
}
template <class F, size_t N>
constexpr bool takes_n = []<size_t... I>(std::index_sequence<I...>) {
  return std::is_invocable_r_v<Tensor, F, decltype((void(I), std::declval<const Tensor&>()))...>;
}(std::make_index_sequence<N>{});
}  // namespace compiler::detail

// compile() for functions of 1 to 6 tensors: Tensor f(const Tensor& x, const Tensor& w).
template <class F>
  requires(!std::is_convertible_v<F, TensorFn>)
CompiledFunction compile(F f, std::string name = "compiled", CompileOptions options = {}) {
  using namespace compiler::detail;
  TensorFn fn;
  if constexpr (takes_n<F, 1>) fn = unpack(std::move(f), name, std::make_index_sequence<1>{});
  else if constexpr (takes_n<F, 2>) fn = unpack(std::move(f), name, std::make_index_sequence<2>{});
  else if constexpr (takes_n<F, 3>) fn = unpack(std::move(f), name, std::make_index_sequence<3>{});
  else if constexpr (takes_n<F, 4>) fn = unpack(std::move(f), name, std::make_index_sequence<4>{});
  else if constexpr (takes_n<F, 5>) fn = unpack(std::move(f), name, std::make_index_sequence<5>{});
  else if constexpr (takes_n<F, 6>) fn = unpack(std::move(f), name, std::make_index_sequence<6>{});
  else static_assert(takes_n<F, 1>, "compile(f): f must take 1-6 const Tensor& (or a std::vector<Tensor>) and return a Tensor");
  return compile(std::move(fn), std::move(name), std::move(options));
}

}  // namespace opscope
