// A collected profile: every event of the three layers after a profile session stopped,
// in a plain form that key_averages, the exporters and the SQLite store all read.
// The capture side (per-thread buffers of packed records) turns into this at stop().
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace opscope::prof {

// Bump when the meaning or layout of a stored profile changes (trace.json metadata and
// the SQLite store carry it; readers reject newer versions).
constexpr int kSchemaVersion = 1;

enum class EventKind : uint8_t {
  op,        // framework op (name = op name)                 layer framework
  range,     // user annotation, record_function (name given)  layer framework
  launch,    // runtime: a kernel queued on a stream            layer runtime
  alloc,     // runtime: caching-allocator allocation           layer runtime
  free,      // runtime: block returned to the cache            layer runtime
  sync,      // runtime: host waited (stream/device/event/read) layer runtime
  kernel,    // device: one core executed a slice of a launch   layer device
             // (on a GPU: a kernel, memcpy or memset on a stream, from CUPTI)
  api,       // runtime: a CUDA runtime API call (CUPTI)        layer runtime
};
constexpr EventKind kLastEventKind = EventKind::api;
const char* kind_name(EventKind k);

struct TraceEvent {
  EventKind kind = EventKind::op;
  int64_t t0 = 0;  // ns since Trace::base_time_ns (so small, positive, exact)
  int64_t t1 = 0;  // == t0 for instant events (alloc, free)
  // op/range: correlation id of this op; launch/kernel: the launch id;
  // alloc/free: the block's address; sync: 0.
  uint64_t id = 0;
  // op/range: id of the enclosing op/range on the same thread (0 = top level);
  // launch/kernel: correlation id of the framework op that launched it (0 = none);
  // alloc/free/sync: the op/range it happened in (0 = none).
  uint64_t parent = 0;
  int64_t bytes = 0;   // launch/kernel: bytes moved; alloc/free: block size
  int64_t flops = 0;   // launch/kernel
  int64_t value = 0;   // alloc/free: device bytes allocated after it; op: sequence nr; kernel: trace's MB/s
  std::string name;    // op/range/kernel name; launch: kernel name; sync: "stream", "device", ...
  int32_t track = 0;   // index into Trace::tracks (host thread, or device core)
  int32_t device = -1;
  int32_t stream = -1;
  std::string shapes;  // op with record_shapes: "[(4, 4096) f32, (4096) f32]"
  std::string source;  // op with with_stack: "examples/rmsnorm.cpp:42 (naive_rms_norm)";
                       // GPU kernel: the device function CUPTI recorded ("rms_norm_warp<float>(...)")
};

struct Track {
  enum class Kind : uint8_t { host_thread, device_core } kind = Kind::host_thread;
  std::string name;     // "main thread", "thread 2", "cpu:0 core 1"
  int64_t os_tid = 0;   // host threads
  int32_t device = -1;  // device cores
  int32_t core = -1;    // a GPU's track: its CUDA stream id ("cuda:0 stream 7")
  // A profile of several ranks (torch.profiler traces imported together): the rank whose
  // process this thread or device belongs to, its own process in trace.json. -1: one process.
  int32_t rank = -1;
};

struct DeviceInfo {
  int32_t index = 0;
  std::string name;         // "cpu:0"
  std::string description;  // Device::description()
  int32_t num_cores = 0;
};

// The instructions layer (sampler.h, samples.h): each sampled instruction's place in
// the code, resolved at collection while the modules were loaded.
struct CodeModule {
  std::string path;      // the ELF file the code came from; "[kernel]" for the OS's code
  std::string build_id;  // hex (empty when the file has none): tells a rebuilt file apart
};
struct CodeSite {        // one sampled instruction address
  int32_t module = -1;   // index into Trace::code_modules
  uint64_t address = 0;  // the module's own address (instruction pointer - load bias)
  std::string function;  // demangled symbol; "" when the module has none there
  std::string file;      // source file from the line table; "" without one
  int32_t line = 0;
};
struct Sample {
  int64_t t = 0;        // ns since base_time_ns
  int32_t track = 0;    // the device core's track
  int32_t site = 0;     // index into Trace::code_sites
  uint64_t launch = 0;  // launch id of the kernel event the sample fell in
};

struct Trace {
  int schema_version = kSchemaVersion;
  int64_t base_time_ns = 0;   // CLOCK_MONOTONIC ns of t = 0
  int64_t wall_time_ns = 0;   // Unix-epoch ns at t = 0, for humans
  std::string config_json;    // the ProfilerConfig that made it
  std::vector<DeviceInfo> devices;
  std::vector<Track> tracks;
  std::vector<TraceEvent> events;  // sorted by (t0, kind)
  // Events lost because a bounded buffer was full, per track (same index), and in all.
  std::vector<int64_t> dropped_per_track;
  int64_t dropped = 0;
  // GPU tracing (CUPTI), a JSON object: how device times were aligned to the host clock
  // and the error bound, records CUPTI dropped, buffers used. Empty when none.
  std::string device_tracing_json;
  // Instruction samples (the instructions layer), sorted by t, with the code they point
  // at. sampling_json (a JSON object) says how they were taken: event, rate, counts kept,
  // outside kernels, lost and dropped, and a warning when the OS refused; empty when the
  // layer was not asked for.
  std::vector<CodeModule> code_modules;
  std::vector<CodeSite> code_sites;
  std::vector<Sample> samples;
  std::string sampling_json;
};

}  // namespace opscope::prof
