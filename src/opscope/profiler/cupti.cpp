// CUPTI activity tracing. With OPSCOPE_HAVE_CUPTI (the CUDA toolkit was found) this
// drives CUPTI's activity API; without it every entry is a no-op and no window begins.
//
// CUPTI asks for empty buffers and hands them back full, on threads of its own; we keep
// at most cupti_max_buffers in flight (a refused request makes CUPTI drop records, which
// cuptiActivityGetNumDroppedRecords counts) and copy each full buffer's records into
// plain structs (cupti_convert.h) at once, so the buffer can be reused.
#include "opscope/profiler/cupti.h"

#include <cstdio>
#include <mutex>
#include <string>

#include "opscope/profiler/cupti_session.h"
#include "opscope/runtime/device.h"

#if OPSCOPE_HAVE_CUPTI
#include <cupti.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include "opscope/core/clock.h"
#endif

namespace opscope::prof {

namespace detail {
std::atomic<bool> g_cupti_active{false};
}  // namespace detail

#if OPSCOPE_HAVE_CUPTI

namespace {

bool any_cuda_device() {
  for (int i = 0; i < Device::kMaxDevices; ++i)
    if (Device* d = Device::by_index(i); d && d->type() == DeviceType::cuda) return true;
  return false;
}

constexpr auto kExternalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                         CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME,
                                         CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};

struct FreeBuffer {
  void operator()(uint8_t* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<uint8_t, FreeBuffer>;

// Shared with CUPTI's threads (buffer callbacks) under `m`.
struct State {
  std::mutex m;
  bool window = false;  // between cupti_begin and cupti_end
  size_t buffer_bytes = 0;
  int64_t max_buffers = 0;
  int64_t in_flight = 0;
  std::vector<Buffer> spare;  // returned buffers of buffer_bytes, for reuse
  DeviceActivity activity;
  std::vector<ClockSample> start_samples;
  // A window opened before any CUDA device existed: collection starts when the first
  // one is made (cupti_on_device_created), with this buffer config.
  bool pending = false;
  int64_t pending_buffer_kb = 0, pending_max_buffers = 0;
  // Set by cupti_flush_at_exit: collection already ended, with these stop samples.
  bool exit_flushed = false;
  std::vector<ClockSample> stop_samples;
  size_t exit_dropped = 0;
};
State& state() {
  static State* s = new State;  // leaked: CUPTI may call back during exit
  return *s;
}

std::string error_string(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s ? s : "CUPTI error " + std::to_string(int(r));
}

CopyKind copy_kind(uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return CopyKind::h2d;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return CopyKind::d2h;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return CopyKind::d2d;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return CopyKind::h2h;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return CopyKind::peer;
    default: return CopyKind::other;
  }
}

// Copies one CUPTI record into the window's activity (caller holds the lock).
void take(DeviceActivity& a, const CUpti_Activity* rec) {
  switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
      a.kernels.push_back({k->correlationId, k->deviceId, k->streamId, int64_t(k->start), int64_t(k->end),
                           k->name ? k->name : "kernel"});
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      auto* c = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
      a.copies.push_back({c->correlationId, c->deviceId, c->streamId, int64_t(c->start), int64_t(c->end),
                          int64_t(c->bytes), copy_kind(c->copyKind)});
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      auto* s = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
      a.copies.push_back({s->correlationId, s->deviceId, s->streamId, int64_t(s->start), int64_t(s->end),
                          int64_t(s->bytes), CopyKind::memset});
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME: {
      auto* r = reinterpret_cast<const CUpti_ActivityAPI*>(rec);
      const char* name = nullptr;
      cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, r->cbid, &name);
      a.api_calls.push_back({r->correlationId, int64_t(r->threadId), int64_t(r->start), int64_t(r->end),
                             name ? name : "cuda runtime call"});
      break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      auto* x = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(rec);
      if (x->externalKind == kExternalKind) a.external.push_back({x->correlationId, x->externalId});
      break;
    }
    default: break;
  }
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  State& s = state();
  std::lock_guard<std::mutex> g(s.m);
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;
  if (s.in_flight >= s.max_buffers) {
    ++s.activity.buffers_refused;
    return;
  }
  Buffer b;
  if (!s.spare.empty()) {
    b = std::move(s.spare.back());
    s.spare.pop_back();
  } else {
    b.reset(static_cast<uint8_t*>(std::aligned_alloc(8, s.buffer_bytes)));  // CUPTI wants 8-byte alignment
    if (!b) {
      ++s.activity.buffers_refused;
      return;
    }
    ++s.activity.buffers_used;
  }
  ++s.in_flight;
  *size = s.buffer_bytes;
  *buffer = b.release();
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t size, size_t valid) {
  State& s = state();
  std::lock_guard<std::mutex> g(s.m);
  Buffer b(buffer);
  --s.in_flight;
  CUpti_Activity* rec = nullptr;
  // Records delivered outside a window (late, from a window that ended) would land in
  // the next one: they are dropped.
  while (s.window && valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS)
    take(s.activity, rec);
  if (size == s.buffer_bytes) s.spare.push_back(std::move(b));  // else: a window of another size, freed
}

std::vector<ClockSample> clock_samples() {
  std::vector<ClockSample> out;
  for (int i = 0; i < 8; ++i) {
    ClockSample c;
    uint64_t t = 0;
    c.host_before = now_ns();
    CUptiResult r = cuptiGetTimestamp(&t);
    c.host_after = now_ns();
    c.cupti = int64_t(t);
    if (r == CUPTI_SUCCESS) out.push_back(c);
  }
  return out;
}

void warn_once(const std::string& what) {
  static std::once_flag once;
  std::call_once(once, [&] { std::fprintf(stderr, "opscope: no GPU trace: %s\n", what.c_str()); });
}

}  // namespace

bool cupti_available() { return true; }

namespace detail {

void cupti_push_slow(uint64_t launch_id) {
  if (cuptiActivityPushExternalCorrelationId(kExternalKind, launch_id) == CUPTI_SUCCESS) ++t_cupti_pushed;
}

void cupti_pop_slow() {
  uint64_t last = 0;
  cuptiActivityPopExternalCorrelationId(kExternalKind, &last);
  --t_cupti_pushed;
}

// Starts CUPTI's collection for the open window (a CUDA device exists).
void start_collection(int64_t buffer_kb, int64_t max_buffers) {
  static std::once_flag registered;
  static CUptiResult reg = CUPTI_SUCCESS;
  std::call_once(registered, [] {
    reg = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    // OS thread ids, so runtime calls land on the host threads' tracks.
    if (reg == CUPTI_SUCCESS) cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
  });
  if (reg != CUPTI_SUCCESS) return warn_once("cuptiActivityRegisterCallbacks: " + error_string(reg));
  State& s = state();
  {
    std::lock_guard<std::mutex> g(s.m);
    size_t bytes = size_t(buffer_kb) * 1024;
    if (bytes != s.buffer_bytes) s.spare.clear();
    s.buffer_bytes = bytes;
    s.max_buffers = max_buffers;
    s.activity = DeviceActivity{};
    s.activity.buffer_kb = buffer_kb;
    s.exit_flushed = false;
    s.window = true;
  }
  size_t stale = 0;
  cuptiActivityGetNumDroppedRecords(nullptr, 0, &stale);  // reset the count to this window
  for (CUpti_ActivityKind k : kKinds)
    if (CUptiResult r = cuptiActivityEnable(k); r != CUPTI_SUCCESS) {
      for (CUpti_ActivityKind d : kKinds) cuptiActivityDisable(d);
      std::lock_guard<std::mutex> g(s.m);
      s.window = false;
      return warn_once("cuptiActivityEnable: " + error_string(r));
    }
  // The CUDA device's scheduler polls its events and checks every kernel launch: records
  // of those calls would crowd the buffers (CUPTI drops what does not fit, kernels too)
  // and the host tracks, and say nothing about the program.
  cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020, 0);
  cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020, 0);
  std::vector<ClockSample> samples = clock_samples();
  std::lock_guard<std::mutex> g(s.m);
  s.start_samples = std::move(samples);
  g_cupti_active.store(true, std::memory_order_relaxed);
}

void cupti_begin(const ProfilerConfig& config) {
  if (!(config.layers & kDevice)) return;
  if (!any_cuda_device()) {
    // Starting CUPTI now would load the driver in programs that never use a GPU (and
    // an OPSCOPE_PROFILE window opens before main): the first CUDA device starts it.
    State& s = state();
    std::lock_guard<std::mutex> g(s.m);
    s.pending = true;
    s.pending_buffer_kb = config.cupti_buffer_kb;
    s.pending_max_buffers = config.cupti_max_buffers;
    return;
  }
  start_collection(config.cupti_buffer_kb, config.cupti_max_buffers);
}

// Disables the window's kinds and flushes CUPTI's buffers into s.activity (the window
// stays open for the flush); returns the stop clock samples and the dropped count.
std::vector<ClockSample> end_collection(size_t& dropped) {
  g_cupti_active.store(false, std::memory_order_relaxed);
  std::vector<ClockSample> stop = clock_samples();
  for (CUpti_ActivityKind k : kKinds) cuptiActivityDisable(k);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // calls buffer_completed for each
  dropped = 0;
  cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
  return stop;
}

std::optional<DeviceActivity> cupti_end() {
  State& s = state();
  bool flushed;
  {
    std::lock_guard<std::mutex> g(s.m);
    s.pending = false;  // no CUDA device was made during the window
    if (!s.window) return std::nullopt;
    flushed = s.exit_flushed;
  }
  size_t dropped = 0;
  std::vector<ClockSample> stop = flushed ? std::vector<ClockSample>{} : end_collection(dropped);
  std::lock_guard<std::mutex> g(s.m);
  if (flushed) {
    stop = std::move(s.stop_samples);
    dropped = s.exit_dropped;
    s.exit_flushed = false;
  }
  s.window = false;
  DeviceActivity a = std::move(s.activity);
  s.activity = DeviceActivity{};
  a.dropped_records += int64_t(dropped);
  try {
    a.clock = fit_clock(s.start_samples, stop);
  } catch (const std::exception& e) {
    warn_once(e.what());
    return std::nullopt;
  }
  return a;
}

}  // namespace detail

void cupti_on_device_created() {
  State& s = state();
  int64_t kb, max_buffers;
  {
    std::lock_guard<std::mutex> g(s.m);
    if (!s.pending) return;
    s.pending = false;
    kb = s.pending_buffer_kb;
    max_buffers = s.pending_max_buffers;
  }
  detail::start_collection(kb, max_buffers);
}

void cupti_flush_at_exit() {
  State& s = state();
  {
    std::lock_guard<std::mutex> g(s.m);
    if (!s.window || s.exit_flushed) return;
  }
  size_t dropped = 0;
  std::vector<ClockSample> stop = detail::end_collection(dropped);
  std::lock_guard<std::mutex> g(s.m);
  s.stop_samples = std::move(stop);
  s.exit_dropped = dropped;
  s.exit_flushed = true;
}

#else  // no CUPTI in this build

bool cupti_available() { return false; }
void cupti_on_device_created() {}
void cupti_flush_at_exit() {}

namespace detail {
void cupti_push_slow(uint64_t) {}
void cupti_pop_slow() { t_cupti_pushed = 0; }
void cupti_begin(const ProfilerConfig&) {}
std::optional<DeviceActivity> cupti_end() { return std::nullopt; }
}  // namespace detail

#endif

}  // namespace opscope::prof
