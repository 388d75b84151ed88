// A device: memory (through a caching allocator), a set of cores that execute
// kernels, and streams that queue launches for them.
#pragma once
#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "opscope/runtime/allocator.h"
#include "opscope/runtime/stream.h"

namespace opscope {

enum class DeviceType : uint8_t { cpu, cuda };

class Device {
 public:
  static constexpr int kMaxStreams = 64;
  static constexpr int kMaxDevices = 16;

  virtual ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  DeviceType type() const { return type_; }
  // Process-wide index (also the allocator's and the profiler's device id).
  int index() const { return index_; }
  // "cpu:0", "cuda:0" (a CUDA device is named by its CUDA ordinal)
  std::string name() const;
  virtual int num_cores() const = 0;
  // One line for tables and profiles: kind, cores, ISA.
  virtual std::string description() const = 0;

  CachingAllocator& allocator() { return allocator_; }
  Stream& default_stream() { return *streams_[0]; }
  // A new stream, owned by the device (at most kMaxStreams). With an engine, the engine
  // runs its launches instead of the device's cores (stream.h).
  Stream& create_stream(StreamEngine* engine = nullptr);
  int num_streams() const { return num_streams_.load(std::memory_order_acquire); }
  Stream& stream(int i) { return *streams_[i]; }
  // Waits for every stream; rethrows the first kernel error.
  void synchronize();

  // Called by Stream::submit: there is new work.
  virtual void notify_work() = 0;
  // Called by a stream's engine when it finished a launch: launches of the device's own
  // streams may have waited for it.
  virtual void notify_progress() {}

  static Device* by_index(int index);

 protected:
  explicit Device(DeviceType t);
  // A device numbered `ordinal` by its driver (the name's number), whose memory comes
  // from `backend` (owned by the subclass, which empties the cache before it goes).
  Device(DeviceType t, int ordinal, const AllocatorBackend* backend);

 private:
  DeviceType type_;
  int index_;
  int ordinal_;
  CachingAllocator allocator_;  // written at every allocation: kept off the lines below
  // Read by the scheduler in its poll loop, so on lines of their own.
  alignas(64) std::array<std::unique_ptr<Stream>, kMaxStreams> streams_;
  std::atomic<int> num_streams_{0};
  std::mutex streams_m_;
};

// torch.cuda.memory_stats for any device: allocated, reserved, peak, counts and the
// capacity the allocator counts reserved bytes against.
inline AllocatorStats memory_stats(Device& dev) { return dev.allocator().stats(); }

// The process's CPU device, made on first use with OPSCOPE_CPU_CORES cores (default:
// all hardware threads) and OPSCOPE_CPU_MEMORY bytes (default: MemAvailable at that
// moment). It lives until the process exits.
Device& cpu();
// Sets the core count of cpu() before its first use; throws if it already exists with
// another count.
void configure_cpu(int num_cores);
// Registers (again) the exit handler that waits for cpu()'s queued work: a library whose
// kernels run on its cores calls it after its first call, so that the wait comes before
// that library's statics are destroyed (cpu_device.cpp).
void drain_cpu_at_exit();

}  // namespace opscope
