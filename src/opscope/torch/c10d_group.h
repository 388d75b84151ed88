// The "opscope" c10d backend: a torch.distributed process group over opscope device tensors.
//
// Each collective is launched like any op: the host checks its tensors, and queues one
// launch on the group's communication stream, run by a host engine of its own
// (runtime/host_engine.h), after everything the caller's stream queued so far (the kernels
// that produced its input). The call returns at once with a Work. The engine runs the
// transfer with Gloo's TCP transport (an inner ProcessGroupGloo over the same store): the
// device's memory is host memory, so Gloo reads and writes the tensors' own bytes.
//
// Work::wait() orders the caller's stream after the collective (as NCCL's does); it blocks
// the host only for a barrier or when given a timeout. A failed collective's error goes on
// the caller's stream, so the next read or synchronize raises it. Ranks
// that disagree on shapes all fail that one collective alike and the group goes on; a
// transport failure (a dead or stuck peer: the error names the ranks that did not take
// part) breaks the group: its later collectives fail at the call.
#pragma once
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "opscope/runtime/host_engine.h"

namespace opscope::torch_bridge {

struct Plan;  // c10d_plan.h

// What one collective call shares between its Work and the engine that runs it.
struct CollectiveCall {
  const char* op = "";       // the framework op: "c10d::allreduce_"
  std::string kernel;        // its device event: "all_reduce_f32"
  uint64_t seq = 0;          // its number in the group
  Stream* stream = nullptr;  // the communication stream and the launch's place on it
  Stream* caller = nullptr;  // the stream it was called from: where its error goes
  uint64_t launch_seq = 0;
  std::atomic<int> state{0};  // 0 pending, 1 done, 2 failed
  std::string error;          // set before state becomes 2
  int source_rank = -1;       // recv from any source: who sent
  std::vector<at::Tensor> outputs;
};

// Group-wide facts the collectives and their failure reports need.
struct GroupInfo {
  std::string name;             // torch's group name ("0" for the default group)
  int rank = 0, size = 1;
  std::vector<int64_t> global_ranks;  // group rank -> rank in the job
  std::chrono::milliseconds timeout{0};
  bool check_shapes = true;     // compare each collective's signature across ranks first
};

class ProcessGroupOpscope final : public c10d::ProcessGroup {
 public:
  ProcessGroupOpscope(c10::intrusive_ptr<c10d::ProcessGroup> gloo, c10::intrusive_ptr<c10d::Store> store, GroupInfo info);
  ~ProcessGroupOpscope() override;

  const std::string getBackendName() const override { return "opscope"; }
  const GroupInfo& info() const { return info_; }
  Stream& comm_stream() { return engine_->stream(); }

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors, const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_splits,
                                               std::vector<int64_t>& input_splits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

  // ---- for the engine (c10d_transfer.cpp) ----
  c10d::ProcessGroup& gloo() { return *gloo_; }
  c10d::Store& store() { return *store_; }
  // The first failure's message once the group is broken ("" while it works).
  std::string broken() const;
  // `call` failed: its error goes on the stream it was called from (the caller's next read
  // or synchronize raises it); a transport failure also breaks the group (its later
  // collectives fail at the call).
  void fail_call(CollectiveCall& call, const std::string& message, bool breaks_group);

 private:
  c10::intrusive_ptr<c10d::Work> submit(Plan& p);

  c10::intrusive_ptr<c10d::ProcessGroup> gloo_;
  c10::intrusive_ptr<c10d::Store> store_;
  GroupInfo info_;
  // The engine a plan runs on: the group's for collectives; for point-to-point, one per
  // (direction, peer), made when first used. A send and a receive must progress together
  // (each blocks until its peer's counterpart is posted: a ring of isend/irecv would
  // deadlock on one queue), while messages to one peer stay in order. Needs submit_m_.
  HostEngine& engine_for(const Plan& p);

  std::unique_ptr<HostEngine> engine_;
  std::map<std::pair<int, int64_t>, std::unique_ptr<HostEngine>> p2p_;  // needs submit_m_
  std::mutex submit_m_;   // one launch queued at a time: numbers and launches agree
  uint64_t next_seq_ = 1;      // collectives (the same on every rank); needs submit_m_
  uint64_t next_p2p_seq_ = 1;  // point-to-point; needs submit_m_
  mutable std::mutex broken_m_;
  std::string broken_;  // needs broken_m_
};

// A collective's Work: completion is its launch's on the communication stream.
class WorkOpscope final : public c10d::Work {
 public:
  WorkOpscope(std::shared_ptr<CollectiveCall> call, c10d::OpType type, bool host_blocking, std::chrono::milliseconds timeout);
  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  int sourceRank() const override;
  std::vector<at::Tensor> result() override;
  // The caller's current stream waits for the collective.
  void synchronize() override;
  // As NCCL's: the caller's stream waits for the collective; an error already known raises
  // here. The host blocks (at most `timeout`, else the group's) for a barrier or when a
  // timeout is given, and raises the collective's error or "timed out".
  bool wait(std::chrono::milliseconds timeout) override;

 private:
  bool done() const;
  void raise_if_failed() const;
  std::shared_ptr<CollectiveCall> call_;
  bool host_blocking_;
  std::chrono::milliseconds group_timeout_;
};

}  // namespace opscope::torch_bridge
