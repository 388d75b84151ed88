// Custom kernels: user-written C++ kernels registered as ops (the analog of Neuron's NKI
// custom operators). A registered op is called like a built-in one, goes through the
// same three layers, and shows in profiles under its own name.
//
//   auto scale2 = opscope::register_op({
//       .name = "scale2",
//       .infer = [](std::span<const Tensor> in) { return OutputSpec{in[0].shape(), in[0].dtype()}; },
//       .cpu = [](std::span<const KernelTensor> in, const KernelTensor& out, int64_t b, int64_t e) {
//         for (int64_t r = b; r < e; ++r) ...  // rows [b, e) of the output
//       }});
//   Tensor y = scale2({x});
#pragma once
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "opscope/runtime/tensor.h"

namespace opscope {

// A tensor as a kernel sees it: contiguous data, no reference counting.
struct KernelTensor {
  void* data = nullptr;
  Shape shape;
  DType dtype = DType::f32;
  int64_t numel() const { return shape.numel(); }
  // Elements per row (the last dim; 1 for a scalar).
  int64_t row_size() const { return shape.size() ? shape.back() : 1; }
  template <class T> T* ptr() const { return static_cast<T*>(data); }
};

struct OutputSpec {
  Shape shape;
  DType dtype = DType::f32;
};

struct CustomOpDef {
  std::string name;
  // Output shape and dtype from the inputs; throw (any exception) to reject the call.
  // The {} initializers let callers name only the fields they set (designated
  // initializers) without -Wmissing-field-initializers.
  std::function<OutputSpec(std::span<const Tensor> inputs)> infer{};
  // Runs on the device's cores over work units [begin, end): by default the output's
  // rows (numel / last dim). Inputs arrive contiguous.
  std::function<void(std::span<const KernelTensor> inputs, const KernelTensor& out, int64_t begin, int64_t end)>
      cpu{};
  // Optional: number of work units (default: output rows) and the fewest per core.
  std::function<int64_t(std::span<const KernelTensor> inputs, const KernelTensor& out)> work{};
  int64_t grain = 1;
  // Optional: bytes moved and flops, for the profiler (default: bytes of inputs + output).
  std::function<int64_t(std::span<const KernelTensor> inputs, const KernelTensor& out)> flops{};
};

class CustomOp {
 public:
  explicit CustomOp(const CustomOpDef* def) : def_(def) {}
  Tensor operator()(const std::vector<Tensor>& inputs) const;
  const std::string& name() const { return def_->name; }
  const CustomOpDef& def() const { return *def_; }

 private:
  const CustomOpDef* def_;
};

// Registers an op for the life of the process; the name must be new and a valid
// identifier ("[register_op] ..." errors otherwise).
CustomOp register_op(CustomOpDef def);
// The registered op of that name, or null.
const CustomOpDef* find_op(std::string_view name);
// Calls a registered op by name ("[call_op] no op named 'x' is registered").
Tensor call_op(std::string_view name, const std::vector<Tensor>& inputs);

}  // namespace opscope
