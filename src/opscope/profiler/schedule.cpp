#include "opscope/profiler/schedule.h"

#include "opscope/core/error.h"

namespace opscope::prof {

const char* action_name(ProfilerAction a) {
  switch (a) {
    case ProfilerAction::none: return "NONE";
    case ProfilerAction::warmup: return "WARMUP";
    case ProfilerAction::record: return "RECORD";
    case ProfilerAction::record_and_save: return "RECORD_AND_SAVE";
  }
  return "?";
}

void Schedule::validate() const {
  if (active <= 0) fail("schedule", "active must be > 0, got {}", active);
  if (skip_first < 0 || wait < 0 || warmup < 0 || repeat < 0)
    fail("schedule", "skip_first, wait, warmup and repeat must be >= 0, got {}, {}, {}, {}", skip_first, wait,
         warmup, repeat);
}

// Same arithmetic as torch.profiler.schedule.
ProfilerAction Schedule::action(int64_t step) const {
  if (step < skip_first) return ProfilerAction::none;
  step -= skip_first;
  int64_t cycle = wait + warmup + active;
  if (repeat > 0 && step / cycle >= repeat) return ProfilerAction::none;
  int64_t s = step % cycle;
  if (s < wait) return ProfilerAction::none;
  if (s < wait + warmup) return ProfilerAction::warmup;
  return s < cycle - 1 ? ProfilerAction::record : ProfilerAction::record_and_save;
}

}  // namespace opscope::prof
