// A collective's Work: done when its launch on the communication stream has run (or was
// skipped after an earlier failure on that stream); wait() as NCCL's (c10d_group.h).
#include <fmt/format.h>

#include <thread>

#include "opscope/core/error.h"
#include "opscope/torch/bridge.h"
#include "opscope/torch/c10d_group.h"

namespace opscope::torch_bridge {

WorkOpscope::WorkOpscope(std::shared_ptr<CollectiveCall> call, c10d::OpType type, bool host_blocking,
                         std::chrono::milliseconds timeout)
    : c10d::Work(-1, type), call_(std::move(call)), host_blocking_(host_blocking), group_timeout_(timeout) {}

bool WorkOpscope::done() const { return call_->stream->completed() >= call_->launch_seq; }

bool WorkOpscope::isCompleted() { return done(); }

bool WorkOpscope::isSuccess() const { return done() && call_->state.load(std::memory_order_acquire) == 1; }

std::exception_ptr WorkOpscope::exception() const {
  if (!done() || call_->state.load(std::memory_order_acquire) == 1) return nullptr;
  return std::make_exception_ptr(Error(call_->state.load() == 2
                                           ? call_->error
                                           : fmt::format("[{}] not run: an earlier launch on its communication stream failed",
                                                         call_->op)));
}

void WorkOpscope::raise_if_failed() const {
  std::exception_ptr e = exception();
  if (!e) return;
  // Reported here, once: the caller's stream, which holds the same error, need not raise
  // it again at its next synchronize (another error it holds stays).
  if (call_->state.load(std::memory_order_acquire) == 2 && call_->caller) {
    try {
      call_->caller->check_error();
    } catch (const Error& other) {
      if (call_->error != other.what()) call_->caller->set_error(other.what());
    }
  }
  std::rethrow_exception(e);
}

int WorkOpscope::sourceRank() const {
  if (call_->source_rank < 0) fail(call_->op, "source_rank: the collective has not received from a known rank yet");
  return call_->source_rank;
}

std::vector<at::Tensor> WorkOpscope::result() { return call_->outputs; }

void WorkOpscope::synchronize() {
  current_stream(device(0)).wait(Event(call_->stream, call_->launch_seq, nullptr));
}

bool WorkOpscope::wait(std::chrono::milliseconds timeout) {
  if (timeout > std::chrono::milliseconds(0)) {
    // Poll: the stream has no timed wait, and a caller who gives a timeout expects a bound.
    auto deadline = std::chrono::steady_clock::now() + timeout;
    auto step = std::chrono::microseconds(20);
    while (!done()) {
      if (std::chrono::steady_clock::now() >= deadline)
        fail(call_->op, "work.wait timed out after {} ms ({} #{} still runs; the group's timeout is {} ms)",
             timeout.count(), call_->kernel, call_->seq, group_timeout_.count());
      std::this_thread::sleep_for(step);
      step = std::min(step * 2, std::chrono::microseconds(1000));
    }
  } else if (host_blocking_) {
    call_->stream->wait_for(call_->launch_seq);  // bounded: the engine fails it by the group's timeout
  }
  raise_if_failed();
  synchronize();
  return true;
}

}  // namespace opscope::torch_bridge
