// The streaming reader of one torch.profiler trace: the file streams through a window
// (json_splitter.h) whose events simdjson's On-Demand parser reads in batches, each kept
// as a compact RawEvent (strings interned once: a million events carry a few thousand
// distinct names). No links are made here
// (links.h); times stay in the file's own clock (convert.h moves them onto the profile's).
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "opscope/importer/schema.h"

namespace opscope::importer {

// Interned strings: id 0 is "".
class StringTable {
 public:
  StringTable() { intern(""); }
  uint32_t intern(std::string_view s);
  const std::string& operator[](uint32_t id) const { return *strings_[id]; }
  size_t size() const { return strings_.size(); }

 private:
  std::deque<std::string> storage_;
  std::vector<const std::string*> strings_;
  std::unordered_map<std::string_view, uint32_t> ids_;
};

// Skipped events and other oddities: counted, with the first event's index.
class Warnings {
 public:
  void add(const std::string& what, int64_t index);
  // "3 events with no ts skipped (first: event 17)", in the order first seen.
  std::vector<std::string> lines() const;
  int64_t count(const std::string& what) const;
  bool empty() const { return order_.empty(); }

 private:
  struct Entry {
    int64_t count = 0, first = -1;
  };
  std::vector<std::string> order_;
  std::map<std::string, Entry> entries_;
};

constexpr int64_t kNone = INT64_MIN;

// Kept small: a million of them live until the Trace is built.
struct RawEvent {
  int64_t ts = 0;   // ns, in the file's clock (µs × 1000; relative to baseTimeNanoseconds if it has one)
  int64_t dur = 0;  // ns
  uint32_t index = 0;  // position in traceEvents
  uint32_t name = 0, cat = 0, pid = 0, tid = 0;  // StringTable ids (pid/tid as text: "7", "stream 7")
  uint32_t detail = 0;  // op: input shapes "[(4, 8) float]"; kernel: launch configuration; collective
  Category category = Category::none;
  char ph = 'X';
  // memcpy/memset "memory bandwidth (GB/s)" as torch computed it from the exact duration
  // (older traces round dur to whole µs, so bytes / dur can be far off); < 0: none.
  float bandwidth_gbps = -1;  // in the padding before `correlation`: no bigger
  int64_t correlation = kNone, external_id = kNone, external_id_lower = kNone, flow_id = kNone;
  int64_t device = kNone, stream = kNone;  // args "device" / "stream" (GPU events)
  int64_t bytes = kNone;                   // memcpy/memset "bytes"; [memory] "Bytes"
  int64_t addr = 0, total_allocated = kNone;
  int32_t device_type = -1, device_id = -1;  // [memory]
};

static_assert(sizeof(RawEvent) == 128, "RawEvent grew: a million live during an import");

struct GpuProperties {
  int64_t id = 0;
  std::string name;
  int64_t total_memory = 0;
  int64_t compute_major = 0, compute_minor = 0, num_sms = 0;
};

struct RawTrace {
  std::string file;
  bool legacy_array = false;  // a bare array (torch built without Kineto)
  bool old_names = false;     // 2021 category names seen
  bool has_base_time = false;
  int64_t base_time_ns = 0;   // baseTimeNanoseconds
  std::string schema_version;
  std::string trace_name;
  std::vector<GpuProperties> gpus;
  int64_t rank = -1, world_size = 0;
  std::string backend;
  std::vector<RawEvent> events;
  StringTable strings;
  std::map<std::pair<uint32_t, uint32_t>, std::string> thread_names;  // (pid, tid) → "thread_name"
  Warnings warnings;
  int64_t metadata_events = 0;
};

// Reads one trace file (.json or .json.gz). Errors ("[import] <file>: ..."): the file
// cannot be read, is not JSON, is JSON but no trace (no traceEvents), or an event cannot
// be parsed ("event 12: ..."). Events that can be skipped (no ts, dur < 0, an unknown
// phase) are counted in `warnings`.
// `window`: the bytes read at a time (json_splitter.h).
RawTrace read_kineto(const std::string& path, size_t window = size_t(32) << 20);

// The same from any byte stream (tests read from memory).
class ByteSource;
RawTrace read_kineto_from(ByteSource& in, size_t window = size_t(32) << 20);

}  // namespace opscope::importer
