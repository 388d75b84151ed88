// The torch front of opscope's profiler (opscope.profiler in Python): a profile window is
// an opscope Profiler session plus a global RecordFunction callback, so every aten op
// (CPU or device), every record_function range and every autograd node becomes a framework
// event of the same trace as the device's launches and kernels. While the callback is on,
// the bridge's op scopes record no op of their own (prof::external_ops()), so a kernel's
// launch carries the aten op's correlation id and its time is that op's Self Device time.
// With with_stack each aten op also records the Python line that called it.
#include <ATen/record_function.h>
#include <fmt/format.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/autograd/python_variable.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "opscope/analysis/key_averages.h"
#include "opscope/analysis/line_averages.h"
#include "opscope/analysis/roofline.h"
#include "opscope/core/error.h"
#include "opscope/profiler/chrome_trace.h"
#include "opscope/profiler/config.h"
#include "opscope/profiler/record_function.h"
#include "opscope/profiler/session.h"
#include "opscope/profiler/store.h"
#include "opscope/runtime/probe.h"
#include "opscope/torch/bridge.h"

namespace py = pybind11;

namespace opscope::torch_bridge {

namespace {

// ---- names: an aten op's name points into its schema (lives as long as the process);
// other scopes may pass a temporary string. The recorder keeps name pointers until
// collection, so each distinct name gets one copy that is never freed.
const char* stable_name(const char* name) {
  thread_local std::unordered_map<const char*, const char*> cache;
  auto it = cache.find(name);
  if (it != cache.end() && std::strcmp(it->second, name) == 0) return it->second;
  static std::mutex m;
  static std::unordered_map<std::string, std::unique_ptr<std::string>>* copies =
      new std::unordered_map<std::string, std::unique_ptr<std::string>>;  // leaked: read at exit
  const char* copy;
  {
    std::lock_guard<std::mutex> g(m);
    auto& slot = (*copies)[name];
    if (!slot) slot = std::make_unique<std::string>(name);
    copy = slot->c_str();
  }
  cache[name] = copy;
  return copy;
}

std::string_view dtype_str(at::ScalarType t) {
  if (std::optional<DType> d = to_dtype(t)) return dtype_name(*d);
  switch (t) {
    case at::kBool: return "bool";
    case at::kByte: return "u8";
    case at::kChar: return "i8";
    case at::kShort: return "i16";
    case at::kDouble: return "f64";
    default: return c10::toString(t);
  }
}

void describe_tensor(std::string& s, const at::Tensor& t) {
  if (!t.defined()) {
    s += "undefined";
    return;
  }
  s += '(';
  for (int64_t i = 0; i < t.dim(); ++i) fmt::format_to(std::back_inserter(s), "{}{}", i ? ", " : "", t.size(i));
  fmt::format_to(std::back_inserter(s), ") {}", dtype_str(t.scalar_type()));
}

// "[(4, 4096) f32, (4096) f32, scalar]": opscope's record_shapes form, every input named.
std::string describe_inputs(c10::ArrayRef<const c10::IValue> inputs) {
  std::string s = "[";
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i) s += ", ";
    const c10::IValue& v = inputs[i];
    if (v.isTensor()) {
      describe_tensor(s, v.toTensor());
    } else if (v.isTensorList()) {
      s += '[';
      auto list = v.toTensorList();
      for (size_t j = 0; j < list.size(); ++j) {
        if (j) s += ", ";
        describe_tensor(s, list.get(j));
      }
      s += ']';
    } else if (v.isNone()) {
      s += "None";
    } else if (v.isScalar()) {
      s += "scalar";
    } else if (v.isIntList()) {
      s += "int[]";
    } else {
      s += v.tagKind();
    }
  }
  return s + "]";
}

// ---- with_stack: the Python line that called the op
std::atomic<bool> g_stack{false};
std::vector<std::string> g_skip;  // torch's and opscope's package folders (set once at import)

bool skipped(const char* file) {
  for (const std::string& p : g_skip)
    if (std::strncmp(file, p.c_str(), p.size()) == 0) return true;
  return false;
}

// "script.py:12 (forward)": the innermost frame outside torch's and opscope's own Python.
// Only on threads Python made (torch calls ops with the GIL released; a thread of torch's
// own pool has no frames and must not wait for the GIL).
std::string python_call_site() {
  if (!Py_IsInitialized() || !PyGILState_GetThisThreadState()) return {};
  PyGILState_STATE gil = PyGILState_Ensure();
  std::string out;
  PyFrameObject* f = PyEval_GetFrame();
  Py_XINCREF(f);
  while (f && out.empty()) {
    PyCodeObject* code = PyFrame_GetCode(f);
    const char* file = PyUnicode_AsUTF8(code->co_filename);
    if (file && !skipped(file)) {
      const char* fn = PyUnicode_AsUTF8(code->co_name);
      out = fmt::format("{}:{} ({})", file, PyFrame_GetLineNumber(f), fn ? fn : "?");
    }
    Py_DECREF(code);
    PyFrameObject* back = out.empty() ? PyFrame_GetBack(f) : nullptr;
    Py_DECREF(f);
    f = back;
  }
  Py_XDECREF(f);
  if (PyErr_Occurred()) PyErr_Clear();
  PyGILState_Release(gil);
  return out;
}

// ---- the RecordFunction callback
std::atomic<bool> g_shapes{false};

// The callback is on only during a window; begin always pushes a scope and end always
// pops it, so an op that straddles the window's end leaves this thread's stack balanced.
std::unique_ptr<at::ObserverContext> on_begin(const at::RecordFunction& fn) {
  if (fn.scope() == at::RecordScope::USER_SCOPE) {
    prof::range_begin(fn.name());
  } else {
    std::string shapes, site;
    if (g_shapes.load(std::memory_order_relaxed)) shapes = describe_inputs(fn.inputs());
    if (g_stack.load(std::memory_order_relaxed)) [[unlikely]] site = python_call_site();
    prof::op_begin_described(stable_name(fn.name()), shapes, fn.seqNr(), site);
  }
  return nullptr;
}

// Scopes are strictly nested per thread: the end pops the innermost. A RecordFunction
// ends on the thread that began it except for async RPC ops, which are not recorded here.
void on_end(const at::RecordFunction&, at::ObserverContext*) { prof::op_end(0); }

// ---- an op opened from Python: opscope.compile's call (its regions and the eager aten
// ops between them under one op named after the function). Only while torch's ops are
// recorded (a window of opscope.profiler); otherwise the regions' own ops name the call.
class PythonOp {
 public:
  explicit PythonOp(const std::string& name) : name_(stable_name(name.c_str())) {}

  bool begin(const py::sequence& inputs) const {
    if (!prof::external_ops()) return false;
    std::string shapes;
    if (g_shapes.load(std::memory_order_relaxed)) {
      std::vector<c10::IValue> values;
      for (py::handle h : inputs)
        values.push_back(THPVariable_Check(h.ptr()) ? c10::IValue(THPVariable_Unpack(h.ptr())) : c10::IValue());
      shapes = describe_inputs(c10::ArrayRef<const c10::IValue>(values.data(), values.size()));
    }
    prof::op_begin_described(name_, shapes, -1);
    return true;
  }
  void end() const { prof::op_end(0); }

 private:
  const char* name_;
};

// ---- one profile window
class Window {
 public:
  explicit Window(prof::ProfilerConfig cfg) : profiler_(std::move(cfg)) {}
  ~Window() {
    if (handle_) at::removeCallback(handle_);
    prof::g_external_ops.store(false);
  }

  void start() {
    const prof::ProfilerConfig& cfg = profiler_.config();
    if (cfg.layers & prof::kDevice) {
      // The roofline's peaks, measured once per process on the device (~0.2 s).
      const runtime::DevicePeaks& peaks = runtime::device_peaks(device(0));
      analysis::attach_device_peaks(peaks.to_json());
    }
    profiler_.start();
    if (cfg.layers & prof::kFramework) {
      g_shapes.store(cfg.record_shapes);
      g_stack.store(cfg.with_stack);
      prof::g_external_ops.store(true);
      at::RecordFunctionCallback cb(&on_begin, &on_end);
      cb.needsInputs(cfg.record_shapes)
          .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION, at::RecordScope::USER_SCOPE});
      handle_ = at::addGlobalCallback(cb);
    }
  }

  // Ends the window: later ops are not recorded; the devices finish what it queued.
  std::shared_ptr<prof::Trace> stop() {
    if (handle_) {
      at::removeCallback(handle_);
      handle_ = 0;
    }
    prof::g_external_ops.store(false);
    {
      py::gil_scoped_release nogil;
      profiler_.stop();
    }
    return std::make_shared<prof::Trace>(profiler_.trace());
  }

 private:
  prof::Profiler profiler_;
  at::CallbackHandle handle_ = 0;
};

prof::ProfilerConfig make_config(const std::string& layers, const std::string& cores, const std::string& output_dir,
                                 int64_t max_events, bool record_shapes, bool with_stack,
                                 bool correlate_device_time, const std::string& sample_rate) {
  prof::ProfilerConfig c;
  c.sample_rate_hz = prof::parse_sample_rate(sample_rate, "sample_rate");
  c.layers = prof::parse_layers(layers, "layers");
  c.cores = prof::CoreSet::parse(cores, "cores");
  c.output_dir = output_dir;
  c.max_events = max_events;
  c.record_shapes = record_shapes;
  c.with_stack = with_stack;
  c.correlate_device_time = correlate_device_time;
  c.validate();
  return c;
}

// key_averages of a trace, computed once per prof.key_averages() call: its rows go to
// Python as JSON, and .table() prints from the same object (a million events take ~0.5 s
// to average here; the table used to average them again).
std::shared_ptr<analysis::KeyAverages> key_averages_of(const prof::Trace& t, bool by_shape, int by_stack) {
  py::gil_scoped_release nogil;
  return std::make_shared<analysis::KeyAverages>(analysis::key_averages(t, by_shape, by_stack));
}

}  // namespace

void bind_profiler(py::module_& m) {
  m.def("_profiler_config", [](const std::string& layers, const std::string& cores, const std::string& output_dir,
                                int64_t max_events, bool record_shapes, bool with_stack, bool correlate,
                                const std::string& sample_rate) {
    return make_config(layers, cores, output_dir, max_events, record_shapes, with_stack, correlate, sample_rate)
        .to_json();
  });
  m.def("_profiler_skip_frames", [](std::vector<std::string> prefixes) { g_skip = std::move(prefixes); });
  m.def("_profiler_env_enabled", &prof::ProfilerConfig::env_enabled);
  m.def("_profiler_env", [] {
    prof::ProfilerConfig c = prof::ProfilerConfig::from_env();
    py::dict d;
    d["enabled"] = prof::ProfilerConfig::env_enabled();
    d["layers"] = prof::layers_str(c.layers);
    d["cores"] = c.cores.str();
    d["output_dir"] = c.output_dir;
    d["max_events"] = c.max_events;
    d["record_shapes"] = c.record_shapes;
    d["with_stack"] = c.with_stack;
    d["sample_rate"] = c.sample_rate_hz == prof::ProfilerConfig::kAutoSampleRate ? std::string("auto")
                                                                                 : std::to_string(c.sample_rate_hz);
    return d;
  });

  py::class_<analysis::KeyAverages, std::shared_ptr<analysis::KeyAverages>>(m, "_KeyAverages")
      .def("table",
           [](const analysis::KeyAverages& ka, const std::string& sort_by, int64_t row_limit, const std::string& unit,
              size_t width, const std::vector<std::string>& columns) {
             analysis::check_table_columns(columns);
             return ka.table(sort_by, row_limit, unit, analysis::TableLayout{columns, width});
           })
      .def("to_json", [](const analysis::KeyAverages& ka, const std::string& sort_by) { return ka.to_json(sort_by); });

  py::class_<prof::Trace, std::shared_ptr<prof::Trace>>(m, "_Trace")
      .def("key_averages", &key_averages_of)
      // key_averages(group_by="line"): the instructions layer's samples per source line, as
      // JSON rows and the CLI's table (`opscope table --group-by-line`).
      .def("line_averages",
           [](const prof::Trace& t) {
             analysis::LineAverages l = analysis::line_averages(t, "group_by", "the profile");
             return std::make_pair(l.json().dump(), l.table(0));
           })
      .def("export", [](const prof::Trace& t, const std::string& dir) {
        py::gil_scoped_release nogil;
        prof::export_profile(t, dir);
      })
      .def("export_chrome_trace", [](const prof::Trace& t, const std::string& path) {
        py::gil_scoped_release nogil;
        prof::save_chrome_trace(t, path);
      })
      .def_readonly("dropped", &prof::Trace::dropped)
      .def_readonly("config_json", &prof::Trace::config_json)
      .def("__len__", [](const prof::Trace& t) { return t.events.size(); })
      // (kind, name, id, parent, t0_ns, t1_ns, device, track name, shapes, value)
      .def("events", [](const prof::Trace& t) {
        py::list out;
        for (const prof::TraceEvent& e : t.events) {
          const std::string& track = e.track >= 0 && size_t(e.track) < t.tracks.size() ? t.tracks[e.track].name : "";
          out.append(py::make_tuple(prof::kind_name(e.kind), e.name, e.id, e.parent, e.t0, e.t1, e.device, track,
                                    e.shapes, e.value));
        }
        return out;
      });

  py::class_<Window>(m, "_Window")
      .def(py::init([](const std::string& layers, const std::string& cores, const std::string& output_dir,
                       int64_t max_events, bool record_shapes, bool with_stack, bool correlate,
                       const std::string& sample_rate) {
        return std::make_unique<Window>(
            make_config(layers, cores, output_dir, max_events, record_shapes, with_stack, correlate, sample_rate));
      }))
      .def("start", &Window::start)
      .def("stop", &Window::stop);

  py::class_<PythonOp>(m, "_FrameworkOp")
      .def(py::init<const std::string&>())
      .def("begin", &PythonOp::begin)
      .def("end", &PythonOp::end);

  // nn.Module ranges (opscope.profiler's module hooks): named spans of the calling thread.
  // Each push is paired with one pop by the caller, recording or not, so the thread's
  // scope stack stays balanced when a window ends inside a module's forward.
  m.def("_range_push", [](const std::string& name) { prof::range_begin(name); });
  m.def("_range_pop", [] { prof::range_end(0); });
}

}  // namespace opscope::torch_bridge
