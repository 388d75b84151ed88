// ProfilerConfig: the one object that says what a profile session captures (the analog
// of Neuron's NeuronConfig and torch.profiler.profile's arguments). The same settings
// come from OPSCOPE_PROFILE_* environment variables, so an unmodified program linked
// with opscope can be profiled (see auto_profile.h).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "opscope/profiler/hooks.h"
#include "opscope/profiler/schedule.h"

namespace opscope::prof {

struct Trace;

// Device cores whose kernel executions are recorded: "all", "0,1", "0-3", "0-3,8".
class CoreSet {
 public:
  static constexpr int kMaxCore = 4095;

  CoreSet() = default;  // all cores
  // Throws "[what] 'spec' is not a core list ..." naming the string.
  static CoreSet parse(std::string_view spec, std::string_view what = "cores");

  bool is_all() const { return all_; }
  bool contains(int core) const;
  const std::vector<int>& cores() const { return cores_; }  // sorted, empty when all
  std::string str() const;                                  // "all" or "0-3,8"

 private:
  bool all_ = true;
  std::vector<int> cores_;
};

// "framework,runtime,device,instructions" (any subset, or "all" = the first three) → a
// Layer bitmask; "instructions" brings "device" with it. Throws "[what] ...".
uint32_t parse_layers(std::string_view spec, std::string_view what = "layers");
std::string layers_str(uint32_t layers);

struct ProfilerConfig {
  static constexpr int64_t kDefaultMaxEvents = int64_t(1) << 20;
  static constexpr int64_t kMaxMaxEvents = int64_t(1) << 24;  // 1 GiB of records per buffer

  uint32_t layers = kFramework | kRuntime | kDevice;
  CoreSet cores;
  std::string output_dir = "opscope-profile";
  // Capacity of each buffer (one per recording host thread, one per device core); a
  // full buffer drops events and counts them.
  int64_t max_events = kDefaultMaxEvents;
  // GPU tracing (CUPTI, with the device layer on a CUDA build): activity buffers of
  // cupti_buffer_kb each, at most cupti_max_buffers in flight (more requests are refused
  // and CUPTI drops their records, which count as dropped).
  static constexpr int64_t kMaxCuptiBufferKb = int64_t(1) << 20;  // 1 GiB
  static constexpr int64_t kMaxCuptiBuffers = 4096;
  int64_t cupti_buffer_kb = 4096;
  int64_t cupti_max_buffers = 64;
  // The instructions layer: samples per second of each device core's time (cpu-clock:
  // one every 1e9 / rate ns the core runs; cycles: the OS adapts the period to it).
  // kAutoSampleRate (the default): 10 kHz, lowered where one sample's interrupt costs so much
  // (a VM) that 10 kHz would take more than 1.5% of the cores' time (sample_cost.h).
  static constexpr int64_t kAutoSampleRate = 0;
  static constexpr int64_t kMaxAutoSampleRateHz = 10'000;
  static constexpr double kSampleCostBudget = 0.015;  // measured: ~2.3% of device time at 2% (bench/sampling_overhead)
  static constexpr int64_t kMinSampleRateHz = 100;
  static constexpr int64_t kMaxSampleRateHz = 100'000;  // Linux's cpu-clock floor: 10 us
  int64_t sample_rate_hz = kAutoSampleRate;
  bool record_shapes = false;          // input shapes and dtypes of each op
  bool with_stack = false;             // each op's call site, resolved at collection
  bool correlate_device_time = true;   // kernel device time belongs to the launching op
  std::optional<Schedule> schedule;    // none: record from start() to stop()
  // Called with each collected trace: at stop(), or at each RECORD_AND_SAVE step.
  std::function<void(const Trace&)> on_trace_ready;

  // Throws "[field] ..." for an invalid setting.
  void validate() const;
  // The settings (not the callback) as a JSON object; Trace::config_json holds it.
  std::string to_json() const;

  // Defaults overridden by OPSCOPE_PROFILE_DIR, _LAYERS, _CORES, _MAX_EVENTS, _SHAPES,
  // _STACK, _CUPTI_BUFFER_KB, _CUPTI_MAX_BUFFERS, _SAMPLE_RATE (a count or "auto"); a bad
  // value throws "[OPSCOPE_PROFILE_X] ..." naming the variable.
  static ProfilerConfig from_env();
  // OPSCOPE_PROFILE=1 (true when set to 1/true/yes/on; throws on a value not a boolean).
  static bool env_enabled();
};

// "auto" (kAutoSampleRate) or samples per second per core in range; throws "[what] ...".
int64_t parse_sample_rate(std::string_view text, std::string_view what);

}  // namespace opscope::prof
