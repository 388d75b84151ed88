// The Python side of the opscope c10d backend (python/opscope/distributed.py makes the
// groups): a group is made from torch's own Python objects (the inner ProcessGroupGloo and
// the group's store), and returned as a torch ProcessGroup. Every profile then carries the
// job's "distributed" metadata: rank, world size, backend, the clock's offset to rank 0,
// and each group with its communication stream.
#include <fmt/format.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>  // c10::intrusive_ptr as a holder

#include <mutex>
#include <nlohmann/json.hpp>

#include "opscope/core/error.h"
#include "opscope/profiler/annotate.h"
#include "opscope/torch/c10d_group.h"

namespace py = pybind11;

namespace opscope::torch_bridge {

namespace {

using json = nlohmann::ordered_json;

// The job's metadata for the profiles: set once from Python at the default group's
// creation; the groups added as they are made.
struct JobInfo {
  std::mutex m;
  json job = json::object();
  json groups = json::array();
};
JobInfo& job_info() {
  static JobInfo* j = new JobInfo;  // leaked: the exit-time profile still reads it
  return *j;
}

// Adds the job's metadata to a collected profile's config (its "distributed" object).
void annotate(prof::Trace& t) {
  JobInfo& j = job_info();
  json d;
  {
    std::lock_guard<std::mutex> g(j.m);
    if (j.job.empty()) return;
    d = j.job;
    d["groups"] = j.groups;
  }
  json cfg = t.config_json.empty() ? json::object() : json::parse(t.config_json, nullptr, false);
  if (!cfg.is_object()) cfg = json::object();
  cfg["distributed"] = d;
  t.config_json = cfg.dump();
}

// Torch's Python object of a c10d class, as the C++ object it holds (a new reference).
template <class T>
c10::intrusive_ptr<T> torch_object(const py::handle& obj, const char* what) {
  T* p = nullptr;
  try {
    p = py::cast<T*>(obj);
  } catch (const py::cast_error&) {
  }
  if (!p) fail("opscope.distributed", "{} is not a torch {}", std::string(py::str(obj.get_type())), what);
  return c10::intrusive_ptr<T>::reclaim_copy(p);
}

c10::intrusive_ptr<c10d::ProcessGroup> new_group(const py::handle& gloo, const py::handle& store, int rank, int size,
                                                 int64_t timeout_ms, const std::string& name,
                                                 std::vector<int64_t> global_ranks, bool check_shapes) {
  if (size < 1 || rank < 0 || rank >= size) fail("opscope.distributed", "rank {} of a group of {}", rank, size);
  if (int64_t(global_ranks.size()) != size)
    fail("opscope.distributed", "{} global ranks for a group of {}", global_ranks.size(), size);
  GroupInfo info;
  info.name = name;
  info.rank = rank;
  info.size = size;
  info.global_ranks = std::move(global_ranks);
  info.timeout = std::chrono::milliseconds(timeout_ms);
  info.check_shapes = check_shapes;
  auto pg = c10::make_intrusive<ProcessGroupOpscope>(torch_object<c10d::ProcessGroup>(gloo, "ProcessGroup"),
                                                     torch_object<c10d::Store>(store, "Store"), std::move(info));
  JobInfo& j = job_info();
  {
    std::lock_guard<std::mutex> g(j.m);
    j.groups.push_back({{"name", name}, {"ranks", pg->info().global_ranks}, {"size", size},
                        {"stream", pg->comm_stream().id()}});
  }
  return pg;
}

ProcessGroupOpscope& opscope_group(const py::handle& obj) {
  auto* pg = dynamic_cast<ProcessGroupOpscope*>(py::cast<c10d::ProcessGroup*>(obj));
  if (!pg) fail("opscope.distributed", "not a process group of the opscope backend");
  return *pg;
}

}  // namespace

void bind_c10d(py::module_& m) {
  m.def("_c10d_new_group", &new_group, py::arg("gloo"), py::arg("store"), py::arg("rank"), py::arg("size"),
        py::arg("timeout_ms"), py::arg("name"), py::arg("global_ranks"), py::arg("check_shapes"));
  m.def("_c10d_set_job", [](const std::string& job_json) {
    json j = json::parse(job_json, nullptr, false);
    if (!j.is_object()) fail("opscope.distributed", "the job's metadata is not a JSON object");
    {
      std::lock_guard<std::mutex> g(job_info().m);
      job_info().job = j;
      job_info().groups = json::array();  // a new default group: a new job (after destroy_process_group)
    }
    prof::set_trace_annotator("distributed", &annotate);
  });
  m.def("_c10d_group_stream", [](const py::handle& pg) { return &opscope_group(pg).comm_stream(); },
        py::return_value_policy::reference);
  m.def("_c10d_group_broken", [](const py::handle& pg) { return opscope_group(pg).broken(); });
}

}  // namespace opscope::torch_bridge
