// opscope.compile's bridge to the compiler: Python lowers a region of an aten graph (from
// make_fx) into a small program of opscope ops; here that program becomes a TensorFn that
// calls those ops, and opscope::compile traces it (per input signature), runs the passes,
// generates and caches the kernels exactly as for a C++ function. A compiled call is one
// framework op named after the function: opened by the Python side around the whole call
// while torch's ops are recorded (the regions then record none), else each region's own.
#include <fmt/format.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>  // at::Tensor <-> torch.Tensor

#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "opscope/compiler/compile.h"
#include "opscope/compiler/origins.h"
#include "opscope/core/error.h"
#include "opscope/kernels/cpu/packed_matmul.h"
#include "opscope/ops/ops.h"
#include "opscope/profiler/hooks.h"
#include "opscope/torch/bridge.h"

namespace py = pybind11;

namespace opscope::torch_bridge {

namespace {

// One instruction: op, tensor operands (indices into the values: the inputs, then each
// instruction's result), integer and float arguments, a flag (keepdim, scalar on the left).
struct Instr {
  std::string op;
  std::vector<int64_t> refs;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  int64_t flag = 0;
  int64_t origin = -1;  // index into the region's origins: the aten op and modules it came from
};

// (aten op, module calls around it, outermost first), from Python.
using PyOrigin = std::pair<std::string, std::vector<std::string>>;

using Unary = Tensor (*)(const Tensor&);
using Binary = Tensor (*)(const Tensor&, const Tensor&);
using BinaryScalar = Tensor (*)(const Tensor&, double);
using Reduce = Tensor (*)(const Tensor&, const std::vector<int64_t>&, bool);

const std::unordered_map<std::string, Unary>& unary_ops() {
  static const std::unordered_map<std::string, Unary> m = {
      {"neg", &neg},   {"abs", &abs},         {"exp", &exp},   {"log", &log},   {"sqrt", &sqrt},
      {"rsqrt", &rsqrt}, {"sin", &sin},       {"cos", &cos},   {"tanh", &tanh}, {"sigmoid", &sigmoid},
      {"silu", &silu}, {"gelu", &gelu},       {"relu", &relu}};
  return m;
}

const std::unordered_map<std::string, Binary>& binary_ops() {
  static const std::unordered_map<std::string, Binary> m = {
      {"add", static_cast<Binary>(&add)}, {"sub", static_cast<Binary>(&sub)}, {"mul", static_cast<Binary>(&mul)},
      {"div", static_cast<Binary>(&div)}, {"pow", static_cast<Binary>(&pow)},
      {"maximum", static_cast<Binary>(&maximum)}, {"minimum", static_cast<Binary>(&minimum)}};
  return m;
}

// x op s (flag 0) or s op x (flag 1).
Tensor binary_scalar(const std::string& op, const Tensor& x, double s, bool scalar_left) {
  if (scalar_left) {
    if (op == "add") return add(s, x);
    if (op == "sub") return sub(s, x);
    if (op == "mul") return mul(s, x);
    if (op == "div") return div(s, x);
    throw Error(fmt::format("[opscope.compile] {} with a scalar on the left is not lowered", op));
  }
  static const std::unordered_map<std::string, BinaryScalar> m = {
      {"add", static_cast<BinaryScalar>(&add)}, {"sub", static_cast<BinaryScalar>(&sub)},
      {"mul", static_cast<BinaryScalar>(&mul)}, {"div", static_cast<BinaryScalar>(&div)},
      {"pow", static_cast<BinaryScalar>(&pow)}, {"maximum", static_cast<BinaryScalar>(&maximum)},
      {"minimum", static_cast<BinaryScalar>(&minimum)}};
  auto it = m.find(op);
  if (it == m.end()) throw Error(fmt::format("[opscope.compile] no scalar form of {}", op));
  return it->second(x, s);
}

Shape shape_of(const std::vector<int64_t>& v) {
  Shape s;
  for (int64_t d : v) s.push_back(d);
  return s;
}

Tensor eval(const Instr& in, const std::vector<Tensor>& v) {
  auto arg = [&](size_t i) -> const Tensor& {
    if (i >= in.refs.size() || in.refs[i] < 0 || size_t(in.refs[i]) >= v.size())
      throw Error(fmt::format("[opscope.compile] {}: operand {} is out of range", in.op, i));
    return v[in.refs[i]];
  };
  const std::string& op = in.op;
  if (auto it = unary_ops().find(op); it != unary_ops().end()) return it->second(arg(0));
  if (auto it = binary_ops().find(op); it != binary_ops().end() && in.refs.size() == 2)
    return it->second(arg(0), arg(1));
  if (binary_ops().count(op) && in.refs.size() == 1 && in.floats.size() == 1)
    return binary_scalar(op, arg(0), in.floats[0], in.flag != 0);
  static const std::unordered_map<std::string, Reduce> reductions = {
      {"sum", &sum}, {"mean", &mean}, {"max", &max}, {"min", &min}};
  if (auto it = reductions.find(op); it != reductions.end()) return it->second(arg(0), in.ints, in.flag != 0);
  if (op == "var") return var(arg(0), in.ints, in.flag != 0, int64_t(in.floats.at(0)));
  if (op == "softmax") return softmax(arg(0), in.ints.at(0));
  if (op == "rms_norm") return rms_norm(arg(0), arg(1), in.floats.at(0));
  if (op == "layer_norm") return layer_norm(arg(0), arg(1), arg(2), in.floats.at(0));
  if (op == "matmul") return matmul(arg(0), arg(1));
  if (op == "embedding") return embedding(arg(0), arg(1));
  if (op == "concat") {
    std::vector<Tensor> xs;
    for (size_t i = 0; i < in.refs.size(); ++i) xs.push_back(arg(i));
    return concat(xs, in.ints.at(0));
  }
  if (op == "view") return arg(0).view(shape_of(in.ints));
  if (op == "reshape") return arg(0).reshape(shape_of(in.ints));
  if (op == "expand") return arg(0).expand(shape_of(in.ints));
  if (op == "transpose") return arg(0).transpose(in.ints.at(0), in.ints.at(1));
  if (op == "permute") return arg(0).permute(in.ints);
  if (op == "unsqueeze") return arg(0).unsqueeze(in.ints.at(0));
  if (op == "squeeze") return arg(0).squeeze(in.ints.at(0));
  if (op == "slice") return arg(0).slice(in.ints.at(0), in.ints.at(1), in.ints.at(2), in.ints.at(3));
  if (op == "contiguous") return arg(0).contiguous();
  if (op == "clone") return arg(0).clone();
  if (op == "to") return arg(0).to(DType(in.ints.at(0)));
  if (op == "ones") return ones(shape_of(in.ints), arg(0).dtype(), &arg(0).device());
  if (op == "zeros") return zeros(shape_of(in.ints), arg(0).dtype(), &arg(0).device());
  throw Error(fmt::format("[opscope.compile] unknown program op '{}'", op));
}

// One copy of each region name for the life of the process.
const char* interned(const std::string& name) {
  static std::mutex m;
  static std::unordered_set<std::string>* names = new std::unordered_set<std::string>;  // leaked: read at exit
  std::lock_guard<std::mutex> g(m);
  return names->insert(name).first->c_str();
}

DType dtype_code(const std::string& name) { return parse_dtype(name, "opscope.compile"); }

class Region {
 public:
  Region(std::string name, std::vector<Instr> program, int64_t n_inputs, std::vector<int64_t> outputs, bool explain,
         const std::vector<std::string>& disabled, const std::vector<PyOrigin>& py_origins)
      : name_(std::move(name)), op_name_(interned(name_)) {
    std::vector<compiler::Origin> origins;
    for (const auto& [op, modules] : py_origins) origins.push_back({op, modules});
    for (const Instr& in : program)
      if (in.origin >= int64_t(origins.size()))
        throw Error(fmt::format("[opscope.compile] region {}: origin {} is out of range", name_, in.origin));
    if (program.empty()) throw Error(fmt::format("[opscope.compile] region {} has no instructions", name_));
    if (outputs.empty()) throw Error(fmt::format("[opscope.compile] region {} has no outputs", name_));
    for (int64_t output : outputs)
      if (output < 0 || output >= n_inputs + int64_t(program.size()))
        throw Error(fmt::format("[opscope.compile] region {}: output {} is out of range", name_, output));
    auto fn = [program = std::move(program), n_inputs, outputs, origins = std::move(origins)](const std::vector<Tensor>& xs) {
      if (int64_t(xs.size()) != n_inputs)
        throw Error(fmt::format("[opscope.compile] the region takes {} tensors, got {}", n_inputs, xs.size()));
      std::vector<Tensor> v(xs.begin(), xs.end());
      v.reserve(xs.size() + program.size());
      for (const Instr& in : program) {
        // While traced, the nodes this instruction records come from its aten op.
        compiler::OriginScope where(in.origin >= 0 ? &origins[size_t(in.origin)] : nullptr);
        v.push_back(eval(in, v));
      }
      std::vector<Tensor> outs;
      for (int64_t o : outputs) outs.push_back(v[size_t(o)]);
      return outs;
    };
    CompileOptions options;
    options.explain = explain;
    for (const std::string& pass : disabled)
      if (!compiler::disable_pass(options.passes, pass))
        throw Error(fmt::format("[opscope.compile] passes: unknown pass '{}' (expected {})", pass,
                                compiler::kPassNames));
    fn_ = std::make_unique<CompiledFunction>(compile_all(std::move(fn), name_, options));
  }

  std::vector<Tensor> inputs(const std::vector<at::Tensor>& xs) const {
    std::vector<Tensor> out;
    out.reserve(xs.size());
    for (const at::Tensor& x : xs) out.push_back(from_torch(x, name_.c_str()));
    return out;
  }

  std::vector<at::Tensor> call(const std::vector<at::Tensor>& xs) const {
    std::vector<Tensor> in = inputs(xs);
    std::vector<Tensor> outs;
    {
      py::gil_scoped_release nogil;
      // While torch's ops are recorded, the call's op is open above (opscope.compile's
      // Python): this region names its kernels and errors but records no op of its own.
      std::optional<FrameworkOpScope> quiet;
      if (prof::external_ops()) quiet.emplace(op_name_, std::span<const Tensor* const>{});
      outs = fn_->call_all(in);
    }
    std::vector<at::Tensor> r;
    r.reserve(outs.size());
    for (const Tensor& t : outs) r.push_back(to_torch(t));
    return r;
  }

  CompileReport report(const std::vector<at::Tensor>& xs) const {
    std::vector<Tensor> in = inputs(xs);
    py::gil_scoped_release nogil;
    return fn_->report(in);
  }

  const std::string& name() const { return name_; }

 private:
  std::string name_;
  const char* op_name_;  // outlives any launch that names its errors by it
  std::unique_ptr<CompiledFunction> fn_;
};

}  // namespace

void bind_compile(py::module_& m) {
  py::class_<Instr>(m, "_Instr")
      .def(py::init([](std::string op, std::vector<int64_t> refs, std::vector<int64_t> ints, std::vector<double> floats,
                       int64_t flag, int64_t origin) {
             return Instr{std::move(op), std::move(refs), std::move(ints), std::move(floats), flag, origin};
           }),
           py::arg("op"), py::arg("refs") = std::vector<int64_t>{}, py::arg("ints") = std::vector<int64_t>{},
           py::arg("floats") = std::vector<double>{}, py::arg("flag") = 0, py::arg("origin") = -1)
      .def_readonly("op", &Instr::op);
  m.def("_dtype_code", [](const std::string& name) { return int64_t(dtype_code(name)); });
  // Whether a compiled (M, K) @ (K, N)^T product on a weight in `dtype` packs the weight on
  // this CPU: oneDNN has a kernel for it other than its reference one (bf16: none without
  // AVX-512). Tests ask before they expect a pack.
  m.def("_packs_matmul", [](int64_t M, int64_t K, int64_t N, const std::string& dtype) {
    DType dt = parse_dtype(dtype);
    Tensor a = empty({M, K}, dt), b = empty({N, K}, dt).transpose(0, 1);
    return cpu_kernels::PackedMatmul::make(a, b, nullptr, cpu().num_cores()) != nullptr;
  });

  py::class_<CompileReport>(m, "_CompileReport")
      .def_readonly("kernels", &CompileReport::kernels)
      .def_readonly("eager_nodes", &CompileReport::eager_nodes)
      .def_readonly("cache_hit", &CompileReport::cache_hit)
      .def_readonly("hash", &CompileReport::hash)
      .def_readonly("artifact_dir", &CompileReport::artifact_dir)
      .def_readonly("traced_graph", &CompileReport::traced_graph)
      .def_readonly("compiled_graph", &CompileReport::compiled_graph)
      .def_readonly("source", &CompileReport::source)
      .def_readonly("eager_fallback", &CompileReport::eager_fallback)
      .def_readonly("fallback_reason", &CompileReport::fallback_reason)
      .def_readonly("trace_ms", &CompileReport::trace_ms)
      .def_readonly("build_ms", &CompileReport::build_ms)
      .def("__str__", &CompileReport::str);

  py::class_<Region>(m, "_Region")
      .def(py::init<std::string, std::vector<Instr>, int64_t, std::vector<int64_t>, bool, const std::vector<std::string>&,
                    const std::vector<PyOrigin>&>(),
           py::arg("name"), py::arg("program"), py::arg("n_inputs"), py::arg("outputs"), py::arg("explain") = false,
           py::arg("disabled") = std::vector<std::string>{}, py::arg("origins") = std::vector<PyOrigin>{})
      .def("__call__", &Region::call)
      .def("report", &Region::report)
      .def_property_readonly("name", &Region::name);
}

}  // namespace opscope::torch_bridge
