// A profile session (the analog of torch.profiler.profile): RAII, one per process.
//
//   prof::ProfilerConfig cfg;
//   cfg.record_shapes = true;
//   prof::Profiler p(cfg);
//   p.start();
//   for (...) { model(x); p.step(); }
//   p.stop();
//   std::cout << analysis::key_averages(p.trace()).table("self_device_time_total");
//
// Without a schedule the session records from start() to stop(). With one, step()
// moves through the schedule's actions with torch.profiler's transitions: recording
// starts when an active step begins, and each cycle's last active step
// (RECORD_AND_SAVE) ends a window, collects its Trace and hands it to on_trace_ready.
// WARMUP steps do not record: the recorder has no lazy state worth warming beyond its
// per-thread buffers, which survive from one window to the next.
#pragma once
#include <cstdint>

#include "opscope/profiler/buffer.h"
#include "opscope/profiler/config.h"
#include "opscope/profiler/trace.h"

namespace opscope::prof {

class Profiler {
 public:
  explicit Profiler(ProfilerConfig config = {});
  ~Profiler();  // stops a running session (errors are swallowed there; call stop() to see them)
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  // Throws "[profiler] ..." when another session of this process is running, or
  // "[field] ..." for an invalid config.
  void start();
  // Ends the current step (torch's prof.step()).
  void step();
  // Stops recording, collects the last window, calls on_trace_ready. No-op if not running.
  void stop();

  bool running() const { return running_; }
  bool recording() const { return recording_; }
  int64_t step_num() const { return step_; }
  ProfilerAction current_action() const { return action_; }
  const ProfilerConfig& config() const { return config_; }
  // The most recently collected trace (empty before the first collection).
  const Trace& trace() const { return trace_; }
  // Collected windows so far.
  int64_t traces_collected() const { return collected_; }

 private:
  ProfilerAction action_at(int64_t step) const;
  void transition(ProfilerAction from, ProfilerAction to);
  void start_trace();
  void stop_trace();
  void trace_ready();

  ProfilerConfig config_;
  bool running_ = false;
  bool recording_ = false;
  int64_t step_ = 0;
  int64_t collected_ = 0;
  ProfilerAction action_ = ProfilerAction::none;
  detail::Window window_;
  Trace trace_;
};

}  // namespace opscope::prof
