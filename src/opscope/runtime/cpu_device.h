// The CPU device. Its cores are worker threads (pinned to CPUs where the OS allows).
// Core 0 is also the scheduler: it takes the next ready launch from the streams and,
// when the launch has enough work, fans it out to the other cores. Core c owns the slice
// c of n of the launch's work, cut into a few chunks; it runs its own chunks from the
// front, and a core that is done takes what is left of another's from the back. So a
// core that is asleep or preempted when the launch starts does not hold it up, and when
// none is late each core touches the same data as in the launch before (its cache holds
// it). A core on the host thread's CPU joins only big launches, and any launch a thread
// waits for in synchronize (see kHostCoreMinCost).
// OPSCOPE_CPU_SCHEDULE=static turns both off: every core runs its slice of every launch.
#pragma once
#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "opscope/runtime/device.h"

namespace opscope {

enum class CpuSchedule : uint8_t {
  from_env,       // OPSCOPE_CPU_SCHEDULE: "steal" (the default) or "static"
  steal,          // own slice first (kChunksPerCore chunks), then what other cores left
  static_slices,  // core c runs units [work*c/n, work*(c+1)/n); the launch waits for every core
};

class CpuDevice final : public Device {
 public:
  // num_cores <= 0 means all hardware threads. memory_bytes: what the allocator may hold
  // (0: OPSCOPE_CPU_MEMORY, else the machine's MemAvailable now; < 0: no limit).
  explicit CpuDevice(int num_cores = 0, bool pin = true, int64_t memory_bytes = 0,
                     CpuSchedule schedule = CpuSchedule::from_env);
  static constexpr int kChunksPerCore = 4;
  // Finishes queued work, then stops the cores. Tensors on this device must be gone.
  ~CpuDevice() override;

  int num_cores() const override { return num_cores_; }
  std::string description() const override;
  void notify_work() override;
  void notify_progress() override;
  // The CPU core `core` is pinned to, and the CPU the creating thread ran on (core 0,
  // the polling scheduler, avoids it when it can).
  int cpu_of_core(int core) const { return cpu_of_core_[core].load(std::memory_order_relaxed); }
  int host_cpu() const { return host_cpu_; }
  CpuSchedule schedule() const { return schedule_; }
  // How often core 0 (the scheduler) went to sleep: it polls only while it can run something.
  uint64_t scheduler_sleeps() const { return sleeps_.load(std::memory_order_relaxed); }

 private:
  void scheduler_loop();
  bool any_queued();
  bool any_ready();
  bool waits_on_other_device();
  void wake_scheduler();
  void move_off_host_cpu();
  void helper_loop(int core);
  void execute(Launch& l, Stream& s);
  void run_chunks(int core);
  void run_body(Launch& l, int64_t begin, int64_t end);
  bool shares_host_cpu(uint32_t core) const;
  void record_error(std::exception_ptr e);

  int num_cores_;
  bool pinned_ = false;
  CpuSchedule schedule_ = CpuSchedule::steal;
  uint64_t instance_ = 0;  // unique in the process (indexes are reused)
  std::unique_ptr<std::atomic<int>[]> cpu_of_core_;  // the CPU each core is pinned to
  int host_cpu_ = -1;
  int64_t last_move_ns_ = 0;  // scheduler only
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};

  // Scheduler wake-up; the host reads sched_sleeping_ at every launch.
  alignas(64) std::atomic<uint32_t> work_signal_{0};
  std::atomic<bool> sched_sleeping_{false};
  std::atomic<uint64_t> sleeps_{0};

  // Fan-out of one launch (a job) over the cores. job_ is written before job_word_
  // publishes the job and stays valid until job_done_ reaches its chunk count.
  Launch* job_ = nullptr;
  uint32_t job_seq_ = 0;  // scheduler only
  // The job: number (32 bits) | cores with a slice (16) | chunks per slice (16).
  alignas(64) std::atomic<uint64_t> job_word_{0};
  std::atomic<uint32_t> job_done_{0};  // chunks finished (counted when a core stops claiming)
  alignas(64) std::atomic<uint32_t> job_gen_{0};  // bumped per job: what sleeping helpers wait on
  // Each core's slice: job number (32) | next chunk from the front (16) | end (16).
  struct alignas(64) Slice {
    std::atomic<uint64_t> word{0};
  };
  std::unique_ptr<Slice[]> slices_;
  // The CPU the last submitting thread ran on (written only when it changes), and a
  // generation bumped when cores are re-pinned.
  alignas(64) std::atomic<int> submit_cpu_{-1};
  std::atomic<uint32_t> pin_gen_{0};

  std::atomic<int> helpers_sleeping_{0};
  std::mutex job_err_m_;
  std::exception_ptr job_err_;
};

}  // namespace opscope
