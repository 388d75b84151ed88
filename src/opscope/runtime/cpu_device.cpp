#include "opscope/runtime/cpu_device.h"

#include <immintrin.h>
#include <pthread.h>
#include <sched.h>

#include <cstdlib>
#include <fmt/format.h>

#include "opscope/core/clock.h"
#include "opscope/core/error.h"
#include "opscope/core/futex.h"
#include "opscope/profiler/hooks.h"

namespace opscope {

namespace {

// How long an idle core polls before it sleeps: long enough to catch back-to-back
// launches without a futex wake, short enough not to burn a core for nothing.
constexpr int64_t kSchedulerSpinNs = 50'000;
constexpr int64_t kHelperSpinNs = 20'000;

bool pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

int hardware_cores() {
  unsigned n = std::thread::hardware_concurrency();
  return n ? int(n) : 1;
}

}  // namespace

CpuDevice::CpuDevice(int num_cores, bool pin) : Device(DeviceType::cpu) {
  num_cores_ = num_cores > 0 ? num_cores : hardware_cores();
  pinned_ = pin;
  threads_.emplace_back([this] { scheduler_loop(); });
  for (int c = 1; c < num_cores_; ++c) threads_.emplace_back([this, c] { helper_loop(c); });
}

CpuDevice::~CpuDevice() {
  int n = num_streams();
  for (int i = 0; i < n; ++i) stream(i).wait_for(stream(i).submitted());
  stop_.store(true);
  work_signal_.fetch_add(1);
  futex_wake_all(work_signal_);
  job_gen_.fetch_add(1);
  futex_wake_all(job_gen_);
  for (auto& t : threads_) t.join();
}

std::string CpuDevice::description() const {
  return fmt::format("CPU device {} with {} cores (worker threads{}), {} hardware threads", name(), num_cores_,
                     pinned_ ? ", pinned" : "", hardware_cores());
}

void CpuDevice::notify_work() {
  work_signal_.fetch_add(1, std::memory_order_seq_cst);
  if (sched_sleeping_.load(std::memory_order_seq_cst)) futex_wake_one(work_signal_);
}

void CpuDevice::scheduler_loop() {
  if (pinned_) pin_to_cpu(0 % hardware_cores());
  while (true) {
    uint32_t sig = work_signal_.load(std::memory_order_acquire);
    bool did = false;
    int n = num_streams();
    for (int i = 0; i < n; ++i) {
      Stream& s = stream(i);
      if (Launch* l = s.ready_head()) {
        execute(*l, s);
        s.retire_head();
        did = true;
      }
    }
    if (did) continue;
    if (stop_.load()) {
      bool empty = true;
      for (int i = 0; i < n; ++i) empty = empty && stream(i).query();
      if (empty) break;
    }
    // Idle: poll for a while, then sleep until a submit bumps the signal.
    int64_t t0 = now_ns();
    while (work_signal_.load(std::memory_order_acquire) == sig && now_ns() - t0 < kSchedulerSpinNs) _mm_pause();
    if (work_signal_.load(std::memory_order_acquire) != sig) continue;
    sched_sleeping_.store(true, std::memory_order_seq_cst);
    if (work_signal_.load(std::memory_order_seq_cst) == sig) futex_wait(work_signal_, sig);
    sched_sleeping_.store(false, std::memory_order_relaxed);
  }
}

void CpuDevice::helper_loop(int core) {
  if (pinned_) pin_to_cpu(core % hardware_cores());
  // Generation 0 is the state before any job; reading job_gen_ here instead could skip
  // a job published before this thread started.
  uint32_t seen = 0;
  while (true) {
    int64_t t0 = now_ns();
    while (job_gen_.load(std::memory_order_acquire) == seen && now_ns() - t0 < kHelperSpinNs) _mm_pause();
    if (job_gen_.load(std::memory_order_acquire) == seen) {
      helpers_sleeping_.fetch_add(1, std::memory_order_seq_cst);
      while (job_gen_.load(std::memory_order_seq_cst) == seen) futex_wait(job_gen_, seen);
      helpers_sleeping_.fetch_sub(1, std::memory_order_relaxed);
    }
    if (stop_.load()) return;
    seen = job_gen_.load(std::memory_order_acquire);
    if (core < job_cores_) run_slice(*job_, core, job_cores_);
    job_pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void CpuDevice::record_error(std::exception_ptr e) {
  std::lock_guard<std::mutex> g(job_err_m_);
  if (!job_err_) job_err_ = e;
}

void CpuDevice::run_slice(Launch& l, int core, int ncores) {
  int64_t begin = l.work * core / ncores, end = l.work * (core + 1) / ncores;
  if (begin >= end) return;
  bool trace = prof::layers() & prof::kDevice;
  int64_t t0 = trace ? now_ns() : 0;
  try {
    l.body(begin, end);
  } catch (...) {
    record_error(std::current_exception());
  }
  if (trace) prof::on_kernel(l, index(), core, t0, now_ns(), l.work ? l.bytes * (end - begin) / l.work : 0);
}

void CpuDevice::execute(Launch& l, Stream& s) {
  if (l.kind == Launch::Kind::marker) {
    if (l.event) l.event->time_ns.store(now_ns(), std::memory_order_release);
    return;
  }
  if (s.failed() || !l.body) return;  // skipped: an earlier kernel on this stream failed
  int64_t grain = l.grain > 0 ? l.grain : 1;
  int ncores = int(std::min<int64_t>(num_cores_, std::max<int64_t>(1, (l.work + grain - 1) / grain)));
  if (ncores > 1) {
    job_ = &l;
    job_cores_ = ncores;
    job_pending_.store(num_cores_ - 1, std::memory_order_relaxed);
    job_gen_.fetch_add(1, std::memory_order_seq_cst);
    if (helpers_sleeping_.load(std::memory_order_seq_cst) > 0) futex_wake_all(job_gen_);
  }
  run_slice(l, 0, ncores);
  if (ncores > 1)
    while (job_pending_.load(std::memory_order_acquire) > 0) _mm_pause();
  std::exception_ptr err;
  {
    std::lock_guard<std::mutex> g(job_err_m_);
    std::swap(err, job_err_);
  }
  if (err) {
    std::string msg;
    try {
      std::rethrow_exception(err);
    } catch (const std::exception& e) {
      msg = e.what();
    } catch (...) {
      msg = "unknown exception";
    }
    if (msg.empty() || msg[0] != '[') msg = fmt::format("[{}] kernel {} failed: {}", l.op, l.name, msg);
    s.set_error(std::move(msg));
  }
}

namespace {
int env_cores() {
  const char* v = std::getenv("OPSCOPE_CPU_CORES");
  if (!v || !*v) return 0;
  char* end = nullptr;
  long n = std::strtol(v, &end, 10);
  if (*end || n <= 0 || n > 4096) fail("OPSCOPE_CPU_CORES", "'{}' is not a core count (1..4096)", v);
  return int(n);
}
std::mutex g_cpu_m;
CpuDevice* g_cpu = nullptr;
int g_cpu_cores = 0;
}  // namespace

void configure_cpu(int num_cores) {
  std::lock_guard<std::mutex> g(g_cpu_m);
  if (g_cpu) {
    if (num_cores > 0 && num_cores != g_cpu->num_cores())
      fail("configure_cpu", "the CPU device already runs with {} cores; configure it before first use",
           g_cpu->num_cores());
    return;
  }
  g_cpu_cores = num_cores;
}

Device& cpu() {
  CpuDevice* d = __atomic_load_n(&g_cpu, __ATOMIC_ACQUIRE);
  if (d) return *d;
  std::lock_guard<std::mutex> g(g_cpu_m);
  if (!g_cpu) {
    int n = g_cpu_cores > 0 ? g_cpu_cores : env_cores();
    __atomic_store_n(&g_cpu, new CpuDevice(n), __ATOMIC_RELEASE);  // lives until exit
  }
  return *g_cpu;
}

}  // namespace opscope
