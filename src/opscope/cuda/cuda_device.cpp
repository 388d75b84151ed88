#include "opscope/cuda/cuda_device.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "opscope/core/clock.h"
#include "opscope/core/error.h"
#include "opscope/core/futex.h"
#include "opscope/cuda/check.h"
#include "opscope/cuda/cublas_lib.h"
#include "opscope/runtime/op_scope.h"
#if __has_include("opscope/profiler/cupti.h")
#include "opscope/profiler/cupti.h"
#define OPSCOPE_CUPTI_PUSH(id) ::opscope::prof::cupti_push_launch(id)
#define OPSCOPE_CUPTI_POP() ::opscope::prof::cupti_pop_launch()
#define OPSCOPE_CUPTI_FLUSH_AT_EXIT() ::opscope::prof::cupti_flush_at_exit()
#define OPSCOPE_CUPTI_DEVICE_CREATED() ::opscope::prof::cupti_on_device_created()
#else
#define OPSCOPE_CUPTI_PUSH(id) ((void)(id))
#define OPSCOPE_CUPTI_POP() ((void)0)
#define OPSCOPE_CUPTI_FLUSH_AT_EXIT() ((void)0)
#define OPSCOPE_CUPTI_DEVICE_CREATED() ((void)0)
#endif

namespace opscope::cuda_impl {

// ---- errors ----
namespace {
thread_local const char* t_op = nullptr;
thread_local int t_ordinal = 0;
// The launch being enqueued by this (scheduler) thread.
thread_local CudaDevice* t_device = nullptr;
thread_local cudaStream_t t_stream = nullptr;
thread_local void* t_lane = nullptr;
thread_local int* t_slot = nullptr;
}  // namespace

const char* current_op() {
  if (t_op && *t_op) return t_op;
  const char* op = OpScope::current();
  return *op ? op : "cuda";
}
int current_ordinal() { return t_ordinal; }
void set_current(const char* op, int ordinal) {
  t_op = op;
  t_ordinal = ordinal;
}

void throw_cuda_error(cudaError_t e, const char* call) {
  cudaGetLastError();  // reported here: a later launch's check must not report it again
  fail(current_op(), "cuda:{}: {} failed: {} ({})", current_ordinal(), call, cudaGetErrorString(e),
       cudaGetErrorName(e));
}
void throw_cublas_error(cublasStatus_t s, const char* call) {
  fail(current_op(), "cuda:{}: {} failed: {}", current_ordinal(), call, cublas().status_string(s));
}

// ---- availability ----
namespace {

struct Probe {
  int count = 0;
  std::string reason;  // empty: usable
};

std::string version_str(int v) { return fmt::format("{}.{}", v / 1000, v % 1000 / 10); }

Probe probe() {
  Probe p;
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  cudaError_t e = cudaGetDeviceCount(&p.count);
  if (e == cudaSuccess && p.count > 0) return p;
  p.count = 0;
  if (driver == 0)
    p.reason = fmt::format("no CUDA driver is installed (cudaGetDeviceCount: {}): no CUDA GPU", cudaGetErrorString(e));
  else if (e == cudaErrorInsufficientDriver || driver < runtime)
    p.reason = fmt::format("the CUDA driver ({}) is older than the toolkit this build uses ({}): update the driver",
                           version_str(driver), version_str(runtime));
  else if (e == cudaSuccess || e == cudaErrorNoDevice)
    p.reason = "no CUDA GPU (cudaGetDeviceCount found none)";
  else
    p.reason = fmt::format("cudaGetDeviceCount failed: {} ({})", cudaGetErrorString(e), cudaGetErrorName(e));
  cudaGetLastError();  // not sticky: clear it
  return p;
}

const Probe& probed() {
  static const Probe p = probe();
  return p;
}

std::mutex g_m;
std::array<CudaDevice*, Device::kMaxDevices> g_devs{};

// The devices live until exit, their scheduler threads too. The CUDA runtime tears
// itself down at exit from a handler registered before this one (when it loaded or
// initialized, both before the first device was made), so this one runs first: it lets
// the queued work finish, flushes CUPTI's records (an OPSCOPE_PROFILE session collects
// them from its own, later handler) and stops the schedulers, so no thread polls a
// runtime that is going away.
void shutdown_devices() {
  std::array<CudaDevice*, Device::kMaxDevices> devs;
  {
    std::lock_guard<std::mutex> g(g_m);
    devs = g_devs;
  }
  for (CudaDevice* d : devs)
    if (d) d->drain();
  OPSCOPE_CUPTI_FLUSH_AT_EXIT();
  for (CudaDevice* d : devs)
    if (d) d->shutdown();
}

}  // namespace

bool available() { return probed().reason.empty(); }
std::string unavailable_reason() { return probed().reason; }
int device_count() { return probed().count; }

Device& get_device(int ordinal) {
  const Probe& p = probed();
  if (!p.reason.empty()) fail("cuda", "cuda:{}: {}", ordinal, p.reason);
  if (ordinal < 0 || ordinal >= p.count)
    fail("cuda", "cuda:{} does not exist: the driver reports {} GPU(s)", ordinal, p.count);
  CudaDevice* d;
  bool made = false;
  {
    std::lock_guard<std::mutex> g(g_m);
    if (!g_devs[ordinal]) {
      g_devs[ordinal] = new CudaDevice(ordinal);  // lives until exit, like cpu()
      static const bool at_exit = std::atexit(shutdown_devices) == 0;  // after the runtime's (see above)
      (void)at_exit;
      made = true;
    }
    d = g_devs[ordinal];
  }
  if (made) OPSCOPE_CUPTI_DEVICE_CREATED();  // a profile window open since before: trace the GPU from now
  return *d;
}

CudaDevice& as_cuda(Device& dev) {
  if (dev.type() != DeviceType::cuda) fail(current_op(), "{} is not a CUDA device", dev.name());
  return static_cast<CudaDevice&>(dev);
}

// ---- the device ----
namespace {
constexpr int kSlots = 4096;
constexpr size_t kBlasWorkspace = 32u << 20;  // cuBLAS's recommendation for Hopper
constexpr int64_t kSpinNs = 50'000;
}  // namespace

CudaDevice::CudaDevice(int ordinal)
    : Device(DeviceType::cuda, ordinal, &backend_), ordinal_(ordinal) {
  backend_.alloc = &CudaDevice::backend_alloc;
  backend_.free = &CudaDevice::backend_free;
  backend_.ctx = this;
  backend_.device_name = name();
  set_current("cuda", ordinal);
  OPSCOPE_CUDA_CHECK(cudaSetDevice(ordinal));
  cudaDeviceProp prop{};
  OPSCOPE_CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal));
  sm_count_ = prop.multiProcessorCount;
  gpu_name_ = prop.name;
  cc_major_ = prop.major;
  cc_minor_ = prop.minor;
  total_mem_ = prop.totalGlobalMem;
  void* slots = nullptr;
  OPSCOPE_CUDA_CHECK(cudaHostAlloc(&slots, sizeof(KernelError) * kSlots, cudaHostAllocMapped));
  std::memset(slots, 0, sizeof(KernelError) * kSlots);
  slots_ = static_cast<KernelError*>(slots);
  void* dev_view = nullptr;
  OPSCOPE_CUDA_CHECK(cudaHostGetDevicePointer(&dev_view, slots, 0));
  slots_dev_ = static_cast<KernelError*>(dev_view);
  for (int i = kSlots - 1; i >= 0; --i) free_slots_.push_back(i);
  thread_ = std::thread([this] { scheduler_loop(); });
}

void CudaDevice::drain() {
  if (!thread_.joinable() || std::this_thread::get_id() == thread_.get_id()) return;
  int n = num_streams();
  for (int i = 0; i < n; ++i) stream(i).wait_for(stream(i).submitted());
}

void CudaDevice::shutdown() {
  // Not from a launch body (exit() called there): joining itself would throw.
  if (!thread_.joinable() || std::this_thread::get_id() == thread_.get_id()) return;
  drain();
  stop_.store(true);
  work_signal_.fetch_add(1);
  futex_wake_all(work_signal_);
  thread_.join();
}

CudaDevice::~CudaDevice() {
  shutdown();
  cudaSetDevice(ordinal_);
  allocator().empty_cache();  // the backend goes with this object
  for (Lane& l : lanes_) {
    if (l.blas) cublas().destroy(l.blas);
    if (l.blas_workspace) cudaFree(l.blas_workspace);
    if (l.stream) cudaStreamDestroy(l.stream);
  }
  for (cudaEvent_t e : free_events_) cudaEventDestroy(e);
  for (auto& [size, p] : pinned_free_) cudaFreeHost(p);
  cudaFreeHost(slots_);
}

std::string CudaDevice::description() const {
  return fmt::format("CUDA device {}: {} (sm_{}{}), {} SMs, {:.1f} GiB", name(), gpu_name_, cc_major_, cc_minor_,
                     sm_count_, double(total_mem_) / double(1ull << 30));
}

void* CudaDevice::backend_alloc(size_t size, void* ctx) {
  auto* d = static_cast<CudaDevice*>(ctx);
  set_current(nullptr, d->ordinal_);
  OPSCOPE_CUDA_CHECK(cudaSetDevice(d->ordinal_));
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, size);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky: clear it
    // Tensors freed on the host come back to the cache only when the launches that used
    // them have completed and been recycled. Wait for those (not on the scheduler
    // thread, which completes them), so the allocator's retry after emptying its cache
    // finds their memory.
    if (t_device != d) d->drain();
    return nullptr;
  }
  OPSCOPE_CUDA_CHECK(e);
  return p;
}

void CudaDevice::backend_free(void* p, size_t, void* ctx) {
  auto* d = static_cast<CudaDevice*>(ctx);
  cudaSetDevice(d->ordinal_);
  cudaFree(p);  // frees only blocks no launch uses any more (they came back after completion)
}

PinnedBuffer CudaDevice::get_pinned(size_t bytes) {
  size_t size = 64 << 10;
  while (size < bytes) size *= 2;
  {
    std::lock_guard<std::mutex> g(pinned_m_);
    auto it = pinned_free_.lower_bound(size);
    if (it != pinned_free_.end() && it->first <= 2 * size) {
      PinnedBuffer b{it->second, it->first};
      pinned_free_.erase(it);
      return b;
    }
  }
  set_current(nullptr, ordinal_);
  OPSCOPE_CUDA_CHECK(cudaSetDevice(ordinal_));
  void* p = nullptr;
  OPSCOPE_CUDA_CHECK(cudaHostAlloc(&p, size, cudaHostAllocDefault));
  return PinnedBuffer{p, size};
}

void CudaDevice::put_pinned(PinnedBuffer b) {
  if (!b.ptr) return;
  std::lock_guard<std::mutex> g(pinned_m_);
  pinned_free_.emplace(b.size, b.ptr);
}

void CudaDevice::notify_work() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sched_sleeping_.load(std::memory_order_relaxed)) {
    work_signal_.fetch_add(1, std::memory_order_seq_cst);
    futex_wake_one(work_signal_);
  }
}

cudaEvent_t CudaDevice::get_event() {
  if (!free_events_.empty()) {
    cudaEvent_t e = free_events_.back();
    free_events_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  OPSCOPE_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

// Whether every wait of `l` is met or can be met on the GPU (the awaited launch is
// enqueued on a stream of this device: its event goes into `events`).
bool CudaDevice::waits_ready(const Launch& l, std::vector<cudaEvent_t>& events) {
  for (const auto& [ws, seq] : l.waits) {
    if (ws->completed() >= seq) continue;
    if (&ws->device() != this) return false;  // another device: wait until it completes
    const Lane& other = lanes_[ws->id()];
    const InFlight* hit = nullptr;
    for (const InFlight& f : other.inflight)
      if (f.launch->seq == seq) hit = &f;
    if (!hit || !hit->event) return false;  // not enqueued yet (or no event: it retires at once)
    events.push_back(hit->event);
  }
  return true;
}

void CudaDevice::run_body(Launch& l, Stream& s, Lane& lane, int& slot) {
  t_device = this;
  t_stream = lane.stream;
  t_lane = &lane;
  t_slot = &slot;
  set_current(l.op.empty() ? l.name.c_str() : l.op.c_str(), ordinal_);
  // A launch's checks (cudaGetLastError after <<<...>>>) must see only its own errors;
  // one a call before reported is already reported (a sticky error comes back anyway).
  cudaGetLastError();
  {
    // CUPTI tags what the body enqueues with the launch id; the pop pairs with the push
    // on every way out, an exception from set_error included.
    struct CuptiScope {
      explicit CuptiScope(uint64_t id) { OPSCOPE_CUPTI_PUSH(id); }
      ~CuptiScope() { OPSCOPE_CUPTI_POP(); }
    } cupti(l.id);
    try {
      l.body(0, l.work);
    } catch (const std::exception& e) {
      std::string msg = e.what();
      if (msg.empty() || msg[0] != '[') msg = fmt::format("[{}] {}: kernel {} failed: {}", l.op, name(), l.name, msg);
      s.set_error(std::move(msg));
    } catch (...) {
      s.set_error(fmt::format("[{}] {}: kernel {} failed: unknown exception", l.op, name(), l.name));
    }
  }
  t_slot = nullptr;
  t_lane = nullptr;
  set_current(nullptr, ordinal_);
}

// Enqueues the launches of `s` that may go now, in order.
bool CudaDevice::issue(Stream& s, Lane& lane) {
  bool did = false;
  std::vector<cudaEvent_t> events;
  while (true) {
    if (lane.inflight.size() >= 1024) break;  // enough queued ahead of the GPU
    Launch* l = lane.last ? lane.last->next.load(std::memory_order_acquire) : s.ready_head();
    if (!l) break;
    events.clear();
    if (!waits_ready(*l, events)) break;
    int slot = -1;
    try {
      if (!lane.stream) {
        set_current(l->op.c_str(), ordinal_);
        OPSCOPE_CUDA_CHECK(cudaStreamCreateWithFlags(&lane.stream, cudaStreamNonBlocking));
      }
      for (cudaEvent_t e : events) OPSCOPE_CUDA_CHECK(cudaStreamWaitEvent(lane.stream, e, 0));
      if (l->kind != Launch::Kind::marker && l->body && !s.failed()) run_body(*l, s, lane, slot);
    } catch (const std::exception& e) {
      s.set_error(e.what());
    }
    cudaEvent_t ev = nullptr;
    try {
      set_current(l->op.c_str(), ordinal_);
      ev = get_event();
      OPSCOPE_CUDA_CHECK(cudaEventRecord(ev, lane.stream));
    } catch (const std::exception& e) {
      s.set_error(e.what());
      if (ev) free_events_.push_back(ev);
      ev = nullptr;  // retired at once
    }
    set_current(nullptr, ordinal_);  // the launch's op string may be recycled after this
    lane.inflight.push_back(InFlight{l, ev, slot});
    lane.last = l;
    did = true;
  }
  return did;
}

std::string CudaDevice::slot_message(const Launch& l, int slot) const {
  const volatile KernelError& e = slots_[slot];
  if (e.code == 1)
    return fmt::format("[{}] {}: kernel {}: index {} is out of range [0, {})", l.op, name(), l.name, e.a, e.b);
  return fmt::format("[{}] {}: kernel {} reported error code {}", l.op, name(), l.name, e.code);
}

// Retires the launches of `s` whose events have completed, in order.
bool CudaDevice::retire(Stream& s, Lane& lane) {
  bool did = false;
  while (!lane.inflight.empty()) {
    InFlight& f = lane.inflight.front();
    Launch& l = *f.launch;
    if (f.event) {
      cudaError_t e = cudaEventQuery(f.event);
      if (e == cudaErrorNotReady) {
        // "Not ready" is an answer, not a failure, but the runtime may keep it as this
        // thread's last error, and the next kernel launch's check (cudaGetLastError)
        // would then report "device not ready" as that kernel's failure.
        cudaGetLastError();
        break;
      }
      if (e != cudaSuccess) {
        cudaGetLastError();
        s.set_error(fmt::format("[{}] {}: kernel {} failed on the GPU: {} ({})", l.op, name(), l.name,
                                cudaGetErrorString(e), cudaGetErrorName(e)));
      }
      free_events_.push_back(f.event);
    }
    if (f.slot >= 0) {
      if (static_cast<volatile KernelError*>(slots_)[f.slot].code != 0) s.set_error(slot_message(l, f.slot));
      free_slots_.push_back(f.slot);
    }
    if (l.kind == Launch::Kind::marker && l.event) l.event->time_ns.store(now_ns(), std::memory_order_release);
    lane.inflight.pop_front();
    s.retire_head();
    did = true;
  }
  return did;
}

bool CudaDevice::idle() {
  int n = num_streams();
  for (int i = 0; i < n; ++i)
    if (!lanes_[i].inflight.empty() || (!stream(i).engine() && stream(i).has_queued())) return false;
  return true;
}

void CudaDevice::scheduler_loop() {
  t_device = this;  // marks this thread as the scheduler (backend_alloc must not wait on itself)
  set_current("cuda", ordinal_);
  cudaSetDevice(ordinal_);
  int64_t quiet_since = now_ns();
  while (true) {
    bool did = false;
    int n = num_streams();
    for (int i = 0; i < n; ++i) {
      Stream& s = stream(i);
      if (s.engine()) continue;  // its own engine runs it
      did |= retire(s, lanes_[i]);
      did |= issue(s, lanes_[i]);
    }
    if (did) {
      quiet_since = now_ns();
      continue;
    }
    bool busy = !idle();
    if (stop_.load() && !busy) break;
    if (now_ns() - quiet_since < kSpinNs) {
      std::this_thread::yield();
      continue;
    }
    if (busy) {
      // Kernels run or launches wait on another device: poll gently.
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      continue;
    }
    uint32_t sig = work_signal_.load(std::memory_order_acquire);
    sched_sleeping_.store(true, std::memory_order_seq_cst);
    if (idle() && !stop_.load()) futex_wait(work_signal_, sig);
    sched_sleeping_.store(false, std::memory_order_relaxed);
    quiet_since = now_ns();
  }
}

// ---- for launch bodies ----
cudaStream_t current_stream() {
  if (!t_device) fail(current_op(), "a CUDA launch body ran outside the CUDA device's scheduler");
  return t_stream;
}

cublasHandle_t current_blas() {
  auto* lane = static_cast<CudaDevice::Lane*>(t_lane);
  if (!lane) fail(current_op(), "a CUDA launch body ran outside the CUDA device's scheduler");
  if (!lane->blas) {
    // One handle per stream, bound to it, with its own workspace (cuBLAS's default pool
    // is shared by the handles of a context). A failure leaves nothing half-made: the
    // next matmul on this stream tries again.
    void* ws = nullptr;
    cublasHandle_t h = nullptr;
    try {
      cudaError_t e = cudaMalloc(&ws, kBlasWorkspace);
      if (e == cudaErrorMemoryAllocation) {
        // The caching allocator may hold the GPU's memory in free blocks: give those
        // back (no launch uses them) and try once more.
        cudaGetLastError();
        t_device->allocator().empty_cache();
        e = cudaMalloc(&ws, kBlasWorkspace);
      }
      OPSCOPE_CUDA_CHECK(e);
      const CublasLib& lib = cublas();
      OPSCOPE_CUBLAS_CHECK(lib.create(&h));
      OPSCOPE_CUBLAS_CHECK(lib.set_stream(h, lane->stream));  // resets the workspace: set it after
      OPSCOPE_CUBLAS_CHECK(lib.set_workspace(h, ws, kBlasWorkspace));
    } catch (...) {
      if (h) cublas().destroy(h);
      if (ws) cudaFree(ws);
      throw;
    }
    lane->blas = h;
    lane->blas_workspace = ws;
  }
  return lane->blas;
}

KernelError* current_error_slot() {
  if (!t_slot) fail(current_op(), "a CUDA launch body ran outside the CUDA device's scheduler");
  CudaDevice* d = t_device;
  if (*t_slot < 0) {
    if (d->free_slots_.empty()) fail(current_op(), "{}: more than {} launches with error slots in flight", d->name(), kSlots);
    *t_slot = d->free_slots_.back();
    d->free_slots_.pop_back();
    std::memset(&d->slots_[*t_slot], 0, sizeof(KernelError));
  }
  return d->slots_dev_ + *t_slot;
}

}  // namespace opscope::cuda_impl
