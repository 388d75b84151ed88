// The recorder behind the instrumentation points of hooks.h. Each hook writes one
// packed Record into its thread's ring (buffer.h). A framework op scope writes a single
// record at op_end: op_begin only pushes {id, t0, name} on the thread's scope stack,
// which is also what current_op_id() reads when the runtime stamps a launch.
#include <fmt/format.h>

#include "opscope/profiler/buffer.h"
#include "opscope/profiler/hooks.h"
#include "opscope/profiler/record_function.h"
#include "opscope/runtime/launch.h"
#include "opscope/runtime/tensor.h"

namespace opscope::prof {

std::atomic<uint32_t> g_layers{0};
std::atomic<bool> g_external_ops{false};

using namespace detail;

namespace {

// Returned on a thread that is exiting (no state left); op_end ignores it there.
constexpr uint64_t kNoScope = UINT64_MAX;

inline void emit(ThreadState* st, const Record& rec) {
  if (Record* r = st->ring->reserve()) {
    *r = rec;
    st->ring->commit();
  }
}

inline uint64_t innermost(const ThreadState* st) {
  int d = st->depth < kMaxDepth ? st->depth : kMaxDepth;
  return d > 0 ? st->stack[d - 1].id : 0;
}

// "[(4, 4096) f32, (4096) f32]"
std::string shapes_str(std::span<const Tensor* const> inputs) {
  std::string s = "[";
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i) s += ", ";
    const Tensor* t = inputs[i];
    if (!t || !t->defined()) s += "undefined";
    else fmt::format_to(std::back_inserter(s), "{} {}", t->shape().str(), dtype_name(t->dtype()));
  }
  return s + "]";
}

// Hooks run in destructors (~OpScope) and on device cores: they never throw. A string
// that cannot be interned (out of memory) is recorded as "".
uint32_t intern(ThreadState* st, std::string_view s) noexcept {
  try {
    return st->names.intern(s);
  } catch (...) {
    return 0;
  }
}

// Off the hot path: only with record_shapes.
[[gnu::noinline]] uint32_t intern_shapes(ThreadState* st, std::span<const Tensor* const> inputs) noexcept {
  try {
    return st->names.intern(shapes_str(inputs));
  } catch (...) {
    return 0;
  }
}

// An op of opscope's own gets the thread's next number; a framework's op keeps its own
// (-1: none, as autograd says of an op it records no node for).
constexpr int64_t kOwnSeq = INT64_MIN;

inline uint64_t push_scope(ThreadState* st, uint64_t name, uint8_t kind, void* ret, uint32_t shapes,
                           int64_t seq = kOwnSeq) {
  uint64_t id = next_id(st);
  int d = st->depth++;
  if (d >= kMaxDepth) [[unlikely]] return id;
  OpenScope& o = st->stack[d];
  o.id = id;
  o.name = name;
  o.seq = seq == kOwnSeq ? ++st->seq : uint64_t(seq < 0 ? -1 : seq);
  o.ret = ret;
  o.shapes = shapes;
  o.kind = kind;
  o.t0 = host_ticks(st->tsc);  // last: the scope's own bookkeeping is not its time
  return id;
}

const char* sync_name(SyncKind k) {
  switch (k) {
    case SyncKind::stream: return "stream";
    case SyncKind::device: return "device";
    case SyncKind::event: return "event";
    case SyncKind::tensor_read: return "tensor_read";
  }
  return "sync";
}

}  // namespace

// ---- framework layer ----

uint64_t current_op_id() {
  ThreadState* st = t_state;
  return st && !st->dead ? innermost(st) : 0;
}

uint64_t op_begin(const char* name, std::span<const Tensor* const> inputs, void* ret) {
  ThreadState* st = t_state;
  if (!st || st->dead) [[unlikely]] {
    st = thread_state();
    if (!st) return kNoScope;
  }
  uint32_t shapes = 0;
  if (g_settings.record_shapes.load(std::memory_order_relaxed)) [[unlikely]]
    shapes = intern_shapes(st, inputs);
  return push_scope(st, uint64_t(uintptr_t(name)), uint8_t(EventKind::op) | kNamePtr, ret, shapes);
}

uint64_t op_begin_described(const char* name, std::string_view shapes, int64_t seq, std::string_view source) {
  ThreadState* st = t_state;
  if (!st || st->dead) [[unlikely]] {
    st = thread_state();
    if (!st) return kNoScope;
  }
  uint32_t sh = shapes.empty() ? 0 : intern(st, shapes);
  // A call site given as text travels where a return address would, as a negative number:
  // the interned index i as -(i + 1) (addresses are positive); collection tells them apart.
  void* where = source.empty() ? nullptr : reinterpret_cast<void*>(intptr_t(-int64_t(intern(st, source)) - 1));
  return push_scope(st, uint64_t(uintptr_t(name)), uint8_t(EventKind::op) | kNamePtr, where, sh, seq);
}

// Ends the innermost op or range of this thread (scopes are strictly nested).
void op_end(uint64_t) {
  ThreadState* st = t_state;
  int64_t t1 = host_ticks(st->tsc);
  if (st->dead) [[unlikely]] return;
  int d = --st->depth;
  if (unsigned(d) >= unsigned(kMaxDepth)) [[unlikely]] {
    if (d < 0) st->depth = 0;
    return;
  }
  if (!(g_layers.load(std::memory_order_relaxed) & kFramework)) return;  // stopped meanwhile
  if (st->gen != g_settings.gen.load(std::memory_order_relaxed) && !adopt_ring(st)) [[unlikely]] return;
  Record* r = st->ring->reserve();
  if (!r) [[unlikely]] return;
  const OpenScope& o = st->stack[d];
  *r = Record{o.t0,
              t1,
              o.id,
              d > 0 ? st->stack[d - 1].id : 0,
              o.name,
              int64_t(uintptr_t(o.ret)),
              int64_t(o.seq),
              o.shapes,
              -1,
              uint8_t(o.kind | (st->tsc ? kTicks : 0)),
              0};
  st->ring->commit();
}

uint64_t range_begin(std::string_view name) {
  ThreadState* st = t_state;
  if (!st || st->dead) [[unlikely]] {
    st = thread_state();
    if (!st) return kNoScope;
  }
  uint32_t idx = intern(st, name);
  return push_scope(st, idx, uint8_t(EventKind::range), __builtin_return_address(0), 0);
}

void range_end(uint64_t id) { op_end(id); }

// ---- runtime layer ----

void on_alloc(int device, const void* ptr, int64_t bytes, int64_t allocated_now) {
  if (!(layers() & kRuntime)) return;
  ThreadState* st = recording_state();
  if (!st) return;
  int64_t t = host_ticks(st->tsc);
  emit(st, Record{t, t, uint64_t(uintptr_t(ptr)), innermost(st), 0, bytes, allocated_now, 0, int8_t(device),
                  uint8_t(uint8_t(EventKind::alloc) | (st->tsc ? kTicks : 0)), 0});
}

void on_free(int device, const void* ptr, int64_t bytes, int64_t allocated_now) {
  if (!(layers() & kRuntime)) return;
  ThreadState* st = recording_state();
  if (!st) return;
  int64_t t = host_ticks(st->tsc);
  emit(st, Record{t, t, uint64_t(uintptr_t(ptr)), innermost(st), 0, bytes, allocated_now, 0, int8_t(device),
                  uint8_t(uint8_t(EventKind::free) | (st->tsc ? kTicks : 0)), 0});
}

void on_launch(const Launch& l, int device, int stream, int64_t t0) {
  if (!(layers() & kRuntime)) return;
  ThreadState* st = recording_state();
  if (!st) return;
  int64_t t1 = now_ns();
  emit(st, Record{t0, t1, l.id, l.op_id, intern(st, l.name), l.bytes, l.flops, uint32_t(l.kind),
                  int8_t(device), uint8_t(EventKind::launch), int16_t(stream)});
}

void on_sync(SyncKind kind, int device, int stream, int64_t t0, int64_t t1) {
  if (!(layers() & kRuntime)) return;
  ThreadState* st = recording_state();
  if (!st) return;
  emit(st, Record{t0, t1, 0, innermost(st), uint64_t(uintptr_t(sync_name(kind))), 0, 0, uint32_t(kind),
                  int8_t(device), uint8_t(uint8_t(EventKind::sync) | kNamePtr), int16_t(stream)});
}

// ---- device layer ----

void on_kernel(const Launch& l, int device, int core, int64_t t0, int64_t t1, int64_t bytes) {
  if (!(layers() & kDevice) || !g_settings.core_traced(core)) return;
  ThreadState* st = recording_state();
  if (!st) return;
  int32_t track = (device << 16) | core;
  if (st->ring->core_track.load(std::memory_order_relaxed) != track)
    st->ring->core_track.store(track, std::memory_order_relaxed);
  // The slice's share of the launch's flops, in proportion to its bytes.
  int64_t flops = l.bytes > 0 ? int64_t(double(l.flops) * double(bytes) / double(l.bytes)) : 0;
  emit(st, Record{t0, t1, l.id, l.op_id, intern(st, l.name), bytes, flops, uint32_t(l.kind), int8_t(device),
                  uint8_t(EventKind::kernel), int16_t(core)});
}

void on_engine_kernel(const Launch& l, int device, int stream, int64_t t0, int64_t t1, std::string_view detail) {
  if (!(layers() & kDevice)) return;
  ThreadState* st = recording_state();
  if (!st) return;
  int32_t track = (device << 16) | kEngineTrack | stream;
  if (st->ring->core_track.load(std::memory_order_relaxed) != track)
    st->ring->core_track.store(track, std::memory_order_relaxed);
  emit(st, Record{t0, t1, l.id, l.op_id, intern(st, l.name), l.bytes, l.flops, detail.empty() ? 0 : intern(st, detail),
                  int8_t(device), uint8_t(uint8_t(EventKind::kernel) | kEngineLane), int16_t(stream)});
}

}  // namespace opscope::prof
