// The capture side's packed event record: what a hook writes into its thread's buffer.
// One cache line, trivially copyable, no pointers that need freeing; turned into
// TraceEvents (trace.h) at collection.
#pragma once
#include <cstdint>
#include <type_traits>

#include "opscope/profiler/trace.h"

namespace opscope::prof::detail {

// Record::kind = EventKind in the low bits, plus these flags.
constexpr uint8_t kKindMask = 0x0f;
constexpr uint8_t kNamePtr = 0x10;  // `name` is a static const char* (op names), else a NameTable index
constexpr uint8_t kTicks = 0x20;    // t0/t1 are TSC ticks (mapped to ns at collection), else ns
constexpr uint8_t kEngineLane = 0x40;  // kernel run by its stream's own engine: lane = stream, aux = detail
// A device track's key is (device << 16) | core; an engine's stream track sets this bit
// beside the stream's id (streams and cores number from 0 each).
constexpr int32_t kEngineTrack = 0x8000;

struct Record {
  int64_t t0;
  int64_t t1;
  uint64_t id;      // op/range: correlation id; launch/kernel: launch id; alloc/free: address
  uint64_t parent;  // op/range: enclosing op/range; launch/kernel: launching op
  uint64_t name;    // const char* (kNamePtr) or NameTable index
  int64_t bytes;    // launch/kernel/alloc/free: bytes; op: return address (with_stack)
  int64_t value;    // op/range: sequence nr; alloc/free: bytes allocated after; launch/kernel: flops
  uint32_t aux;     // op: interned input-shapes string (0 = none); launch: Launch::Kind; sync: SyncKind;
                    // engine kernel: interned detail
  int8_t device;
  uint8_t kind;     // EventKind | flags
  int16_t lane;     // launch/sync: stream; kernel: core (engine kernel: stream)
};
static_assert(sizeof(Record) == 64, "a record is one cache line");
static_assert(std::is_trivially_copyable_v<Record>);
static_assert(std::is_standard_layout_v<Record>);

}  // namespace opscope::prof::detail
