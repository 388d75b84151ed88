#include "opscope/profiler/session.h"

#include "opscope/core/error.h"
#include "opscope/profiler/annotate.h"
#include "opscope/profiler/collect.h"
#include "opscope/profiler/cupti_session.h"
#include "opscope/profiler/samples.h"
#include "opscope/profiler/sampler.h"

namespace opscope::prof {

namespace {
// The running session: recording state is process-wide, so there can be only one.
std::atomic<const Profiler*> g_active{nullptr};
}  // namespace

Profiler::Profiler(ProfilerConfig config) : config_(std::move(config)) {}

Profiler::~Profiler() {
  try {
    stop();
  } catch (...) {
  }
}

ProfilerAction Profiler::action_at(int64_t step) const {
  return config_.schedule ? config_.schedule->action(step) : ProfilerAction::record;
}

void Profiler::start() {
  if (running_) fail("profiler", "start() called twice on the same session");
  config_.validate();
  const Profiler* expected = nullptr;
  if (!g_active.compare_exchange_strong(expected, this))
    fail("profiler",
         "another profile session is running in this process (one at a time; OPSCOPE_PROFILE=1 runs one for "
         "the whole program)");
  running_ = true;
  step_ = 0;
  action_ = action_at(0);
  transition(ProfilerAction::none, action_);
}

void Profiler::step() {
  if (!running_) return;
  ProfilerAction prev = action_;
  ++step_;
  action_ = action_at(step_);
  if (recording_) detail::anchor_window(window_);
  transition(prev, action_);
}

void Profiler::stop() {
  if (!running_) return;
  bool ready = recording_ && (action_ == ProfilerAction::record || action_ == ProfilerAction::record_and_save);
  running_ = false;
  struct Release {
    ~Release() { g_active.store(nullptr); }
  } release;
  stop_trace();
  if (ready) trace_ready();
}

// torch.profiler's action map, less its warnings and prepare step.
void Profiler::transition(ProfilerAction from, ProfilerAction to) {
  using A = ProfilerAction;
  bool rec_from = from == A::record || from == A::record_and_save;
  bool rec_to = to == A::record || to == A::record_and_save;
  if (from == A::record_and_save) {
    stop_trace();
    trace_ready();
  } else if (rec_from && !rec_to) {
    stop_trace();  // an incorrect schedule (RECORD then NONE/WARMUP): collected, not handed over
  }
  if (rec_to && !recording_) start_trace();
}

void Profiler::start_trace() {
  detail::begin_window(config_, window_);
  detail::sampler_begin(config_);  // the instructions layer (no-op without it)
  detail::cupti_begin(config_);  // GPU activity, when a CUDA device is there (no-op otherwise)
  recording_ = true;
}

void Profiler::stop_trace() {
  if (!recording_) return;
  detail::end_window(window_);  // the devices have run what the window queued
  std::optional<DeviceActivity> gpu = detail::cupti_end();
  detail::SamplerReport samples = detail::sampler_end();
  recording_ = false;
  trace_ = detail::collect(window_, config_);
  detail::attach_samples(trace_, std::move(samples), window_.start_ns);
  if (gpu) merge_device_activity(trace_, *gpu);
  annotate_trace(trace_);
  ++collected_;
}

void Profiler::trace_ready() {
  if (config_.on_trace_ready) config_.on_trace_ready(trace_);
}

}  // namespace opscope::prof
