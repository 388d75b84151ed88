// opscope._C: the Python side of the device (the aten registrations live in the other
// files of this folder and load with the module). No torch types cross this boundary,
// so this file needs pybind11 only.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <vector>

#include "opscope/core/error.h"
#include "opscope/profiler/auto_profile.h"
#include "opscope/profiler/session.h"
#include "opscope/profiler/store.h"
#include "opscope/runtime/device.h"
#include "opscope/runtime/stream.h"
#include "opscope/torch/fallback.h"

namespace py = pybind11;

namespace opscope::torch_bridge {
int device_count();
void bind_profiler(py::module_& m);   // profiler.cpp
void bind_compile(py::module_& m);    // compile.cpp
void bind_signature(py::module_& m);  // signature.cpp
void bind_c10d(py::module_& m);       // c10d_bind.cpp
Device& device(int64_t index);
int64_t test_gate_new();              // ops_nn.cpp: gates for opscope::_test_kernel
void test_gate_open(int64_t gate);

namespace {
// `with opscope.stream(s):` guards, innermost last (entered and left on one thread).
thread_local std::vector<std::unique_ptr<StreamGuard>> t_guards;

py::dict memory_stats_dict(int64_t index) {
  AllocatorStats s = memory_stats(device(index));
  py::dict d;
  d["allocated_bytes"] = s.allocated;
  d["reserved_bytes"] = s.reserved;
  d["peak_allocated_bytes"] = s.peak_allocated;
  d["num_allocs"] = s.num_allocs;
  d["num_cache_hits"] = s.num_cache_hits;
  d["num_os_allocs"] = s.num_os_allocs;
  d["capacity_bytes"] = s.capacity;
  return d;
}

// Runs fn under an opscope profile of all layers; the events as (kind, name, id, parent,
// t0, t1) with times in ns. The profiler API proper is issue #15.
std::vector<std::tuple<std::string, std::string, uint64_t, uint64_t, int64_t, int64_t>> profile_events(
    const py::function& fn) {
  prof::Profiler p;
  p.start();
  try {
    fn();
  } catch (...) {
    p.stop();
    throw;
  }
  p.stop();
  std::vector<std::tuple<std::string, std::string, uint64_t, uint64_t, int64_t, int64_t>> out;
  for (const prof::TraceEvent& e : p.trace().events) out.emplace_back(prof::kind_name(e.kind), e.name, e.id, e.parent, e.t0, e.t1);
  return out;
}
}  // namespace

}  // namespace opscope::torch_bridge

PYBIND11_MODULE(_C, m) {
  using namespace opscope;
  using namespace opscope::torch_bridge;
  m.doc() = "opscope's PyTorch device (privateuseone) and runtime";
  m.def("device_count", &device_count);
  m.def("device_name", [](int64_t i) { return device(i).name(); });
  m.def("device_description", [](int64_t i) { return device(i).description(); });
  m.def("synchronize", [](int64_t i) {
    py::gil_scoped_release nogil;
    device(i).synchronize();
  }, py::arg("device") = 0);
  m.def("memory_stats", &memory_stats_dict, py::arg("device") = 0);
  m.def("empty_cache", [](int64_t i) { device(i).allocator().empty_cache(); }, py::arg("device") = 0);
  m.def("reset_peak_memory_stats", [](int64_t i) { device(i).allocator().reset_peak(); }, py::arg("device") = 0);

  py::class_<Stream, std::unique_ptr<Stream, py::nodelete>>(m, "_Stream")
      .def_property_readonly("id", &Stream::id)
      .def("synchronize", [](Stream& s) {
        py::gil_scoped_release nogil;
        s.synchronize();
      })
      .def("query", &Stream::query)
      .def("wait_stream", [](Stream& s, Stream& other) { s.wait(other.record()); });
  m.def("new_stream", [](int64_t i) { return &device(i).create_stream(); }, py::return_value_policy::reference,
        py::arg("device") = 0);
  m.def("default_stream", [](int64_t i) { return &device(i).default_stream(); }, py::return_value_policy::reference,
        py::arg("device") = 0);
  m.def("current_stream", [](int64_t i) { return &current_stream(device(i)); }, py::return_value_policy::reference,
        py::arg("device") = 0);
  m.def("_stream_enter", [](Stream& s) { t_guards.push_back(std::make_unique<StreamGuard>(s)); });
  m.def("_stream_exit", [] {
    if (!t_guards.empty()) t_guards.pop_back();
  });

  m.def("fallback_stats", [] {
    std::vector<std::tuple<std::string, int64_t, int64_t>> r;
    for (auto& [name, st] : fallback_stats()) r.emplace_back(name, st.count, st.total_ns);
    return r;
  });
  m.def("reset_fallback_stats", &reset_fallback_stats);
  m.def("set_fallback_warnings", &set_fallback_warnings);
  m.def("_profile_events", &profile_events);
  m.def("_test_gate_new", &test_gate_new);
  m.def("_test_gate_open", &test_gate_open);
  bind_profiler(m);
  bind_compile(m);
  bind_signature(m);
  bind_c10d(m);

  py::register_exception<opscope::Error>(m, "Error", PyExc_RuntimeError);
  // OPSCOPE_PROFILE=1 python ...: the whole run's profile (trace.json + profile.db) goes to
  // OPSCOPE_PROFILE_DIR at exit, as for a C++ program linked with the exporters.
  prof::set_default_exporter([](const prof::Trace& t, const std::string& dir) { prof::export_profile(t, dir); });
}
