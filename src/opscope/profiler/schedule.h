// When a profile session records, as torch.profiler.schedule: step() advances the step
// number and the schedule says what this step does. Steps [0, skip_first) are skipped,
// then cycles of `wait` idle steps, `warmup` steps and `active` recorded steps repeat
// `repeat` times (0 = forever); the last active step of a cycle hands the trace over.
#pragma once
#include <cstdint>

namespace opscope::prof {

enum class ProfilerAction : uint8_t { none, warmup, record, record_and_save };
const char* action_name(ProfilerAction a);  // "NONE", "WARMUP", "RECORD", "RECORD_AND_SAVE"

struct Schedule {
  int64_t skip_first = 0;
  int64_t wait = 0;
  int64_t warmup = 0;
  int64_t active = 1;
  int64_t repeat = 0;

  // Throws "[schedule] ..." unless active > 0 and the others are >= 0.
  void validate() const;
  ProfilerAction action(int64_t step) const;
};

}  // namespace opscope::prof
