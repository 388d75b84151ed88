// The boxed fallback: an aten op with no opscope kernel runs torch's CPU kernel on the
// device's own memory (it is host memory): synchronize, view each device tensor as a
// CPU tensor (no copy), call the op, and give back device tensors. Every fallback is
// counted and timed (fallback_report), warned about once per op, shown in the profile as
// the aten op with a nested range "opscope::cpu_fallback(<op>)", and an error under OPSCOPE_STRICT=1.
#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <omp.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>

#include "opscope/analysis/key_averages.h"
#include "opscope/core/error.h"
#include "opscope/profiler/record_function.h"
#include "opscope/torch/fallback.h"
#include "opscope/torch/kernels.h"

namespace opscope::torch_bridge {

namespace {
std::mutex g_m;
std::map<std::string, FallbackStat> g_stats;  // by "aten::name.overload"
std::set<std::string> g_warned;
bool g_warn = true;

bool strict() {
  const char* s = std::getenv("OPSCOPE_STRICT");
  return s && s[0] && std::string_view(s) != "0";
}

std::string full_name(const c10::OperatorHandle& op) {
  const auto& n = op.operator_name();
  return n.overload_name.empty() ? n.name : n.name + "." + n.overload_name;
}

std::string dtypes_of(const Stack& s, size_t base, size_t n) {
  std::string r;
  for (size_t i = base; i < base + n; ++i)
    if (s[i].isTensor() && s[i].toTensor().defined())
      r += (r.empty() ? "" : ", ") + std::string(c10::toString(s[i].toTensor().scalar_type()));
  return r;
}

// Runs torch's CPU kernel on the calling thread alone: torch's OpenMP workers spin-wait
// after each parallel region and starve the device's cores, which share the CPUs
// (resnet18's fallen-back convolutions ran 6x slower with 2 torch threads on 2 CPUs).
// omp_set_num_threads, not at::set_num_threads (which rebuilds torch's thread pools): it
// sets this thread's OpenMP team size, which torch's parallel_for reads.
class SingleThreaded {
 public:
  SingleThreaded() : prev_(omp_get_max_threads()) {
    if (prev_ > 1) omp_set_num_threads(1);
  }
  ~SingleThreaded() {
    if (prev_ > 1) omp_set_num_threads(prev_);
  }
  SingleThreaded(const SingleThreaded&) = delete;
  SingleThreaded& operator=(const SingleThreaded&) = delete;

 private:
  int prev_;
};

// A device tensor's CPU alias; others unchanged.
c10::IValue to_cpu(const c10::IValue& v) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    return on_device(t) ? c10::IValue(cpu_alias(t)) : v;
  }
  if (v.isTensorList()) {
    c10::List<at::Tensor> out;
    for (const at::Tensor& t : v.toTensorList()) out.push_back(on_device(t) ? cpu_alias(t) : t);
    return out;
  }
  if (v.isList() && v.toListRef().size() && (v.toListRef()[0].isTensor() || v.toListRef()[0].isNone())) {
    // Tensor?[] (index lists): at::native::cpu_fallback leaves these on the device.
    c10::List<c10::optional<at::Tensor>> out;
    for (const c10::IValue& e : v.toListRef()) {
      if (e.isNone()) {
        out.push_back(c10::nullopt);
      } else {
        const at::Tensor& t = e.toTensor();
        out.push_back(on_device(t) ? cpu_alias(t) : t);
      }
    }
    return out;
  }
  return v;
}

// A CPU result as a device tensor: a view of a device storage when its memory lies in one
// (in-place and out= results, views), else a new device tensor with a copy of its values.
at::Tensor to_device(const at::Tensor& r, const std::vector<at::Tensor>& device_inputs) {
  if (!r.defined()) return r;
  const void* p = r.storage() ? r.storage().data() : nullptr;
  for (const at::Tensor& d : device_inputs) {
    if (p && d.storage().data() == p && r.storage().nbytes() <= d.storage().nbytes()) {
      if (r.sizes() == d.sizes() && r.strides() == d.strides() && r.storage_offset() == d.storage_offset() &&
          r.dtype() == d.dtype())
        return d;
      at::Tensor v = at::detail::make_tensor<c10::TensorImpl>(c10::TensorImpl::VIEW, c10::Storage(d.storage()),
                                                              d.key_set(), r.dtype());
      v.unsafeGetTensorImpl()->set_sizes_and_strides(r.sizes(), r.strides());
      v.unsafeGetTensorImpl()->set_storage_offset(r.storage_offset());
      return v;
    }
  }
  return to_device_copy(r);
}
}  // namespace

void set_fallback_warnings(bool on) {
  std::lock_guard<std::mutex> g(g_m);
  g_warn = on;
}

std::vector<std::pair<std::string, FallbackStat>> fallback_stats() {
  std::lock_guard<std::mutex> g(g_m);
  return {g_stats.begin(), g_stats.end()};
}

void reset_fallback_stats() {
  std::lock_guard<std::mutex> g(g_m);
  g_stats.clear();
}

void cpu_fallback(const c10::OperatorHandle& op, Stack* stack) {
  const auto& schema = op.schema();
  if (meta_mode()) return op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::Meta), stack);
  size_t n = schema.arguments().size(), base = stack->size() - n;
  std::string name = full_name(op);
  if (strict())
    fail(schema.name(), "OPSCOPE_STRICT=1: opscope has no kernel for {} with these arguments ({}); it would run "
         "torch's CPU kernel", name, dtypes_of(*stack, base, n));
  bool warn = false;
  {
    std::lock_guard<std::mutex> g(g_m);
    warn = g_warn && g_warned.insert(name).second;
  }
  if (warn)
    TORCH_WARN("opscope: ", name, " (", dtypes_of(*stack, base, n), ") has no opscope kernel; it runs torch's CPU kernel on the "
               "device's memory (opscope.fallback_report() counts fallbacks, OPSCOPE_STRICT=1 makes them errors)");

  AtenScope scope(schema.name().c_str(), {});
  // A range per fallen-back op ("opscope::cpu_fallback(aten::cumprod)"): its own row in
  // key_averages, which puts such rows first (analysis/key_averages.h).
  prof::RecordFunction range(fmt::format("{}({})", analysis::kCpuFallbackRange, name));
  auto t0 = std::chrono::steady_clock::now();
  device(0).synchronize();  // the CPU kernel reads values: kernel errors surface here

  // Out arguments may be resized by the CPU kernel, which a view of device memory cannot
  // be: they get a CPU tensor, copied back after.
  std::vector<at::Tensor> device_inputs;
  std::vector<std::pair<size_t, at::Tensor>> outs;  // (argument index, device tensor)
  for (size_t i = 0; i < n; ++i) {
    c10::IValue& v = (*stack)[base + i];
    if (v.isTensor() && on_device(v.toTensor())) device_inputs.push_back(v.toTensor());
    if (v.isTensorList())
      for (const at::Tensor& t : v.toTensorList())
        if (on_device(t)) device_inputs.push_back(t);
    const c10::Argument& a = schema.arguments()[i];
    if (a.is_out() && v.isTensor() && on_device(v.toTensor())) {
      outs.emplace_back(i, v.toTensor());
      v = at::empty_like(cpu_alias(v.toTensor()));
    } else {
      v = to_cpu(v);
    }
  }
  std::vector<at::Tensor> cpu_outs;
  for (auto& [i, d] : outs) cpu_outs.push_back((*stack)[base + i].toTensor());

  {
    SingleThreaded one;
    op.callBoxed(stack);
  }

  size_t nret = schema.returns().size();
  for (size_t i = stack->size() - nret; i < stack->size(); ++i) {
    c10::IValue& v = (*stack)[i];
    if (v.isTensor()) {
      const at::Tensor& r = v.toTensor();
      bool replaced = false;
      for (size_t k = 0; k < outs.size(); ++k) {
        if (r.defined() && r.is_same(cpu_outs[k])) {
          at::Tensor d = outs[k].second;
          if (d.sizes() != r.sizes()) d.resize_(r.sizes());
          if (r.numel()) cpu_alias(d).copy_(r);
          v = d;
          replaced = true;
          break;
        }
      }
      if (!replaced) v = to_device(r, device_inputs);
    } else if (v.isTensorList()) {
      c10::List<at::Tensor> l;
      for (const at::Tensor& t : v.toTensorList()) l.push_back(to_device(t, device_inputs));
      v = l;
    }
  }
  int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  std::lock_guard<std::mutex> g(g_m);
  FallbackStat& st = g_stats[name];
  st.count++;
  st.total_ns += ns;
}

void Call::fall_back() const { cpu_fallback(op_, stack_); }

void Call::refused(const opscope::Error& e) const {
  if (is_out_of_memory(e.what())) out_of_memory(name(), e.what());
  fall_back();
}

}  // namespace opscope::torch_bridge
