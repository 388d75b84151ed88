#include "opscope/compiler/packed_weights.h"

#include <optional>

#include "opscope/core/error.h"
#include "opscope/kernels/cpu/packed_matmul.h"
#include "opscope/runtime/device.h"
#include "opscope/runtime/op_scope.h"
#include "opscope/runtime/runtime.h"

namespace opscope::compiler {

namespace {

// The kernel's epilogue for an activation kind, if oneDNN's matmul can apply it.
std::optional<cpu_kernels::Epilogue> epilogue_for(OpKind k) {
  using E = cpu_kernels::Epilogue;
  switch (k) {
    case OpKind::relu: return E::relu;
    case OpKind::gelu: return E::gelu;
    case OpKind::silu: return E::silu;
    case OpKind::tanh: return E::tanh;
    case OpKind::sigmoid: return E::sigmoid;
    default: return std::nullopt;
  }
}

cpu_kernels::Residual residual_of(const Node& n) {
  using R = cpu_kernels::Residual;
  if (!n.attrs.residual) return R::none;
  if (*n.attrs.residual == OpKind::add) return R::add;
  if (*n.attrs.residual == OpKind::mul) return R::mul;
  fail("compile", "internal: {} is not a matmul residual", op_name(*n.attrs.residual));
}

cpu_kernels::Epilogue epilogue_of(const Node& n) {
  if (!n.attrs.epilogue) return cpu_kernels::Epilogue::none;
  if (auto e = epilogue_for(*n.attrs.epilogue)) return *e;
  fail("compile", "internal: {} is not a matmul epilogue", op_name(*n.attrs.epilogue));
}

}  // namespace

bool is_matmul_epilogue(OpKind k) { return epilogue_for(k).has_value(); }

std::string packed_kernel_name(const Graph& g, const Node& matmul) {
  return cpu_kernels::PackedMatmul::kernel_name(epilogue_of(matmul), g.values[size_t(matmul.outputs[0])].dtype,
                                                residual_of(matmul));
}

int matmul_bias_input(const Node& matmul) {
  return matmul.inputs.size() == (matmul.attrs.residual ? 4u : 3u) ? 2 : -1;
}

PackedWeights::PackedWeights(const Graph& g) : weight_(g.nodes.size(), 0), entries_(g.nodes.size()) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.kind != OpKind::matmul || n.inputs.size() < 2 || n.outputs.size() != 1) continue;
    DType dt = g.values[size_t(n.outputs[0])].dtype;
    weight_[i] = (dt == DType::f32 || dt == DType::bf16) && g.read_from_source(n.inputs[1]);
  }
}

PackedWeights::~PackedWeights() = default;

PackedWeights::Stamp PackedWeights::Stamp::of(const Tensor& b) {
  const Storage& st = *b.storage();
  return {b.storage(), st.writer, st.writer_seq, st.host_writes.load(std::memory_order_relaxed), b.offset()};
}

bool PackedWeights::Stamp::same(const Tensor& b) const {
  const Storage* st = b.storage().get();
  // A storage freed and another made at its address is not the same: the weak pointer has expired.
  return storage.lock().get() == st && st->writer == writer && st->writer_seq == writer_seq &&
         st->host_writes.load(std::memory_order_relaxed) == host_writes && (offset < 0 || b.offset() == offset);
}

void PackedWeights::saw(const Graph& g, const std::vector<Tensor>& inputs) {
  std::lock_guard<std::mutex> lock(m_);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node* src = weight_[i] ? g.view_source(g.nodes[i].inputs[1]) : nullptr;
    if (!src) continue;
    const size_t at = size_t(src->attrs.axis);
    const Tensor* t = src->kind == OpKind::input ? (at < inputs.size() ? &inputs[at] : nullptr)
                                                 : (at < g.params.size() ? &g.params[at] : nullptr);
    if (!t || !t->defined()) continue;
    entries_[i].seen = Stamp::of(*t);
    entries_[i].seen.offset = -1;
    entries_[i].seen_once = true;
  }
}

int PackedWeights::packed() const {
  std::lock_guard<std::mutex> g(m_);
  int k = 0;
  for (const Entry& e : entries_) k += e.pack != nullptr;
  return k;
}

bool PackedWeights::run(const Graph& g, size_t i, std::vector<Tensor>& vals, Device& dev) {
  if (!weight_[i] || dev.type() != DeviceType::cpu) return false;
  const Node& n = g.nodes[i];
  const Tensor& a = vals[size_t(n.inputs[0])];
  const Tensor& b = vals[size_t(n.inputs[1])];
  const int bias_at = matmul_bias_input(n);
  const Tensor* bias = bias_at >= 0 ? &vals[size_t(n.inputs[size_t(bias_at)])] : nullptr;
  const Tensor* other = n.attrs.residual ? &vals[size_t(n.inputs.back())] : nullptr;
  if (!a.defined() || !b.defined() || (bias && !bias->defined())) return false;  // a constant the eager op makes
  // The residual as the kernel reads it, element for element with C; else the eager ops run.
  if (other && (!other->defined() || !other->is_contiguous() || other->dtype() != a.dtype() ||
                other->numel() != g.values[size_t(n.outputs[0])].shape.numel()))
    return false;
  std::shared_ptr<const cpu_kernels::PackedMatmul> pack;
  std::shared_ptr<cpu_kernels::PackedMatmul> plan;  // this call packs: planned, its memory not yet taken
  {
    std::lock_guard<std::mutex> lock(m_);
    Entry& e = entries_[i];
    if (e.refused) return false;
    if (!e.seen_once || !e.seen.same(b)) {  // new bytes: run unpacked until they hold still a call
      e.pack.reset();
      e.seen = Stamp::of(b);
      e.seen_once = true;
      return false;
    }
    pack = e.pack;
    if (!pack) {
      plan = cpu_kernels::PackedMatmul::plan(a, b, bias, dev.num_cores(), epilogue_of(n), residual_of(n));
      if (!plan || plan->out_shape() != g.values[size_t(n.outputs[0])].shape) {
        e.refused = true;
        return false;
      }
    }
  }
  // The matmul reads its operands and the packed chunks (written by the pack launch before it).
  std::vector<const Tensor*> reads{&a, &b}, packed;
  if (bias) reads.push_back(bias);
  if (other) reads.push_back(other);
  OpScope scope("matmul", std::span<const Tensor* const>(reads), __builtin_return_address(0));
  bool fresh = false;
  if (plan) {  // the packed memory, taken inside the matmul's op: a memory profile shows it there
    plan->allocate(dev);
    std::lock_guard<std::mutex> lock(m_);
    Entry& e = entries_[i];
    if (!e.pack) e.pack = plan, fresh = true;  // else another call packed it meanwhile: this plan is dropped
    pack = e.pack;
  }
  for (const Tensor& t : pack->packed()) reads.push_back(&t), packed.push_back(&t);
  const Tensor* read_b = &b;
  Tensor out = runtime::allocate(pack->out_shape(), a.dtype(), dev);
  const Tensor* write_out = &out;
  // Packing is one launch on the cores, in stream order after B's last writer.
  if (fresh) runtime::launch(dev, pack->pack_spec(b), std::span<const Tensor* const>(&read_b, 1), packed);
  runtime::launch(dev, pack->spec(out, a, bias, other), reads, std::span<const Tensor* const>(&write_out, 1));
  vals[size_t(n.outputs[0])] = std::move(out);
  return true;
}

}  // namespace opscope::compiler
