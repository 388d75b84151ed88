// compile(): per-signature cache of compiled graphs, and the pipeline that fills it:
// trace → passes → codegen → build or load (cache) → executable.
#include "opscope/compiler/compile.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "opscope/compiler/artifacts.h"
#include "opscope/compiler/build.h"
#include "opscope/compiler/cache.h"
#include "opscope/compiler/codegen_cpu.h"
#include "opscope/compiler/executor.h"
#include "opscope/compiler/hash.h"
#include "opscope/compiler/origins.h"
#include "opscope/compiler/kernel.h"
#include "opscope/compiler/packed_weights.h"
#include "opscope/compiler/pipeline.h"
#include "opscope/compiler/tracer.h"
#include "opscope/core/error.h"
#include "opscope/kernels/cpu/attention.h"
#include "opscope/kernels/cpu/rotary.h"
#include "opscope/runtime/device.h"
#include "opscope/runtime/cuda.h"
#include "opscope/runtime/op_scope.h"
#if OPSCOPE_HAVE_CUDA
#include "opscope/cuda/compiled.h"
#endif

namespace opscope {

namespace compiler {
// compile_graph for the device the inputs are on (nullptr: the CPU).
Executable compile_graph_on(Graph g, const CompileOptions& opts, CompileReport& rep, Device* dev);
}  // namespace compiler

namespace compiler::detail {

void check_arity(const std::string& name, size_t want, size_t got) {
  if (want != got) fail(name, "the compiled function takes {} tensors, got {}", want, got);
}

// Op names live for the process: profiles keep the pointer.
const char* intern(const std::string& s) {
  static std::mutex m;
  static std::set<std::string> names;
  std::lock_guard<std::mutex> g(m);
  return names.insert(s).first->c_str();
}

struct Entry {
  Executable exe;
  CompileReport report;
};

struct CompiledState {
  TensorsFn fn;
  std::string name;
  const char* op_name;
  const char* compile_op_name;
  CompileOptions opts;
  std::mutex m;
  std::unordered_map<std::string, std::shared_ptr<Entry>> entries;
};

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

bool env_flag(const char* name) {
  const char* e = std::getenv(name);
  return e && *e && std::string(e) != "0";
}

// Shapes, strides, dtypes, device and which inputs share storage: what the trace assumed.
std::string signature(const std::vector<Tensor>& xs) {
  std::string s;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Tensor& t = xs[i];
    s += fmt::format("{}{}{}{}@{}", i ? ";" : "", dtype_name(t.dtype()), t.shape().str(), t.strides().str(),
                     t.device().index());
    for (size_t j = 0; j < i; ++j)
      if (xs[j].storage() == t.storage()) {
        s += fmt::format("~{}+{}", j, t.offset() - xs[j].offset());
        break;
      }
  }
  return s;
}

void warn_fallback(const std::string& name, const std::string& why) {
  static std::mutex m;
  static std::set<std::string> seen;
  std::lock_guard<std::mutex> g(m);
  if (seen.insert(name + "|" + why).second) std::fprintf(stderr, "[compile] %s: %s; it runs eagerly\n", name.c_str(), why.c_str());
}

std::string manifest_part(const Graph& traced, const Graph& g) {
  using nlohmann::json;
  json m;
  m["graph"] = g.str();
  m["traced_graph"] = traced.str();
  auto io = [&](const std::vector<int>& vs) {
    json a = json::array();
    for (int v : vs) {
      const Value& val = g.values[size_t(v)];
      a.push_back({{"value", fmt::format("%{}", v)}, {"dtype", std::string(dtype_name(val.dtype))},
                   {"shape", val.shape.vec()}, {"strides", val.strides.vec()}});
    }
    return a;
  };
  m["inputs"] = io(g.inputs);
  m["outputs"] = io(g.outputs);
  // Each kernel's origins: the framework ops and the module each came from.
  auto origins = [&](const Node& n) {
    json a = json::array();
    for (const Origin* o : g.origins_of(n)) a.push_back({{"op", o->op}, {"module", o->module()}});
    return a;
  };
  json kern = json::array();
  for (const Node& n : g.nodes) {
    if (n.kind != OpKind::fused) continue;
    const FusedKernel* k = n.attrs.kernel.get();
    std::vector<std::string> ops;
    for (const Node& b : k->body.nodes)
      if (b.kind != OpKind::input && b.kind != OpKind::constant) ops.push_back(op_name(b.kind));
    kern.push_back({{"name", k->name}, {"symbol", k->symbol}, {"ops", ops}, {"domain", k->domain.vec()},
                    {"rows", k->rows}, {"cols", k->cols}, {"passes", k->passes}, {"flat", k->flat},
                    {"inputs", k->body.inputs.size()}, {"outputs", k->body.outputs.size()},
                    {"origins", origins(n)}});
  }
  m["kernels"] = kern;
  return m.dump();
}

std::shared_ptr<Entry> build(CompiledState& st, const std::vector<Tensor>& inputs, std::vector<Tensor>* result) {
  auto e = std::make_shared<Entry>();
  CompileReport& rep = e->report;
  rep.name = st.name;
  rep.signature = signature(inputs);
  // trace: run the function eagerly with the tracer on
  auto t0 = std::chrono::steady_clock::now();
  Graph g;
  {
    Tracer tracer(st.name, inputs);
    std::vector<Tensor> outs = st.fn(inputs);
    if (outs.empty()) fail(st.name, "the compiled function returned no tensors");
    g = tracer.finish(outs);
    if (result) *result = std::move(outs);
  }
  rep.traced_graph = g.str();
  rep.trace_ms = ms_since(t0);
  e->exe = compile_graph_on(std::move(g), st.opts, rep, inputs.empty() ? nullptr : &inputs[0].device());
  if (e->exe.packed) e->exe.packed->saw(e->exe.graph, inputs);  // the traced call was the first to see them
  return e;
}

}  // namespace
}  // namespace compiler::detail


namespace compiler {

namespace {

// The fused kernels of `g` compiled for the CUDA device `dev` (compiled.h), per node.
void compile_for_cuda(const Graph& g, const std::vector<FusedKernel*>& kernels, Device& dev,
                      const CompileOptions& opts, CompileReport& rep, Executable& exe) {
#if OPSCOPE_HAVE_CUDA
  std::vector<const FusedKernel*> ks(kernels.begin(), kernels.end());
  auto loaded = cuda_impl::load_compiled_kernels(ks, dev, opts.cache_dir, rep);
  exe.device_kernels.assign(g.nodes.size(), nullptr);
  size_t k = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].kind == OpKind::fused) exe.device_kernels[i] = loaded.at(k++);
#else
  fail("compile", "{}: the inputs are on {} but {}", rep.name, dev.name(), cuda_unavailable_reason());
#endif
}

}  // namespace

Executable compile_graph(Graph g, const CompileOptions& opts, CompileReport& rep) {
  return compile_graph_on(std::move(g), opts, rep, nullptr);
}

Executable compile_graph_on(Graph g, const CompileOptions& opts, CompileReport& rep, Device* dev) {
  bool explain = opts.explain || detail::env_flag("OPSCOPE_COMPILE_EXPLAIN");
  Executable exe;
  exe.name = rep.name.empty() ? g.name : rep.name;
  if (rep.name.empty()) rep.name = exe.name;
  Graph traced = g;
  if (rep.traced_graph.empty()) rep.traced_graph = traced.str();

  // passes
  auto t0 = std::chrono::steady_clock::now();
  PassOptions po = pass_options_from_env(opts.passes);
  if (dev && dev->type() == DeviceType::cuda) {
    po.pack = false;       // the CPU executor's packing (packed_weights.h)
    po.attention = false;  // a CPU kernel (kernels/cpu/attention.h)
    po.rotary = false;     // a CPU kernel (kernels/cpu/rotary.h)
  }
  rep.pass_log.clear();
  run_passes(g, po, &rep.pass_log);
  rep.compiled_graph = g.str();
  rep.passes_ms = detail::ms_since(t0);
  if (explain) std::fprintf(stderr, "[compile] %s %s\n%s", rep.name.c_str(), rep.signature.c_str(), rep.pass_log.c_str());

  for (const Node& n : g.nodes)
    if (n.kind == OpKind::untraced) {
      rep.eager_fallback = true;
      rep.fallback_reason = n.attrs.name.empty()
                                ? "it uses a tensor made inside it by an operation the tracer does not see"
                                : fmt::format("op '{}' is not known to the compiler", n.attrs.name);
      detail::warn_fallback(rep.name, rep.fallback_reason);
      return exe;
    }

  // Where each launch's time belongs in a profile, and what each kernel came from.
  exe.scopes.assign(g.nodes.size(), {});
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    OpClass c = op_class(n.kind);
    if (c == OpClass::source || c == OpClass::view) continue;
    exe.scopes[i] = launch_scope(g.origins_of(n));
    if (n.kind == OpKind::fused) register_kernel_origins(n.attrs.kernel->name, g.origins_of(n), exe.scopes[i].shared);
    // The library kernels a pass made of several ops name them too (an unpacked epilogue
    // matmul runs as matmul_f32 and its activation, which name themselves).
    if (n.kind == OpKind::attention)
      register_kernel_origins(cpu_kernels::kAttentionKernel, g.origins_of(n), exe.scopes[i].shared);
    if (n.kind == OpKind::rotary)
      register_kernel_origins(cpu_kernels::kRotaryKernel, g.origins_of(n), exe.scopes[i].shared);
    if (n.kind == OpKind::matmul && (n.attrs.epilogue || n.attrs.residual) && po.pack)
      register_kernel_origins(packed_kernel_name(g, n), g.origins_of(n), exe.scopes[i].shared);
  }

  // codegen
  t0 = std::chrono::steady_clock::now();
  std::vector<FusedKernel*> kernels;
  for (Node& n : g.nodes) {
    if (n.kind == OpKind::fused) kernels.push_back(n.attrs.kernel.get());
    else if (op_class(n.kind) != OpClass::source && op_class(n.kind) != OpClass::view) ++rep.eager_nodes;
  }
  exe.entries.assign(g.nodes.size(), nullptr);
  if (!kernels.empty()) {
    for (FusedKernel* k : kernels) rep.kernels.push_back(k->name);
    if (dev && dev->type() == DeviceType::cuda) {  // CUDA C through NVRTC instead of C++
      compile_for_cuda(g, kernels, *dev, opts, rep, exe);
      exe.graph = std::move(g);
      return exe;
    }
    rep.source = generate_library(kernels);
    for (FusedKernel* k : kernels) rep.symbols.push_back(k->symbol);
    rep.codegen_ms = detail::ms_since(t0);

    // build or load the artifact
    std::string root = cache_root(opts.cache_dir);
    ArtifactSpec spec;
    spec.name = rep.name;
    spec.source = rep.source;
    spec.symbols = rep.symbols;
    spec.compiler = find_compiler(opts.cxx, root);
    spec.flags = opts.cxx_flags;
    for (const char* f : {"-std=c++17", "-shared", "-fPIC"}) spec.flags.push_back(f);
    Graph keyed = g;
    keyed.name = "fn";  // the function's name is not part of what the artifact computes
    std::string key = fmt::format("opscope-compile v{}\nisa: {}\ncompiler: {}\n{}\nflags: {}\n{}\n{}", kCodegenVersion,
                                  host_isa(), fmt::join(spec.compiler.command, " "), spec.compiler.version,
                                  fmt::join(spec.flags, " "), keyed.str(), rep.source);
    spec.hash = hex64(fnv1a64(key));
    spec.manifest_json = detail::manifest_part(traced, g);
    std::string name = rep.name;
    size_t nk = kernels.size();
    std::string cc = spec.compiler.command.back();
    Artifact art = load_or_build(root, spec, [&] {
      std::fprintf(stderr, "[compile] %s: building %zu fused kernel%s with %s into %s/%s ...\n", name.c_str(), nk,
                   nk == 1 ? "" : "s", cc.c_str(), root.c_str(), spec.hash.c_str());
    });
    if (!art.damage.empty())
      std::fprintf(stderr, "[compile] %s: cache entry %s/%s was damaged (%s); rebuilt it\n", name.c_str(),
                   root.c_str(), spec.hash.c_str(), art.damage.c_str());
    rep.hash = spec.hash;
    rep.artifact_dir = art.dir;
    rep.cache_hit = art.hit;
    rep.rebuilt_because = art.damage;
    rep.build_ms = art.build_ms;
    rep.load_ms = art.load_ms;
    exe.library = art.library;
    std::vector<KernelArtifact> reg;
    for (FusedKernel* fk : kernels)
      reg.push_back({fk->name, fk->symbol, spec.hash, art.dir, art.dir + "/manifest.json"});
    register_artifact(reg);
    size_t k = 0;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (g.nodes[i].kind == OpKind::fused) exe.entries[i] = reinterpret_cast<KernelEntry>(art.entries[k++]);
  }
  exe.graph = std::move(g);
  if (po.pack) exe.packed = std::make_shared<PackedWeights>(exe.graph);
  return exe;
}

}  // namespace compiler

using compiler::detail::CompiledState;
using compiler::detail::Entry;

CompiledFunction compile(TensorFn fn, std::string name, CompileOptions options) {
  if (!fn) fail("compile", "{}: the function is empty", name);
  return compile_all([fn = std::move(fn)](const std::vector<Tensor>& xs) { return std::vector<Tensor>{fn(xs)}; },
                     std::move(name), std::move(options));
}

CompiledFunction compile_all(TensorsFn fn, std::string name, CompileOptions options) {
  if (!fn) fail("compile", "{}: the function is empty", name);
  if (name.empty()) name = "compiled";
  auto st = std::make_shared<CompiledState>();
  st->fn = std::move(fn);
  st->name = name;
  st->op_name = compiler::detail::intern(name);
  st->compile_op_name = compiler::detail::intern("compile:" + name);
  st->opts = std::move(options);
  return CompiledFunction(std::move(st));
}

const std::string& CompiledFunction::name() const { return st_->name; }

size_t CompiledFunction::num_signatures() const {
  std::lock_guard<std::mutex> g(st_->m);
  return st_->entries.size();
}

namespace {
void check_inputs(const std::string& name, const std::vector<Tensor>& xs) {
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!xs[i].defined()) fail(name, "input {} is undefined", i);
    if (&xs[i].device() != &xs[0].device())
      fail(name, "input {} is on {} but input 0 is on {}", i, xs[i].device().name(), xs[0].device().name());
  }
  // Before tracing (which runs the function on the device): say plainly why not.
  if (!xs.empty() && xs[0].device().type() == DeviceType::cuda && !cuda_available())
    fail("compile", "{}: the inputs are on {} but {}", name, xs[0].device().name(), cuda_unavailable_reason());
}
}  // namespace

Tensor CompiledFunction::operator()(const std::vector<Tensor>& inputs) const { return call_all(inputs).at(0); }

std::vector<Tensor> CompiledFunction::call_all(const std::vector<Tensor>& inputs) const {
  CompiledState& st = *st_;
  // Inside another function being traced: trace through this one.
  if (compiler::tracing()) return st.fn(inputs);
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : inputs) ptrs.push_back(&t);
  std::span<const Tensor* const> span(ptrs);
  check_inputs(st.name, inputs);
  std::string sig = compiler::detail::signature(inputs);
  std::shared_ptr<Entry> e;
  {
    std::unique_lock<std::mutex> g(st.m);
    auto it = st.entries.find(sig);
    if (it == st.entries.end()) {
      OpScope scope(st.compile_op_name, span, __builtin_return_address(0));
      std::vector<Tensor> result;
      auto fresh = compiler::detail::build(st, inputs, &result);
      st.entries.emplace(sig, fresh);
      return result;  // the traced (eager) run already computed it
    }
    e = it->second;
  }
  OpScope scope(st.op_name, span, __builtin_return_address(0));
  if (e->report.eager_fallback) return st.fn(inputs);
  return e->exe.run(inputs);
}

CompileReport CompiledFunction::report(const std::vector<Tensor>& inputs) const {
  CompiledState& st = *st_;
  check_inputs(st.name, inputs);
  std::string sig = compiler::detail::signature(inputs);
  std::unique_lock<std::mutex> g(st.m);
  auto it = st.entries.find(sig);
  if (it == st.entries.end()) {
    std::vector<const Tensor*> ptrs;
    for (const Tensor& t : inputs) ptrs.push_back(&t);
    OpScope scope(st.compile_op_name, std::span<const Tensor* const>(ptrs), __builtin_return_address(0));
    it = st.entries.emplace(sig, compiler::detail::build(st, inputs, nullptr)).first;
  }
  return it->second->report;
}

}  // namespace opscope
