// A host engine: a thread of its own that runs one stream's launches instead of the
// device's cores (stream.h's StreamEngine). A process group's collectives run on one:
// each blocks on the network for as long as the transfer takes, and a core that did that
// would hold up every stream of the device; on the engine, the cores go on computing.
//
// Its launches keep every stream rule: in order, each after its waits (the engine blocks
// on the stream it waits for, it does not poll), a body's exception becomes the stream's
// error named by the op and skips the launches after it, and each launch is one device
// event (on the track "cpu:0 stream N").
#pragma once
#include <condition_variable>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>

#include "opscope/runtime/device.h"
#include "opscope/runtime/launch.h"
#include "opscope/runtime/tensor.h"

namespace opscope {

class HostEngine final : public StreamEngine {
 public:
  // A new stream on `dev` and the thread that runs it. A device has at most
  // Device::kMaxStreams streams and never frees one: an engine's stream stays with the
  // device, idle, after the engine is gone.
  explicit HostEngine(Device& dev);
  // Runs what was queued, then ends the thread.
  ~HostEngine() override;
  HostEngine(const HostEngine&) = delete;
  HostEngine& operator=(const HostEngine&) = delete;

  Stream& stream() { return stream_; }
  Device& device() { return stream_.device(); }

  // runtime::launch on the engine's stream: the body runs once, as body(0, work), on the
  // engine's thread, after the launch's waits (the last writers of `reads`, and what the
  // caller queued with stream().wait(event)).
  uint64_t launch(LaunchSpec spec, std::span<const Tensor* const> reads, std::span<const Tensor* const> writes);
  uint64_t launch(LaunchSpec spec, std::initializer_list<const Tensor*> reads,
                  std::initializer_list<const Tensor*> writes) {
    return launch(std::move(spec), std::span<const Tensor* const>(reads.begin(), reads.size()),
                  std::span<const Tensor* const>(writes.begin(), writes.size()));
  }

  // For a body while it runs on an engine: the description its device event carries (the
  // profile's shapes column), e.g. "collective all_reduce, in 1024 elements, ...".
  static void describe(std::string detail);

  void notify() override;

 private:
  void run();
  void execute(Launch& l);

  Stream& stream_;
  std::mutex m_;
  std::condition_variable cv_;
  uint64_t signal_ = 0;  // bumped at every submit; needs m_
  bool stop_ = false;    // needs m_
  std::thread thread_;
};

}  // namespace opscope
