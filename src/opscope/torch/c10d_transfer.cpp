// The engine's side of a collective (c10d_plan.h): on the communication engine's thread,
// with CPU views of the device tensors' memory. First the ranks compare the collective's
// signature (one small all-gather: a mismatch is an error naming each rank's call, never
// a wrong number or a hang), then Gloo runs the transfer. A failure names the ranks that
// did not take part: each rank that saw it fail says so in the group's store, and those
// that have not within the group's timeout are the missing ones.
#include <ATen/record_function.h>
#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "opscope/core/error.h"
#include "opscope/runtime/host_engine.h"
#include "opscope/torch/bridge.h"
#include "opscope/torch/c10d_group.h"
#include "opscope/torch/c10d_plan.h"

namespace opscope::torch_bridge {

namespace {

using Clock = std::chrono::steady_clock;

// An error already worded for the user (the ranks disagree; the group broke before).
struct Reported : std::runtime_error {
  bool breaks_group;
  Reported(const std::string& m, bool breaks) : std::runtime_error(m), breaks_group(breaks) {}
};

const char* reduce_name(int64_t op) {
  static const char* names[] = {"SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM"};
  return op >= 0 && op < 9 ? names[op] : "?";
}

std::string ranks_text(const std::vector<int64_t>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) s += fmt::format("{}{}", i ? (i + 1 == ranks.size() ? " and " : ", ") : "", ranks[i]);
  return s;
}

std::string dtype_text(at::ScalarType t) {
  std::optional<DType> d = to_dtype(t);
  return d ? std::string(dtype_name(*d)) : std::string(c10::toString(t));
}

// ---- the signature every rank compares before the transfer
constexpr int kSigLen = 12;
constexpr int kSigDims = 6;

std::vector<int64_t> signature(const Plan& p) {
  std::vector<int64_t> s(kSigLen, -1);
  s[0] = int64_t(p.kind);
  s[1] = int64_t(p.dtype);
  s[2] = p.arg;
  s[3] = p.in_elems;
  s[4] = p.out_elems;
  s[5] = int64_t(p.shape.size());
  for (size_t d = 0; d < p.shape.size() && d < size_t(kSigDims); ++d) s[6 + d] = p.shape[d];
  return s;
}

// "all_reduce of (4, 8) f32 with SUM"
std::string describe(const int64_t* s) {
  Kind k = Kind(s[0]);
  std::string dims;
  for (int64_t d = 0; d < s[5]; ++d) dims += d < kSigDims ? fmt::format("{}{}", d ? ", " : "", s[6 + d]) : (d == kSigDims ? ", ..." : "");
  std::string out = fmt::format("{} of ({}) {}", kind_name(k), dims, dtype_text(at::ScalarType(s[1])));
  switch (k) {
    case Kind::all_reduce:
    case Kind::reduce_scatter: return out + fmt::format(" with {}", reduce_name(s[2]));
    case Kind::reduce: return out + fmt::format(" with {} to rank {}", reduce_name(s[2] / 65536), s[2] % 65536);
    case Kind::broadcast:
    case Kind::gather:
    case Kind::scatter: return out + fmt::format(" rooted at rank {}", s[2]);
    default: return out;
  }
}

void check_signature(ProcessGroupOpscope& g, const CollectiveCall& call, const Plan& p) {
  const GroupInfo& info = g.info();
  std::vector<int64_t> mine = signature(p);
  std::vector<at::Tensor> in{at::tensor(mine, at::kLong)};
  std::vector<std::vector<at::Tensor>> out(1);
  for (int r = 0; r < info.size; ++r) out[0].push_back(at::empty({kSigLen}, at::kLong));
  Transfer::wait(g.gloo().allgather(out, in));
  bool same = true;
  for (int r = 0; r < info.size; ++r)
    for (int f = 0; f < 5; ++f) same = same && out[0][size_t(r)].data_ptr<int64_t>()[f] == mine[size_t(f)];
  if (same) return;
  std::string calls;
  for (int r = 0; r < info.size; ++r)
    calls += fmt::format("{}rank {} calls {}", r ? ", " : "", info.global_ranks[size_t(r)],
                         describe(out[0][size_t(r)].data_ptr<int64_t>()));
  throw Reported(fmt::format("[{}] {} #{} of group {}: the ranks disagree: {}", call.op, call.kernel, call.seq,
                             info.name, calls),
                 false);
}

// The group ranks (as job ranks) that did not report this collective's failure before
// `deadline`; "" in `why_not` unless the store could not be asked.
std::vector<int64_t> missing_ranks(ProcessGroupOpscope& g, const CollectiveCall& call, Clock::time_point deadline,
                                   std::string& why_not) {
  const GroupInfo& info = g.info();
  auto key = [&](int r) { return fmt::format("opscope/failed/{}/{}", call.seq, r); };
  std::vector<int64_t> missing;
  try {
    g.store().set(key(info.rank), std::vector<uint8_t>{'1'});
    std::vector<bool> seen(size_t(info.size), false);
    seen[size_t(info.rank)] = true;
    while (true) {
      bool all = true;
      for (int r = 0; r < info.size; ++r) {
        if (!seen[size_t(r)]) seen[size_t(r)] = g.store().check({key(r)});
        all = all && seen[size_t(r)];
      }
      if (all || Clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (int r = 0; r < info.size; ++r)
      if (!seen[size_t(r)]) missing.push_back(info.global_ranks[size_t(r)]);
  } catch (const c10::Error& e) {
    why_not = e.what_without_backtrace();
  } catch (const std::exception& e) {
    why_not = e.what();
  }
  return missing;
}

std::string failure_message(ProcessGroupOpscope& g, const CollectiveCall& call, const Plan& p, const std::string& what,
                            Clock::time_point started) {
  const GroupInfo& info = g.info();
  if (p.kind == Kind::send || p.kind == Kind::recv)  // one peer: no one else to ask
    return fmt::format("[{}] {} {} rank {} failed: Gloo: {}", call.op, call.kernel,
                       p.kind == Kind::send ? "to" : "from",
                       p.arg >= 0 ? fmt::format("{}", info.global_ranks[size_t(p.arg)]) : std::string("any"), what);
  // Each rank still alive fails it within Gloo's part of the timeout (python/opscope/distributed.py
  // gives Gloo 80% of it) and says so; the others are gone or stuck.
  auto deadline = started + info.timeout * 95 / 100;
  std::string why_not;
  std::vector<int64_t> missing = missing_ranks(g, call, deadline, why_not);
  std::string who;
  if (!why_not.empty())
    who = fmt::format("the job's store does not answer ({}): the rank that hosts it (rank 0 under env://) may be gone; ",
                      why_not);
  else if (!missing.empty())
    who = fmt::format("rank{} {} did not take part (gone or stuck); ", missing.size() > 1 ? "s" : "",
                      ranks_text(missing));
  return fmt::format("[{}] {} #{} of group {} failed: {}Gloo: {}", call.op, call.kernel, call.seq, info.name, who, what);
}

// "collective all_reduce, in 1024 elements, out 1024 elements, f32, group of 2, pg 0, seq 3"
std::string detail_of(const ProcessGroupOpscope& g, const CollectiveCall& call, const Plan& p) {
  std::string s = fmt::format("collective {}", kind_name(p.kind));
  if (p.has_dtype) s += fmt::format(", in {} elements, out {} elements, {}", p.in_elems, p.out_elems, dtype_text(p.dtype));
  s += fmt::format(", group of {}, pg {}, seq {}", g.info().size, g.info().name, call.seq);
  if (p.kind == Kind::send || p.kind == Kind::recv) s += p.arg >= 0 ? fmt::format(", peer {}", p.arg) : ", peer any";
  return s;
}

}  // namespace

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::all_reduce: return "all_reduce";
    case Kind::broadcast: return "broadcast";
    case Kind::reduce: return "reduce";
    case Kind::all_gather: return "all_gather";
    case Kind::gather: return "gather";
    case Kind::scatter: return "scatter";
    case Kind::reduce_scatter: return "reduce_scatter";
    case Kind::all_to_all: return "all_to_all";
    case Kind::send: return "send";
    case Kind::recv: return "recv";
    case Kind::barrier: return "barrier";
  }
  return "collective";
}

void Transfer::wait(const c10::intrusive_ptr<c10d::Work>& w) { w->wait(); }

at::Tensor as_gloo_bytes(const at::Tensor& host) {
  return host.scalar_type() == at::kBFloat16 ? host.view(at::kHalf) : host;
}

void reduce_into(Transfer& x, const at::Tensor& buf, const c10d::ReduceOp& op, int64_t root) {
  bool avg = op.op_ == c10d::ReduceOp::AVG;
  c10d::ReduceOp gloo_op = avg ? c10d::ReduceOp(c10d::ReduceOp::SUM) : op;
  bool stage = buf.scalar_type() == at::kBFloat16 || (avg && buf.scalar_type() == at::kHalf);
  at::Tensor work = stage ? buf.to(at::kFloat) : buf;
  std::vector<at::Tensor> v{work};
  if (root < 0) {
    c10d::AllreduceOptions o;
    o.reduceOp = gloo_op;
    Transfer::wait(x.group.gloo().allreduce(v, o));
  } else {
    c10d::ReduceOptions o;
    o.reduceOp = gloo_op;
    o.rootRank = root;
    Transfer::wait(x.group.gloo().reduce(v, o));
    if (root != x.group.info().rank) return;
  }
  if (avg) work.div_(x.group.info().size);
  if (stage) buf.copy_(work);
}

void reduce_scatter_into(Transfer& x, const at::Tensor& rows, const at::Tensor& out, const c10d::ReduceOp& op) {
  at::Tensor send = rows.contiguous();
  at::Tensor recv = at::empty_like(send);
  at::Tensor r = as_gloo_bytes(recv), s = as_gloo_bytes(send);
  std::vector<int64_t> equal;
  Transfer::wait(x.group.gloo().alltoall_base(r, s, equal, equal));
  // Row k of recv: rank k's part for this rank.
  bool half = recv.scalar_type() == at::kHalf || recv.scalar_type() == at::kBFloat16;
  at::Tensor acc = half ? recv.to(at::kFloat) : recv;
  at::Tensor red;
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
    case c10d::ReduceOp::AVG: red = acc.sum(0); break;
    case c10d::ReduceOp::PRODUCT: red = acc.prod(0); break;
    case c10d::ReduceOp::MIN: red = acc.amin(0); break;
    case c10d::ReduceOp::MAX: red = acc.amax(0); break;
    default: {
      red = acc[0].clone();
      for (int64_t k = 1; k < acc.size(0); ++k) {
        if (op.op_ == c10d::ReduceOp::BAND) red.bitwise_and_(acc[k]);
        else if (op.op_ == c10d::ReduceOp::BOR) red.bitwise_or_(acc[k]);
        else red.bitwise_xor_(acc[k]);
      }
    }
  }
  if (op.op_ == c10d::ReduceOp::AVG) red = red.div(x.group.info().size);
  out.view({-1}).copy_(red);
}

void run_plan(ProcessGroupOpscope& g, CollectiveCall& call, Plan& plan) {
  // The ATen ops of a transfer (staging copies, local reductions) and Gloo's own work are
  // not the framework's ops: the collective is one op, one launch and this one device event.
  at::RecordFunctionGuard no_ops(false);
  HostEngine::describe(detail_of(g, call, plan));
  Clock::time_point started = Clock::now();
  std::string message;
  bool breaks = true;
  try {
    std::string broken = g.broken();
    if (!broken.empty())
      throw Reported(fmt::format("[{}] {} #{} of group {} not run: the group broke earlier: {}", call.op, call.kernel,
                                 call.seq, g.info().name, broken),
                     false);
    if (plan.check && g.info().check_shapes) check_signature(g, call, plan);
    Transfer x{g, plan};
    plan.transfer(x);
    call.source_rank = x.source_rank;
    call.state.store(1, std::memory_order_release);
    return;
  } catch (const Reported& e) {
    message = e.what();
    breaks = e.breaks_group;
  } catch (const c10::Error& e) {
    message = failure_message(g, call, plan, e.what_without_backtrace(), started);
  } catch (const std::exception& e) {
    message = failure_message(g, call, plan, e.what(), started);
  }
  g.fail_call(call, message, breaks);
  // A failure every rank saw alike (the ranks disagree) leaves the group working: its
  // stream goes on (the error reaches the caller through the Work and the compute
  // streams). A transport failure stops the stream too.
  if (breaks) throw Error(message);
}

}  // namespace opscope::torch_bridge
