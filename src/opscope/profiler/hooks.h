// Instrumentation points of the three layers. The runtime calls these; the profiler
// implements them. When nothing records, each point costs one relaxed load and a branch.
#pragma once
#include <atomic>
#include <cstdint>
#include <span>
#include <string_view>

namespace opscope {
class Tensor;
struct Launch;
}  // namespace opscope

namespace opscope::prof {

// kInstructions: timer-based samples of the device cores' instruction pointers inside
// kernels (sampler.h); it needs kDevice, whose kernel events give each sample its launch.
enum Layer : uint32_t { kFramework = 1, kRuntime = 2, kDevice = 4, kInstructions = 8 };

// Bitmask of layers being recorded now (0 when no profile is active).
extern std::atomic<uint32_t> g_layers;
inline uint32_t layers() { return g_layers.load(std::memory_order_relaxed); }

// ---- framework layer ----
// Correlation id of the innermost framework op on this thread (0 outside any op).
uint64_t current_op_id();
// Begins a framework op; returns its correlation id. `ret` is the return address of
// the op's public function, resolved to the caller's source location when with_stack.
uint64_t op_begin(const char* name, std::span<const Tensor* const> inputs, void* ret);
void op_end(uint64_t id);
// The same for the op of a framework above opscope (the torch front's aten ops): `name`
// must live as long as the process (an operator's schema name does), `shapes` is the
// inputs already described ("" = none), `source` its call site already resolved
// ("model.py:12 (forward)"; "" = none, used with with_stack); `seq` is that framework's
// sequence number (autograd's), or -1 for none (kept: opscope's own count would collide
// with autograd's numbers; trace.json then has no sequence_nr, as torch's has none).
uint64_t op_begin_described(const char* name, std::string_view shapes, int64_t seq, std::string_view source = {});

// True while a framework above opscope records its own ops (the torch front's
// RecordFunction callbacks): the bridge's op scopes then name kernels and errors but
// record no second op, so each aten op is one framework op with its launches under it.
extern std::atomic<bool> g_external_ops;
inline bool external_ops() { return g_external_ops.load(std::memory_order_relaxed); }

// ---- runtime layer ----
void on_alloc(int device, const void* ptr, int64_t bytes, int64_t allocated_now);
void on_free(int device, const void* ptr, int64_t bytes, int64_t allocated_now);
// A launch was queued on a stream; t0 is when the runtime step began (after the op's
// framework step), so [t0, now] is the runtime's own time for it.
void on_launch(const Launch& l, int device, int stream, int64_t t0);
enum class SyncKind : uint8_t { stream, device, event, tensor_read };
void on_sync(SyncKind kind, int device, int stream, int64_t t0, int64_t t1);

// ---- device layer ----
// One core executed [begin, end) of launch `l`'s work, from t0 to t1.
void on_kernel(const Launch& l, int device, int core, int64_t t0, int64_t t1, int64_t bytes);
// A stream's own engine (stream.h: a process group's communication engine) ran launch
// `l` from t0 to t1: one device event on the track "<device> stream <stream>", with
// `detail` as its description ("collective all_reduce, in 1024 elements, ...").
void on_engine_kernel(const Launch& l, int device, int stream, int64_t t0, int64_t t1, std::string_view detail);

// ---- instructions layer ----
// A device core's worker thread begins (or ends) its life: the sampler samples the
// threads of running cores. Called on that thread; cheap, and a no-op for the kernels.
void on_core_thread_start(int device, int core);
void on_core_thread_exit();

}  // namespace opscope::prof
