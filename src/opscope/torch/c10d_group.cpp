// The host side of the opscope process group: each collective's tensors are checked, its
// plan made (c10d_plan.h), and one launch queued on the communication engine's stream
// after everything the caller's stream queued so far. Returns at once with a Work.
#include "opscope/torch/c10d_group.h"

#include <fmt/format.h>

#include <numeric>

#include "opscope/core/error.h"
#include "opscope/profiler/hooks.h"
#include "opscope/runtime/runtime.h"
#include "opscope/torch/bridge.h"
#include "opscope/torch/c10d_plan.h"
#include "opscope/torch/compat.h"

namespace opscope::torch_bridge {

namespace {

using Tensors = std::vector<at::Tensor>;

void check_tensor(const char* op, const at::Tensor& t, const std::string& what) {
  if (!t.defined()) fail(op, "{} is undefined", what);
  if (!on_device(t))
    fail(op,
         "{} is on {}: the opscope backend runs collectives on opscope device tensors ({}:N); for CPU tensors "
         "use a Gloo group (dist.new_group(backend=\"gloo\"))",
         what, t.device().str(), kBackendName);
  if (t.layout() != at::kStrided) fail(op, "{} is not a dense tensor", what);
  if (!to_dtype(t.scalar_type()))
    fail(op, "{} has dtype {}: the opscope backend moves f32, bf16, f16, i32 and i64 tensors", what,
         c10::toString(t.scalar_type()));
  if (!t.is_contiguous()) fail(op, "{} is not contiguous (sizes {}, strides {}): pass t.contiguous()", what,
                               c10::str(t.sizes()), c10::str(t.strides()));
}

void check_all(const char* op, const Tensors& ts, const std::string& what) {
  for (size_t i = 0; i < ts.size(); ++i) check_tensor(op, ts[i], ts.size() == 1 ? what : fmt::format("{} {}", what, i));
}

const at::Tensor& one_tensor(const char* op, const Tensors& ts) {
  if (ts.size() != 1) fail(op, "expected one tensor per process, got {}", ts.size());
  check_tensor(op, ts[0], "the tensor");
  return ts[0];
}

void same_dtype(const char* op, const at::Tensor& a, const at::Tensor& b, const char* what) {
  if (a.scalar_type() != b.scalar_type())
    fail(op, "{} has dtype {} but the input has {}", what, c10::toString(b.scalar_type()), c10::toString(a.scalar_type()));
}

void check_reduce(const char* op, const c10d::ReduceOp& r, at::ScalarType t) {
  bool floating = at::isFloatingType(t);
  switch (r.op_) {
    case c10d::ReduceOp::SUM:
    case c10d::ReduceOp::PRODUCT:
    case c10d::ReduceOp::MIN:
    case c10d::ReduceOp::MAX: return;
    case c10d::ReduceOp::AVG:
      if (!floating) fail(op, "ReduceOp.AVG needs a floating dtype, got {}", c10::toString(t));
      return;
    case c10d::ReduceOp::BAND:
    case c10d::ReduceOp::BOR:
    case c10d::ReduceOp::BXOR:
      if (floating) fail(op, "bitwise ReduceOps need an integer dtype, got {}", c10::toString(t));
      return;
    default: fail(op, "ReduceOp {} is not supported by the opscope backend (SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR)", int(r.op_));
  }
}

// A root or peer rank of the group; a peer is not this process.
void check_rank(const char* op, int64_t r, int self, int size, const char* what, bool self_ok) {
  if (r < 0 || r >= size) fail(op, "{} rank {} is not in the group (ranks 0 to {})", what, r, size - 1);
  if (!self_ok && r == self) fail(op, "{} rank {} is this process", what, r);
}

int64_t nbytes(const at::Tensor& t) { return t.numel() * int64_t(t.element_size()); }

std::vector<int64_t> sizes_of(const at::Tensor& t) { return std::vector<int64_t>(t.sizes().begin(), t.sizes().end()); }

// The plan's description of one tensor collective over `t` (the signature's tensor).
Plan plan_of(const char* op, bool dispatched, Kind kind, c10d::OpType type, const at::Tensor& t) {
  Plan p;
  p.op = op;
  p.dispatched = dispatched;
  p.kind = kind;
  p.type = type;
  p.dtype = t.scalar_type();
  p.has_dtype = true;
  p.shape = sizes_of(t);
  p.check = true;
  return p;
}

// The framework op of a collective: names its launch and errors; when torch 1.13 records no
// op for it (no dispatcher op) while torch's ops are recorded, records it here.
class CollectiveScope {
 public:
  CollectiveScope(const char* op, bool dispatched)
      : own_(!dispatched && prof::external_ops() && (prof::layers() & prof::kFramework)),
        id_(own_ ? prof::op_begin_described(op, "", -1) : 0),
        scope_(op, {}) {}
  ~CollectiveScope() {
    if (own_) prof::op_end(id_);
  }
  CollectiveScope(const CollectiveScope&) = delete;
  CollectiveScope& operator=(const CollectiveScope&) = delete;

 private:
  bool own_;
  uint64_t id_;
  FrameworkOpScope scope_;
};

// The root's list of one tensor per rank (gather's outputs, scatter's inputs), each of
// `like`'s dtype and size; other ranks pass none. Empty off the root.
Tensors root_list(const char* op, const std::vector<Tensors>& lists, const at::Tensor& like, bool is_root,
                  int64_t root, int64_t size, const char* what, const char* other) {
  if (!is_root) {
    if (!lists.empty() && !lists[0].empty()) fail(op, "only the root (rank {}) takes {} tensors", root, what);
    return {};
  }
  if (lists.size() != 1 || int64_t(lists[0].size()) != size)
    fail(op, "the root needs one list of {} {} tensors (one per rank)", size, what);
  const Tensors& ts = lists[0];
  check_all(op, ts, what);
  for (size_t i = 0; i < ts.size(); ++i) {
    if (ts[i].scalar_type() != like.scalar_type())
      fail(op, "{} {} has dtype {} but the {} has {}", what, i, c10::toString(ts[i].scalar_type()), other,
           c10::toString(like.scalar_type()));
    if (ts[i].numel() != like.numel())
      fail(op, "{} {} has {} elements but the {} has {}", what, i, ts[i].numel(), other, like.numel());
  }
  return ts;
}

// Gloo's form of an optional list (the root's, or none): CPU views of the device memory.
std::vector<Tensors> gloo_list(const Tensors& ts) {
  std::vector<Tensors> out;
  if (ts.empty()) return out;
  out.emplace_back();
  for (const at::Tensor& t : ts) out[0].push_back(as_gloo_bytes(cpu_alias(t)));
  return out;
}

// A CPU tensor of n x `like`'s elements as n views shaped like `like` (rank k's part).
Tensors chunks(const at::Tensor& host, int64_t n, at::IntArrayRef like) {
  std::vector<int64_t> shape{n};
  shape.insert(shape.end(), like.begin(), like.end());
  return host.view(shape).unbind(0);
}

}  // namespace

ProcessGroupOpscope::ProcessGroupOpscope(c10::intrusive_ptr<c10d::ProcessGroup> gloo,
                                         c10::intrusive_ptr<c10d::Store> store, GroupInfo info)
    : c10d::ProcessGroup(info.rank, info.size),
      gloo_(std::move(gloo)),
      store_(std::move(store)),
      info_(std::move(info)),
      engine_(std::make_unique<HostEngine>(device(0))) {}

namespace {
// A group's stream outlives the group (a device never frees a stream) and falls back to the
// cores: the failure it holds was the group's, reported at its collectives, not the device's.
void drop_error(Stream& s) {
  try {
    s.check_error();
  } catch (const Error&) {
  }
}
}  // namespace

ProcessGroupOpscope::~ProcessGroupOpscope() {  // each engine runs what was queued first
  for (auto& [peer, engine] : p2p_) {
    Stream& s = engine->stream();
    engine.reset();
    drop_error(s);
  }
  Stream& s = engine_->stream();
  engine_.reset();
  drop_error(s);
}

HostEngine& ProcessGroupOpscope::engine_for(const Plan& p) {
  if (p.kind != Kind::send && p.kind != Kind::recv) return *engine_;
  auto& e = p2p_[{int(p.kind), p.arg}];
  if (!e) e = std::make_unique<HostEngine>(device(0));
  return *e;
}

std::string ProcessGroupOpscope::broken() const {
  std::lock_guard<std::mutex> g(broken_m_);
  return broken_;
}

void ProcessGroupOpscope::fail_call(CollectiveCall& call, const std::string& message, bool breaks_group) {
  if (breaks_group) {
    std::lock_guard<std::mutex> g(broken_m_);
    if (broken_.empty()) broken_ = message;
  }
  call.error = message;
  call.state.store(2, std::memory_order_release);
  // Not other groups' streams: their communication goes on (their peers expect it).
  call.caller->set_error(message);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOpscope::submit(Plan& p) {
  CollectiveScope scope(p.op, p.dispatched);
  // A broken group fails its later collectives at the call (its peers may be gone).
  if (std::string why = broken(); !why.empty())
    fail(p.op, "group {} broke at an earlier collective, nothing more runs on it: {}", info_.name, why);
  auto call = std::make_shared<CollectiveCall>();
  call->op = p.op;
  call->kernel = p.has_dtype ? fmt::format("{}_{}", kind_name(p.kind), dtype_name(*to_dtype(p.dtype))) : kind_name(p.kind);
  call->outputs = p.outputs;

  std::vector<Tensor> reads, writes;
  for (const at::Tensor& t : p.reads) reads.push_back(from_torch(t, p.op));
  for (const at::Tensor& t : p.writes) writes.push_back(from_torch(t, p.op));
  std::vector<const Tensor*> rp, wp;
  for (const Tensor& t : reads) rp.push_back(&t);
  for (const Tensor& t : writes) wp.push_back(&t);
  LaunchSpec spec;
  spec.name = call->kernel;
  spec.bytes = p.bytes;
  bool blocking = p.host_blocking;
  c10d::OpType type = p.type;
  {
    std::lock_guard<std::mutex> g(submit_m_);
    bool p2p = p.kind == Kind::send || p.kind == Kind::recv;
    call->seq = p2p ? next_p2p_seq_++ : next_seq_++;
    HostEngine& engine = engine_for(p);
    call->stream = &engine.stream();
    // The body owns the plan until it has run: then it drops the tensors and the transfer
    // (a finished launch's closure lives on until its slot is reused).
    auto plan = std::make_shared<Plan>(std::move(p));
    ProcessGroupOpscope* self = this;
    spec.body = [self, call, plan](int64_t, int64_t) {
      run_plan(*self, *call, *plan);
      *plan = Plan();
    };
    // After everything the caller's stream queued so far: the kernels that made the inputs,
    // and those still reading the buffers it will write.
    Stream& caller = current_stream(device(0));
    call->caller = &caller;
    engine.stream().wait(caller.record());
    engine.launch(std::move(spec), rp, wp);
    call->launch_seq = engine.stream().submitted();
  }
  return c10::make_intrusive<WorkOpscope>(call, type, blocking, info_.timeout);
}

// ---- the collectives

c10::intrusive_ptr<c10d::Work> ProcessGroupOpscope::allreduce(Tensors& tensors, const c10d::AllreduceOptions& opts) {
  const char* op = "c10d::allreduce_";
  const at::Tensor& t = one_tensor(op, tensors);
  check_reduce(op, opts.reduceOp, t.scalar_type());
  Plan p = plan_of(op, true, Kind::all_reduce, c10d::OpType::ALLREDUCE, t);
  p.reads = p.writes = p.outputs = {t};
  p.bytes = nbytes(t);
  p.in_elems = p.out_elems = t.numel();
  p.arg = int64_t(opts.reduceOp.op_);
  c10d::ReduceOp red = opts.reduceOp;
  p.transfer = [t, red](Transfer& x) { reduce_into(x, cpu_alias(t), red, -1); };
  return submit(p);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOpscope::reduce(Tensors& tensors, const c10d::ReduceOptions& opts) {
  const char* op = "c10d::reduce_";
  const at::Tensor& t = one_tensor(op, tensors);
  check_reduce(op, opts.reduceOp, t.scalar_type());
  check_rank(op, opts.rootRank, rank_, size_, "root", true);
  Plan p = plan_of(op, true, Kind::reduce, c10d::OpType::REDUCE, t);
  p.reads = p.writes = p.outputs = {t};
  p.bytes = nbytes(t);
  p.in_elems = p.out_elems = t.numel();
  p.arg = int64_t(opts.reduceOp.op_) * 65536 + opts.rootRank;
  c10d::ReduceOp red = opts.reduceOp;
  int64_t root = opts.rootRank;
  p.transfer = [t, red, root](Transfer& x) { reduce_into(x, cpu_alias(t), red, root); };
  return submit(p);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOpscope::broadcast(Tensors& tensors, const c10d::BroadcastOptions& opts) {
  const char* op = "c10d::broadcast_";
  const at::Tensor& t = one_tensor(op, tensors);
  check_rank(op, opts.rootRank, rank_, size_, "root", true);
  Plan p = plan_of(op, true, Kind::broadcast, c10d::OpType::BROADCAST, t);
  p.reads = p.writes = p.outputs = {t};
  p.bytes = nbytes(t);
  p.in_elems = p.out_elems = t.numel();
  p.arg = opts.rootRank;
  int64_t root = opts.rootRank;
  p.transfer = [t, root](Transfer& x) {
    Tensors v{as_gloo_bytes(cpu_alias(t))};
    c10d::BroadcastOptions o;
    o.rootRank = root;
    Transfer::wait(x.group.gloo().broadcast(v, o));
  };
  return submit(p);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOpscope::allgather(std::vector<Tensors>& outputs, Tensors& inputs,
                                                             const c10d::AllgatherOptions&) {
  const char* op = "c10d::allgather_";
  const at::Tensor& in = one_tensor(op, inputs);
  if (outputs.size() != 1) fail(op, "expected one output list per process, got {}", outputs.size());
  Tensors outs = outputs[0];
  if (int64_t(outs.size()) != size_) fail(op, "expected {} output tensors (one per rank), got {}", size_, outs.size());
  check_all(op, outs, "output");
  for (size_t i = 0; i < outs.size(); ++i) {
    same_dtype(op, in, outs[i], "an output");
    if (outs[i].numel() != in.numel())
      fail(op, "output {} has {} elements but the input has {}", i, outs[i].numel(), in.numel());
  }
  Plan p = plan_of(op, true, Kind::all_gather, c10d::OpType::ALLGATHER, in);
  p.reads = {in};
  p.writes = p.outputs = outs;
  p.bytes = nbytes(in) * size_;
  p.in_elems = in.numel();
  p.out_elems = in.numel() * size_;
  p.transfer = [in, outs](Transfer& x) {
    std::vector<Tensors> o = gloo_list(outs);
    Tensors i{as_gloo_bytes(cpu_alias(in))};
    Transfer::wait(x.group.gloo().allgather(o, i));
  };
  return submit(p);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOpscope::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                   const c10d::AllgatherOptions&) {
  const char* op = "c10d::_allgather_base_";
  check_tensor(op, input, "the input");
  check_tensor(op, output, "the output");
  same_dtype(op, input, output, "the output");
  if (output.numel() != input.numel() * size_)
    fail(op, "the output has {} elements; a group of {} needs {} x the input's {}", output.numel(), size_, size_,
         input.numel());
  Plan p = plan_of(op, false, Kind::all_gather, c10d::OpType::_ALLGATHER_BASE, input);
  p.reads = {input};
  p.writes = p.outputs = {output};
  p.bytes = nbytes(output);
  p.in_elems = input.numel();
  p.out_elems = output.numel();
  int64_t n = size_;
  at::Tensor in = input, out = output;
  p.transfer = [in, out, n](Transfer& x) {
    std::vector<Tensors> o{chunks(as_gloo_bytes(cpu_alias(out)), n, in.sizes())};
    Tensors i{as_gloo_bytes(cpu_alias(in))};
    Transfer::wait(x.group.gloo().allgather(o, i));
  };
  return submit(p);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOpscope::gather(std::vector<Tensors>& outputs, Tensors& inputs,
                                                          const c10d::GatherOptions& opts) {
  const char* op = "c10d::gather_";
  const at::Tensor& in = one_tensor(op, inputs);
  check_rank(op, opts.rootRank, rank_, size_, "root", true);
  Tensors outs = root_list(op, outputs, in, getRank() == opts.rootRank, opts.rootRank, size_, "output", "input");
  Plan p = plan_of(op, true, Kind::gather, c10d::OpType::GATHER, in);
  p.reads = {in};
  p.writes = p.outputs = outs;
  p.bytes = nbytes(in) * size_;
  p.in_elems = in.numel();
  p.out_elems = in.numel() * size_;
  p.arg = opts.rootRank;
  int64_t root = opts.rootRank;
  p.transfer = [in, outs, root](Transfer& x) {
    std::vector<Tensors> o = gloo_list(outs);
    Tensors i{as_gloo_bytes(cpu_alias(in))};
    c10d::GatherOptions g;
    g.rootRank = root;
    Transfer::wait(x.group.gloo().gather(o, i, g));
  };
  return submit(p);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOpscope::scatter(Tensors& outputs, std::vector<Tensors>& inputs,
                                                           const c10d::ScatterOptions& opts) {
  const char* op = "c10d::scatter_";
  const at::Tensor& out = one_tensor(op, outputs);
  check_rank(op, opts.rootRank, rank_, size_, "root", true);
  Tensors ins = root_list(op, inputs, out, getRank() == opts.rootRank, opts.rootRank, size_, "input", "output");
  Plan p = plan_of(op, true, Kind::scatter, c10d::OpType::SCATTER, out);
  p.reads = ins;
  p.writes = p.outputs = {out};
  p.bytes = nbytes(out) * size_;
  p.in_elems = out.numel() * size_;
  p.out_elems = out.numel();
  p.arg = opts.rootRank;
  int64_t root = opts.rootRank;
  p.transfer = [out, ins, root](Transfer& x) {
    std::vector<Tensors> i = gloo_list(ins);
    Tensors o{as_gloo_bytes(cpu_alias(out))};
    c10d::ScatterOptions s;
    s.rootRank = root;
    Transfer::wait(x.group.gloo().scatter(o, i, s));
  };
  return submit(p);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOpscope::reduce_scatter(Tensors& outputs, std::vector<Tensors>& inputs,
                                                                  const c10d::ReduceScatterOptions& opts) {
  const char* op = "c10d::reduce_scatter_";
  const at::Tensor& out = one_tensor(op, outputs);
  check_reduce(op, opts.reduceOp, out.scalar_type());
  if (inputs.size() != 1 || int64_t(inputs[0].size()) != size_)
    fail(op, "expected one list of {} input tensors (one per rank)", size_);
  Tensors ins = inputs[0];
  check_all(op, ins, "input");
  for (size_t i = 0; i < ins.size(); ++i) {
    same_dtype(op, out, ins[i], "an input");
    if (ins[i].numel() != out.numel()) fail(op, "input {} has {} elements but the output has {}", i, ins[i].numel(), out.numel());
  }
  Plan p = plan_of(op, true, Kind::reduce_scatter, c10d::OpType::REDUCE_SCATTER, out);
  p.reads = ins;
  p.writes = p.outputs = {out};
  p.bytes = nbytes(out) * size_;
  p.in_elems = out.numel() * size_;
  p.out_elems = out.numel();
  p.arg = int64_t(opts.reduceOp.op_);
  c10d::ReduceOp red = opts.reduceOp;
  p.transfer = [out, ins, red](Transfer& x) {
    Tensors flat;
    for (const at::Tensor& t : ins) flat.push_back(cpu_alias(t).reshape({-1}));
    reduce_scatter_into(x, at::stack(flat), cpu_alias(out), red);
  };
  return submit(p);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOpscope::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                        const c10d::ReduceScatterOptions& opts) {
  const char* op = "c10d::_reduce_scatter_base_";
  check_tensor(op, input, "the input");
  check_tensor(op, output, "the output");
  same_dtype(op, input, output, "the output");
  check_reduce(op, opts.reduceOp, output.scalar_type());
  if (input.numel() != output.numel() * size_)
    fail(op, "the input has {} elements; a group of {} needs {} x the output's {}", input.numel(), size_, size_,
         output.numel());
  Plan p = plan_of(op, false, Kind::reduce_scatter, c10d::OpType::_REDUCE_SCATTER_BASE, output);
  p.reads = {input};
  p.writes = p.outputs = {output};
  p.bytes = nbytes(input);
  p.in_elems = input.numel();
  p.out_elems = output.numel();
  p.arg = int64_t(opts.reduceOp.op_);
  c10d::ReduceOp red = opts.reduceOp;
  int64_t n = size_;
  at::Tensor in = input, out = output;
  p.transfer = [in, out, red, n](Transfer& x) {
    reduce_scatter_into(x, cpu_alias(in).view({n, -1}), cpu_alias(out), red);
  };
  return submit(p);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOpscope::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                                 std::vector<int64_t>& output_splits,
                                                                 std::vector<int64_t>& input_splits,
                                                                 const c10d::AllToAllOptions&) {
  const char* op = "c10d::alltoall_base_";
  check_tensor(op, input, "the input");
  check_tensor(op, output, "the output");
  same_dtype(op, input, output, "the output");
  auto check_splits = [&](const std::vector<int64_t>& splits, const at::Tensor& t, const char* what) {
    if (splits.empty()) {
      if (t.dim() == 0 || t.size(0) % size_ != 0)
        fail(op, "the {}'s first dimension ({}) does not split into {} equal parts", what, t.dim() ? t.size(0) : 0, size_);
      return;
    }
    if (int64_t(splits.size()) != size_) fail(op, "{} split sizes for a group of {}", splits.size(), size_);
    int64_t sum = std::accumulate(splits.begin(), splits.end(), int64_t(0));
    if (t.dim() == 0 || sum != t.size(0))
      fail(op, "the {} split sizes add up to {} but its first dimension is {}", what, sum, t.dim() ? t.size(0) : 0);
  };
  check_splits(input_splits, input, "input");
  check_splits(output_splits, output, "output");
  Plan p = plan_of(op, false, Kind::all_to_all, c10d::OpType::ALLTOALL_BASE, input);
  p.reads = {input};
  p.writes = p.outputs = {output};
  p.bytes = nbytes(input);
  p.in_elems = input.numel();
  p.out_elems = output.numel();
  p.check = input_splits.empty() && output_splits.empty();  // uneven splits differ per rank by design
  at::Tensor in = input, out = output;
  std::vector<int64_t> os = output_splits, is = input_splits;
  p.transfer = [in, out, os, is](Transfer& x) {
    at::Tensor o = as_gloo_bytes(cpu_alias(out)), i = as_gloo_bytes(cpu_alias(in));
    std::vector<int64_t> os_gloo = os, is_gloo = is;  // Gloo takes (moves) its split sizes
    Transfer::wait(x.group.gloo().alltoall_base(o, i, os_gloo, is_gloo));
  };
  return submit(p);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOpscope::alltoall(Tensors& outputs, Tensors& inputs,
                                                            const c10d::AllToAllOptions&) {
  const char* op = "c10d::alltoall_";
  if (int64_t(inputs.size()) != size_ || int64_t(outputs.size()) != size_)
    fail(op, "expected {} input and {} output tensors (one per rank), got {} and {}", size_, size_, inputs.size(),
         outputs.size());
  check_all(op, inputs, "input");
  check_all(op, outputs, "output");
  for (const at::Tensor& t : inputs) same_dtype(op, inputs[0], t, "an input");
  for (const at::Tensor& t : outputs) same_dtype(op, inputs[0], t, "an output");
  Plan p = plan_of(op, true, Kind::all_to_all, c10d::OpType::ALLTOALL, inputs[0]);
  p.reads = inputs;
  p.writes = p.outputs = outputs;
  p.check = false;  // each rank's tensors may differ in size
  for (const at::Tensor& t : inputs) p.bytes += nbytes(t), p.in_elems += t.numel();
  for (const at::Tensor& t : outputs) p.out_elems += t.numel();
  Tensors ins = inputs, outs = outputs;
  p.transfer = [ins, outs](Transfer& x) {
    // One alltoall_base over the tensors packed end to end, each a split.
    std::vector<int64_t> is, os;
    Tensors flat;
    for (const at::Tensor& t : ins) flat.push_back(cpu_alias(t).reshape({-1})), is.push_back(t.numel());
    for (const at::Tensor& t : outs) os.push_back(t.numel());
    at::Tensor send = at::cat(flat);
    at::Tensor recv = at::empty({std::accumulate(os.begin(), os.end(), int64_t(0))}, send.options());
    at::Tensor r = as_gloo_bytes(recv), s = as_gloo_bytes(send);
    std::vector<int64_t> os_gloo = os, is_gloo = is;  // Gloo takes (moves) its split sizes
    Transfer::wait(x.group.gloo().alltoall_base(r, s, os_gloo, is_gloo));
    int64_t at = 0;
    for (size_t k = 0; k < outs.size(); ++k) {
      cpu_alias(outs[k]).reshape({-1}).copy_(recv.narrow(0, at, os[k]));
      at += os[k];
    }
  };
  return submit(p);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOpscope::send(Tensors& tensors, int dst, int tag) {
  const char* op = "c10d::send";
  const at::Tensor& t = one_tensor(op, tensors);
  check_rank(op, dst, rank_, size_, "destination", false);
  Plan p = plan_of(op, true, Kind::send, c10d::OpType::SEND, t);
  p.reads = {t};
  p.bytes = nbytes(t);
  p.in_elems = t.numel();
  p.arg = dst;
  p.check = false;
  p.transfer = [t, dst, tag](Transfer& x) {
    Tensors v{as_gloo_bytes(cpu_alias(t))};
    Transfer::wait(x.group.gloo().send(v, dst, tag));
  };
  return submit(p);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOpscope::recv(Tensors& tensors, int src, int tag) {
  const char* op = "c10d::recv_";
  const at::Tensor& t = one_tensor(op, tensors);
  check_rank(op, src, rank_, size_, "source", false);
  Plan p = plan_of(op, true, Kind::recv, c10d::OpType::RECV, t);
  p.writes = p.outputs = {t};
  p.bytes = nbytes(t);
  p.out_elems = t.numel();
  p.arg = src;
  p.check = false;
  p.transfer = [t, src, tag](Transfer& x) {
    Tensors v{as_gloo_bytes(cpu_alias(t))};
    Transfer::wait(x.group.gloo().recv(v, src, tag));
    x.source_rank = src;
  };
  return submit(p);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOpscope::recvAnysource(Tensors& tensors, int tag) {
  const char* op = "c10d::recv_any_source_";
  const at::Tensor& t = one_tensor(op, tensors);
  Plan p = plan_of(op, false, Kind::recv, c10d::OpType::RECVANYSOURCE, t);
  p.writes = p.outputs = {t};
  p.bytes = nbytes(t);
  p.out_elems = t.numel();
  p.arg = -1;
  p.check = false;
  p.transfer = [t, tag](Transfer& x) {
    Tensors v{as_gloo_bytes(cpu_alias(t))};
    auto w = x.group.gloo().recvAnysource(v, tag);
    Transfer::wait(w);
    x.source_rank = w->sourceRank();
  };
  return submit(p);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOpscope::barrier(const c10d::BarrierOptions&) {
  Plan p;
  p.op = "c10d::barrier";
  p.kind = Kind::barrier;
  p.type = c10d::OpType::BARRIER;
  p.host_blocking = true;
  p.transfer = [](Transfer& x) { Transfer::wait(x.group.gloo().barrier()); };
  return submit(p);
}

}  // namespace opscope::torch_bridge
