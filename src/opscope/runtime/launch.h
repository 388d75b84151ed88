// A launch: one kernel queued on a stream. The runtime fills it at the op's call; the
// device's cores execute it later, each on a slice [begin, end) of its work units.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace opscope {

class Stream;
struct Storage;
struct EventState;

using KernelBody = std::function<void(int64_t begin, int64_t end)>;

struct Launch {
  enum class Kind : uint8_t { kernel, copy_h2d, copy_d2h, copy_d2d, marker };
  Kind kind = Kind::kernel;
  uint64_t id = 0;        // unique in the process; device events carry it
  uint64_t op_id = 0;     // correlation id of the framework op that launched it (0: none)
  uint64_t seq = 0;       // position in its stream, from 1
  std::string name;       // kernel name, e.g. "rms_norm_f32"
  std::string op;         // framework op name, for error messages
  KernelBody body;        // empty for markers
  int64_t work = 1;       // independent work units (rows, element blocks)
  int64_t grain = 1;      // fewest units worth giving one core
  int64_t bytes = 0;      // bytes read + written by the whole launch
  int64_t flops = 0;
  std::vector<std::shared_ptr<Storage>> keep;          // alive until executed
  std::vector<std::pair<Stream*, uint64_t>> waits;     // must complete before this runs
  std::shared_ptr<EventState> event;                   // markers: stamped when reached
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
