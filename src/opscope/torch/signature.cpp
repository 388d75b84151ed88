// opscope.compile's guard: the key that picks a compiled plan for a call. A module's call
// has every parameter and buffer among its inputs (mobilenet_v3_small: 240), and building
// that key in Python (shape, stride, dtype, device, requires_grad of each) took ~0.5 ms a call,
// all of it before the first kernel is queued, so the device idled through it. Here it is
// one pass over the tensors' metadata, exact (no hash that could collide).
#include <pybind11/pybind11.h>
#include <torch/csrc/autograd/python_variable.h>

#include <cstdint>
#include <string>

namespace py = pybind11;

namespace opscope::torch_bridge {

namespace {

void append(std::string& key, int64_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); }

// bytes: for each tensor its rank, sizes, strides, dtype, layout, device and
// requires_grad; None when an item is not a tensor (the caller keys those by value).
py::object signature_key(const py::sequence& items) {
  std::string key;
  key.reserve(items.size() * 96);
  for (const py::handle item : items) {
    if (!THPVariable_Check(item.ptr())) return py::none();
    const at::Tensor& t = THPVariable_Unpack(item.ptr());
    append(key, t.dim());
    for (int64_t s : t.sizes()) append(key, s);
    for (int64_t s : t.strides()) append(key, s);
    append(key, int64_t(t.scalar_type()) | int64_t(t.layout()) << 8 | int64_t(t.device().type()) << 16 |
                    int64_t(t.device().index() + 1) << 32 | int64_t(t.requires_grad()) << 48);
  }
  return py::bytes(key);
}

}  // namespace

void bind_signature(py::module_& m) {
  m.def("_signature_key", &signature_key, py::arg("items"),
        "opscope.compile's plan key for a list of tensors (bytes), or None if an item is not a tensor");
}

}  // namespace opscope::torch_bridge
