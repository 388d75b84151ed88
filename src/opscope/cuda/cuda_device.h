// The CUDA device. Memory comes from the caching allocator over cudaMalloc (never
// managed memory). Each opscope Stream maps to a non-blocking cudaStream_t. One host
// thread, the scheduler, takes launches from the streams in order and runs each body on
// itself: the body enqueues CUDA work on cuda_impl::current_stream(). The scheduler then
// records a pooled event; a launch completes (Stream::completed advances) when its event
// has, so synchronize(), events and tensor reads mean what they mean on the CPU device.
// Waits on another stream of this device become cudaStreamWaitEvent; errors (at enqueue,
// during the kernel, or reported by a kernel through its error slot) surface at the next
// synchronize, naming the op.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "opscope/cuda/launchers.h"
#include "opscope/runtime/device.h"

namespace opscope::cuda_impl {

bool available();
std::string unavailable_reason();
int device_count();
Device& get_device(int ordinal);

// Pinned host memory for device-to-host copies, cached by the device.
struct PinnedBuffer {
  void* ptr = nullptr;
  size_t size = 0;
};

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(int ordinal);  // throws "[cuda] cuda:N: ..." when the GPU cannot be used
  ~CudaDevice() override;

  int ordinal() const { return ordinal_; }
  // Streaming multiprocessors: the device's cores.
  int num_cores() const override { return sm_count_; }
  std::string description() const override;
  void notify_work() override;

  PinnedBuffer get_pinned(size_t bytes);
  void put_pinned(PinnedBuffer b);

  // Waits until the streams have run what they hold.
  void drain();
  // drain(), then stops the scheduler thread (at exit: before the CUDA runtime tears
  // itself down). Launches submitted afterwards never run.
  void shutdown();

 private:
  // What the scheduler enqueued and has not yet seen complete, per stream.
  struct InFlight {
    Launch* launch;
    cudaEvent_t event;
    int slot;  // error slot index, or -1
  };
  struct Lane {
    cudaStream_t stream = nullptr;
    cublasHandle_t blas = nullptr;
    void* blas_workspace = nullptr;
    Launch* last = nullptr;  // last launch issued (stays valid: its seq is >= completed)
    std::deque<InFlight> inflight;
  };

  void scheduler_loop();
  bool retire(Stream& s, Lane& lane);
  bool issue(Stream& s, Lane& lane);
  bool waits_ready(const Launch& l, std::vector<cudaEvent_t>& events);
  void run_body(Launch& l, Stream& s, Lane& lane, int& slot);
  cudaEvent_t get_event();
  std::string slot_message(const Launch& l, int slot) const;
  bool idle();

  static void* backend_alloc(size_t size, void* ctx);
  static void backend_free(void* p, size_t size, void* ctx);

  int ordinal_;
  AllocatorBackend backend_;
  int sm_count_ = 0;
  std::string gpu_name_;
  int cc_major_ = 0, cc_minor_ = 0;
  size_t total_mem_ = 0;

  std::array<Lane, kMaxStreams> lanes_;  // scheduler only
  std::vector<cudaEvent_t> free_events_;  // scheduler only
  KernelError* slots_ = nullptr;          // mapped pinned memory (host view)
  KernelError* slots_dev_ = nullptr;      // its device view
  std::vector<int> free_slots_;           // scheduler only

  std::mutex pinned_m_;
  std::multimap<size_t, void*> pinned_free_;

  std::thread thread_;
  std::atomic<bool> stop_{false};
  alignas(64) std::atomic<uint32_t> work_signal_{0};
  std::atomic<bool> sched_sleeping_{false};

  friend cudaStream_t current_stream();
  friend cublasHandle_t current_blas();
  friend KernelError* current_error_slot();
};

// ---- for launch bodies, on the scheduler thread ----
// The cudaStream_t of the launch being enqueued.
cudaStream_t current_stream();
// The cuBLAS handle bound to that stream (made on first use).
cublasHandle_t current_blas();
// A zeroed error slot (device pointer) for this launch; a kernel that finds bad input
// (an index out of range) writes it, and the scheduler turns it into the stream's error
// when the launch completes.
KernelError* current_error_slot();
// The CUDA device of `dev` (which must be one).
CudaDevice& as_cuda(Device& dev);

}  // namespace opscope::cuda_impl
