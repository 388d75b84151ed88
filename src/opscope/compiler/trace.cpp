#include "opscope/compiler/trace.h"

#include <fmt/format.h>

#include <algorithm>

#include "opscope/compiler/tracer.h"
#include "opscope/core/error.h"
#include "opscope/runtime/device.h"
#include "opscope/runtime/stream.h"

namespace opscope::compiler {

namespace detail {
thread_local Tracer* t_tracer = nullptr;
}

namespace {
std::string identity(const Tensor& t) {
  return fmt::format("{}@{}:{}{}:{}", static_cast<const void*>(t.storage().get()), t.offset(), t.shape().str(),
                     t.strides().str(), int(t.dtype()));
}
}  // namespace

Tracer::Tracer(std::string name, const std::vector<Tensor>& inputs) : prev_(detail::t_tracer) {
  g_.name = std::move(name);
  for (const Tensor& t : inputs) {
    int v = g_.add_input(t.shape(), t.strides(), t.dtype());
    if (!by_identity_.count(identity(t))) define(t, v);
    if (seq0_.empty()) {
      Device& d = t.device();
      for (int i = 0; i < d.num_streams(); ++i) seq0_.emplace_back(&d.stream(i), d.stream(i).submitted());
    }
  }
  detail::t_tracer = this;
}

Tracer::~Tracer() {
  if (active_) detail::t_tracer = prev_;
}

void Tracer::define(const Tensor& t, int value) {
  by_identity_[identity(t)] = value;
  root_by_storage_.try_emplace(t.storage().get(), value, t.offset());
  keep_.push_back(t);
}

bool Tracer::written_during_trace(const Tensor& t) const {
  const Stream* w = t.storage()->writer;
  if (!w) return false;
  for (auto& [s, seq] : seq0_)
    if (s == w) return t.storage()->writer_seq > seq;
  return true;  // a stream made during the trace
}

int Tracer::value_of(const Tensor& t) {
  if (!t.defined()) fail("compile", "{}: an op was given an undefined tensor while tracing", g_.name);
  auto it = by_identity_.find(identity(t));
  if (it != by_identity_.end()) return it->second;
  auto root = root_by_storage_.find(t.storage().get());
  int v;
  if (root != root_by_storage_.end()) {
    // A view made by reshape/slice/transpose/...: same storage as a known value.
    Attrs a;
    a.offset = t.offset() - root->second.second;
    v = g_.add(OpKind::as_strided, {root->second.first}, t.shape(), t.dtype(), std::move(a), t.strides());
  } else {
    Attrs a;
    a.axis = int64_t(g_.params.size());
    g_.params.push_back(t);
    OpKind k = written_during_trace(t) ? OpKind::untraced : OpKind::param;
    v = g_.add(k, {}, t.shape(), t.dtype(), std::move(a), t.strides());
  }
  define(t, v);
  return v;
}

void Tracer::record(std::string_view op, std::span<const Tensor* const> inputs, const Tensor& out,
                    const TraceAttrs& ta, bool custom) {
  std::vector<int> ins;
  ins.reserve(inputs.size() + 1);
  Attrs a;
  // Optional operands (rms_norm's weight, layer_norm's bias) may be undefined: the
  // node lists the defined ones and attrs.axis says which are missing.
  int64_t missing = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i]->defined()) ins.push_back(value_of(*inputs[i]));
    else if (i > 0) missing |= int64_t(1) << (i - 1);
  }
  OpKind kind;
  if (custom) {
    kind = OpKind::custom;
    a.name = std::string(op);
  } else if (auto k = kind_from_op_name(op)) {
    kind = *k;
  } else {
    // Unknown to the compiler: its result is untraced (the graph runs eagerly if it is used).
    a.axis = int64_t(g_.params.size());
    a.name = std::string(op);
    g_.params.push_back(out);
    define(out, g_.add(OpKind::untraced, {}, out.shape(), out.dtype(), std::move(a), out.strides()));
    return;
  }
  OpClass cls = op_class(kind);
  if (cls == OpClass::binary && ta.scalar_pos >= 0 && !ins.empty()) {
    int c = g_.add_constant(ta.scalar, g_.values[ins[0]].dtype);
    ins.insert(ins.begin() + ta.scalar_pos, c);
  }
  if (cls == OpClass::reduction && !ins.empty()) {
    int nd = g_.values[ins[0]].shape.size();
    if (kind == OpKind::argmax) {
      a.axis = normalize_axis(ta.axes.empty() ? ta.axis : ta.axes[0], nd, "argmax");
    } else if (ta.axes.empty()) {
      for (int i = 0; i < nd; ++i) a.axes.push_back(i);
    } else {
      for (int64_t ax : ta.axes) a.axes.push_back(normalize_axis(ax, nd, op_name(kind)));
      std::sort(a.axes.begin(), a.axes.end());
    }
    a.keepdim = ta.keepdim;
    a.correction = ta.correction;
  }
  if (kind == OpKind::rms_norm || kind == OpKind::layer_norm) a.axis = missing;
  if (kind == OpKind::softmax && !ins.empty()) a.axis = normalize_axis(ta.axis, g_.values[ins[0]].shape.size(), "softmax");
  if (kind == OpKind::concat) a.axis = ta.axis;
  if (kind == OpKind::rms_norm || kind == OpKind::layer_norm) a.scalar = ta.scalar;
  if (kind == OpKind::cast) a.dtype = ta.dtype;
  int v = g_.add(kind, std::move(ins), out.shape(), out.dtype(), std::move(a), out.strides());
  // Where it came from: the framework op that the caller says is running, else this op.
  const Origin* o = current_origin();
  g_.nodes.back().origins = {g_.origin_index(o ? *o : Origin{std::string(op), {}})};
  define(out, v);
}

void Tracer::record_creation(const Tensor& out) {
  Attrs a;
  a.axis = int64_t(g_.params.size());
  g_.params.push_back(out);
  define(out, g_.add(OpKind::param, {}, out.shape(), out.dtype(), std::move(a), out.strides()));
}

Graph Tracer::finish(const std::vector<Tensor>& outs) {
  g_.outputs.clear();
  for (const Tensor& out : outs) g_.outputs.push_back(value_of(out));
  detail::t_tracer = prev_;
  active_ = false;
  keep_.clear();
  return std::move(g_);
}

void record(const char* op, std::initializer_list<const Tensor*> inputs, const Tensor& out, const TraceAttrs& attrs) {
  if (Tracer* t = detail::t_tracer)
    t->record(op, std::span<const Tensor* const>(inputs.begin(), inputs.size()), out, attrs, false);
}

void record(const char* op, std::span<const Tensor> inputs, const Tensor& out, const TraceAttrs& attrs) {
  if (Tracer* t = detail::t_tracer) {
    std::vector<const Tensor*> p;
    for (const Tensor& x : inputs) p.push_back(&x);
    t->record(op, p, out, attrs, false);
  }
}

Tensor traced(const char* op, std::initializer_list<const Tensor*> inputs, Tensor out, const TraceAttrs& attrs) {
  if (Tracer* t = detail::t_tracer)
    t->record(op, std::span<const Tensor* const>(inputs.begin(), inputs.size()), out, attrs, false);
  return out;
}

void record_custom(std::string_view name, std::span<const Tensor> inputs, const Tensor& out) {
  if (Tracer* t = detail::t_tracer) {
    std::vector<const Tensor*> p;
    for (const Tensor& x : inputs) p.push_back(&x);
    t->record(name, p, out, {}, true);
  }
}

void record_creation(const Tensor& out) {
  if (Tracer* t = detail::t_tracer) t->record_creation(out);
}

}  // namespace opscope::compiler
