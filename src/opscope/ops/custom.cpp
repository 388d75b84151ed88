#include "opscope/ops/custom.h"

#include <cctype>
#include <deque>
#include <memory>
#include <mutex>

#include "opscope/compiler/trace.h"
#include "opscope/core/error.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/runtime.h"

namespace opscope {

namespace {
std::mutex g_m;
std::deque<std::unique_ptr<CustomOpDef>> g_ops;  // never removed: names stay valid for profiles

bool valid_name(std::string_view n) {
  if (n.empty() || !(std::isalpha(uint8_t(n[0])) || n[0] == '_')) return false;
  for (char c : n)
    if (!(std::isalnum(uint8_t(c)) || c == '_' || c == '.' || c == ':')) return false;
  return true;
}

std::string message_of(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "unknown exception";
  }
}
}  // namespace

CustomOp register_op(CustomOpDef def) {
  if (!valid_name(def.name)) fail("register_op", "'{}' is not a valid op name (letters, digits, _ . :)", def.name);
  if (!def.infer) fail("register_op", "op '{}' has no infer function", def.name);
  if (!def.cpu) fail("register_op", "op '{}' has no cpu kernel", def.name);
  if (def.grain < 1) fail("register_op", "op '{}' has grain {} (must be >= 1)", def.name, def.grain);
  std::lock_guard<std::mutex> g(g_m);
  for (auto& op : g_ops)
    if (op->name == def.name) fail("register_op", "an op named '{}' is already registered", def.name);
  g_ops.push_back(std::make_unique<CustomOpDef>(std::move(def)));
  return CustomOp(g_ops.back().get());
}

const CustomOpDef* find_op(std::string_view name) {
  std::lock_guard<std::mutex> g(g_m);
  for (auto& op : g_ops)
    if (op->name == name) return op.get();
  return nullptr;
}

Tensor call_op(std::string_view name, const std::vector<Tensor>& inputs) {
  const CustomOpDef* def = find_op(name);
  if (!def) fail("call_op", "no op named '{}' is registered", name);
  return CustomOp(def)(inputs);
}

Tensor CustomOp::operator()(const std::vector<Tensor>& inputs) const {
  const CustomOpDef& d = *def_;
  const char* op = d.name.c_str();
  // Framework layer: the op, its inputs, the user's shape function.
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : inputs) ptrs.push_back(&t);
  OpScope scope(op, std::span<const Tensor* const>(ptrs), __builtin_return_address(0));
  if (inputs.empty()) fail(op, "called with no inputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) fail(op, "input {} is undefined", i);
    if (&inputs[i].device() != &inputs[0].device())
      fail(op, "input {} is on {} but input 0 is on {}", i, inputs[i].device().name(), inputs[0].device().name());
  }
  if (!inputs.empty() && inputs[0].device().type() != DeviceType::cpu)
    fail(op, "no CUDA kernel yet: a custom op runs its CPU implementation (inputs on {}); move them with .to(cpu())",
         inputs[0].device().name());
  OutputSpec spec;
  try {
    spec = d.infer(inputs);
  } catch (...) {
    std::string msg = message_of(std::current_exception());
    if (msg.rfind("[", 0) == 0) throw Error(msg);
    fail(op, "rejected inputs {}: {}", [&] {
      std::string s;
      for (auto& t : inputs) s += (s.empty() ? "" : ", ") + t.shape().str() + " " + std::string(dtype_name(t.dtype()));
      return s;
    }(), msg);
  }
  for (int64_t dsz : spec.shape)
    if (dsz < 0) fail(op, "infer returned a negative dimension in {}", spec.shape.str());

  // Runtime layer: contiguous inputs, the output, one launch.
  Device& dev = inputs[0].device();
  std::vector<Tensor> ins;
  ins.reserve(inputs.size());
  for (auto& t : inputs) ins.push_back(t.contiguous());
  Tensor out = runtime::allocate(spec.shape, spec.dtype, dev);
  std::vector<KernelTensor> kin;
  int64_t bytes = out.nbytes();
  for (auto& t : ins) {
    kin.push_back(KernelTensor{t.data_ptr(), t.shape(), t.dtype()});
    bytes += t.nbytes();
  }
  KernelTensor kout{out.data_ptr(), out.shape(), out.dtype()};
  if (out.numel() == 0) return out;
  LaunchSpec ls;
  ls.name = d.name;
  ls.work = d.work ? d.work(kin, kout) : kout.numel() / std::max<int64_t>(kout.row_size(), 1);
  ls.grain = d.grain;
  ls.bytes = bytes;
  ls.flops = d.flops ? d.flops(kin, kout) : 0;
  ls.body = [def = def_, kin = std::move(kin), kout](int64_t b, int64_t e) { def->cpu(kin, kout, b, e); };
  std::vector<const Tensor*> reads;
  for (auto& t : ins) reads.push_back(&t);
  const Tensor* writes[] = {&out};
  runtime::launch(dev, std::move(ls), reads, writes);
  if (compiler::tracing()) compiler::record_custom(d.name, inputs, out);
  return out;
}

}  // namespace opscope
