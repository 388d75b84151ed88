// One collective as the host hands it to the communication engine: what it is (for its
// name, its profile event and the cross-rank check), which device tensors it reads and
// writes, and the transfer the engine runs (c10d_transfer.cpp).
#pragma once
#include <ATen/ATen.h>

#include <functional>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Types.hpp>

namespace opscope::torch_bridge {

class ProcessGroupOpscope;
struct CollectiveCall;

// The kinds of collective, in the order of the signature's code (c10d_transfer.cpp's table
// names each for messages and profiles).
enum class Kind : int64_t {
  all_reduce, broadcast, reduce, all_gather, gather, scatter, reduce_scatter, all_to_all, send, recv, barrier
};
const char* kind_name(Kind k);

// The engine's side of a collective: called on the engine's thread with CPU views of the
// plan's tensors' memory, it runs Gloo's collective and waits for it.
struct Transfer;
using TransferFn = std::function<void(Transfer&)>;

struct Plan {
  const char* op = "";          // torch's op name: "c10d::allreduce_"
  bool dispatched = true;       // torch 1.13 records it (a dispatcher op); else we do
  Kind kind = Kind::barrier;
  c10d::OpType type = c10d::OpType::UNKNOWN;
  at::ScalarType dtype = at::kFloat;
  bool has_dtype = false;       // barrier: none
  std::vector<at::Tensor> reads, writes;  // device tensors
  std::vector<at::Tensor> outputs;        // Work::result()
  int64_t bytes = 0;            // nccl-tests' size
  int64_t in_elems = 0, out_elems = 0;
  int64_t arg = 0;              // reduce op, root, or peer: part of the signature
  std::vector<int64_t> shape;   // the tensor the signature describes
  bool check = false;           // compare the signature across ranks first (not p2p or barrier)
  bool host_blocking = false;   // barrier: Work::wait blocks the host
  TransferFn transfer;
};

// Everything the engine's transfer reaches.
struct Transfer {
  ProcessGroupOpscope& group;
  const Plan& plan;
  int source_rank = -1;  // recv from any source: who sent
  // Waits for a Gloo work (bounded by Gloo's timeout); rethrows its error.
  static void wait(const c10::intrusive_ptr<c10d::Work>& w);
};

// ---- pieces of transfers (c10d_transfer.cpp), on CPU views of device memory
// The tensor as Gloo moves it: bf16 as f16 (Gloo 1.13 has no bf16; the bytes are the same).
at::Tensor as_gloo_bytes(const at::Tensor& host);
// All-reduce (root < 0) or reduce to `root` of `buf` in place: AVG as SUM then divided by
// the group's size; bf16 (and f16 averages) through an f32 copy.
void reduce_into(Transfer& x, const at::Tensor& buf, const c10d::ReduceOp& op, int64_t root);
// Reduce-scatter: `rows` holds one row per rank (row r goes to rank r); this rank's reduced
// row lands in `out`. An all-to-all moves the rows ((n-1)/n of the data, as a ring
// reduce-scatter does), then this rank reduces what it received.
void reduce_scatter_into(Transfer& x, const at::Tensor& rows, const at::Tensor& out, const c10d::ReduceOp& op);

// Runs a plan on the engine's thread: the cross-rank check, then the transfer; a failure
// breaks the group (c10d_group.h) and throws the error the stream keeps.
void run_plan(ProcessGroupOpscope& g, CollectiveCall& call, Plan& plan);

}  // namespace opscope::torch_bridge
