// The CPU device. Its cores are worker threads (pinned to CPUs where the OS allows).
// Core 0 is also the scheduler: it takes the next ready launch from the streams and,
// when the launch has enough work, fans slices of it out to the other cores.
#pragma once
#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "opscope/runtime/device.h"

namespace opscope {

class CpuDevice final : public Device {
 public:
  // num_cores <= 0 means all hardware threads. memory_bytes: what the allocator may hold
  // (0: OPSCOPE_CPU_MEMORY, else the machine's MemAvailable now; < 0: no limit).
  explicit CpuDevice(int num_cores = 0, bool pin = true, int64_t memory_bytes = 0);
  // Finishes queued work, then stops the cores. Tensors on this device must be gone.
  ~CpuDevice() override;

  int num_cores() const override { return num_cores_; }
  std::string description() const override;
  void notify_work() override;
  // The CPU core `core` is pinned to, and the CPU the creating thread ran on (core 0,
  // the polling scheduler, avoids it when it can).
  int cpu_of_core(int core) const { return cpu_of_core_[core].load(std::memory_order_relaxed); }
  int host_cpu() const { return host_cpu_; }

 private:
  void scheduler_loop();
  bool any_queued();
  void move_off_host_cpu();
  void helper_loop(int core);
  void execute(Launch& l, Stream& s);
  void run_slice(Launch& l, int core, int ncores);
  void record_error(std::exception_ptr e);

  int num_cores_;
  bool pinned_ = false;
  std::unique_ptr<std::atomic<int>[]> cpu_of_core_;  // the CPU each core is pinned to
  int host_cpu_ = -1;
  int64_t last_move_ns_ = 0;  // scheduler only
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};

  // Scheduler wake-up; the host reads sched_sleeping_ at every launch.
  alignas(64) std::atomic<uint32_t> work_signal_{0};
  std::atomic<bool> sched_sleeping_{false};

  // Fan-out of one launch to cores 1..n-1; every helper acknowledges every job.
  Launch* job_ = nullptr;
  int job_cores_ = 1;
  // The CPU the last submitting thread ran on (written only when it changes), and a
  // generation bumped when cores are re-pinned.
  alignas(64) std::atomic<int> submit_cpu_{-1};
  std::atomic<uint32_t> pin_gen_{0};

  alignas(64) std::atomic<uint32_t> job_gen_{0};
  std::atomic<int> job_pending_{0};
  std::atomic<int> helpers_sleeping_{0};
  std::mutex job_err_m_;
  std::exception_ptr job_err_;
};

}  // namespace opscope
