// A launch: one kernel queued on a stream. The runtime fills it at the op's call; the
// device's cores execute it later, each on a slice [begin, end) of its work units.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "opscope/runtime/kernel_fn.h"

namespace opscope {

class Stream;
struct Storage;
struct EventState;

using KernelBody = KernelFn;  // (begin, end) over the launch's work units

struct Launch {
  enum class Kind : uint8_t { kernel, copy_h2d, copy_d2h, copy_d2d, marker };
  // What the device's scheduler reads, packed first: the host rewrites these lines when
  // it recycles the launch, and each line the scheduler has read costs a cross-core
  // miss. The groups below start on 128-byte boundaries because the CPU fetches lines
  // in adjacent pairs.
  Kind kind = Kind::kernel;
  uint64_t seq = 0;       // position in its stream, from 1
  int64_t work = 1;       // independent work units (rows, element blocks)
  int64_t grain = 1;      // fewest units worth giving one core
  std::vector<std::pair<Stream*, uint64_t>> waits;     // must complete before this runs
  std::shared_ptr<EventState> event;                   // markers: stamped when reached
  KernelBody body;        // empty for markers

  // The host's bookkeeping, and what the profiler and error messages read.
  alignas(128) uint64_t id = 0;  // unique in the process; device events carry it
  uint64_t op_id = 0;     // correlation id of the framework op that launched it (0: none)
  int64_t bytes = 0;      // bytes read + written by the whole launch
  int64_t flops = 0;
  std::string name;       // kernel name, e.g. "rms_norm_f32"
  std::string op;         // framework op name, for error messages
  std::vector<std::shared_ptr<Storage>> keep;          // alive until executed
  Launch* free_next = nullptr;  // the stream's list of recycled launches

  // The stream's queue link. Launches are recycled by the submitting side (see Stream).
  alignas(128) std::atomic<Launch*> next{nullptr};  // own lines: the scheduler polls it
  // Drops what holds resources (keep-alive references, waits, event) for reuse; every
  // other field is written again when the launch is filled.
  void reset();
};

// What an op hands the runtime to launch one kernel.
class Tensor;
struct LaunchSpec {
  std::string name;
  KernelBody body;
  int64_t work = 1;
  int64_t grain = 1;
  int64_t bytes = 0;
  int64_t flops = 0;
  Launch::Kind kind = Launch::Kind::kernel;
};

}  // namespace opscope
