#include "opscope/runtime/cpu_device.h"

#include <immintrin.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>

#include "opscope/core/clock.h"
#include "opscope/core/error.h"
#include "opscope/core/futex.h"
#include "opscope/profiler/hooks.h"
#include "opscope/runtime/host_memory.h"

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

// The CPUs this process may run on (taskset, cgroups), in order.
std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  if (cpus.empty())
    for (int c = 0; c < hardware_cores(); ++c) cpus.push_back(c);
  return cpus;
}

// Which CPU each core is pinned to. Core 0, the scheduler, polls between launches, so
// it goes on the CPU after the creating (host) thread's: sharing a CPU with the host
// thread that submits made every launch wait for a time slice (5 us per op instead of
// 0.5 until the OS moved the host thread away). The helper cores sleep unless work is
// fanned out, so the last of them may share the host's CPU.
std::vector<int> core_cpus(int num_cores, int host) {
  std::vector<int> cpus = allowed_cpus();
  int n = int(cpus.size());
  int at = 0;
  for (int i = 0; i < n; ++i)
    if (cpus[i] == host) at = i;
  std::vector<int> out(num_cores);
  for (int c = 0; c < num_cores; ++c) out[c] = cpus[(at + 1 + c) % n];
  return out;
}

}  // namespace

CpuDevice::CpuDevice(int num_cores, bool pin, int64_t memory_bytes) : Device(DeviceType::cpu) {
  // First: a bad OPSCOPE_CPU_MEMORY throws before any thread starts.
  allocator().set_capacity(memory_bytes == 0 ? cpu_memory_capacity() : memory_bytes);
  num_cores_ = num_cores > 0 ? num_cores : int(allowed_cpus().size());
  pinned_ = pin;
  host_cpu_ = sched_getcpu();
  std::vector<int> cpus = core_cpus(num_cores_, host_cpu_);
  cpu_of_core_ = std::make_unique<std::atomic<int>[]>(num_cores_);
  for (int c = 0; c < num_cores_; ++c) cpu_of_core_[c].store(cpus[c]);
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
  std::string cpus;
  for (int c = 0; c < num_cores_; ++c) cpus += fmt::format("{}{}", c ? "," : "", cpu_of_core(c));
  return fmt::format("CPU device {} with {} cores (worker threads{}), {} hardware threads", name(), num_cores_,
                     pinned_ ? fmt::format(", pinned to CPUs {}", cpus) : "", hardware_cores());
}

void CpuDevice::notify_work() {
  // The submit published the launch; the fence orders that before reading
  // sched_sleeping_ (Dekker with the scheduler's store-then-check), so either the
  // scheduler sees the launch or this sees it asleep. No shared counter is written
  // while the scheduler polls: that cache line would bounce at every launch.
  // Where the submitting thread runs, published only when it changes (a store per
  // launch would bounce a line between the host and the scheduler).
  thread_local int t_cpu_plus1[kMaxDevices];  // 0: not seen yet
  int c = sched_getcpu();
  if (c + 1 != t_cpu_plus1[index()]) {
    t_cpu_plus1[index()] = c + 1;
    submit_cpu_.store(c, std::memory_order_relaxed);
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sched_sleeping_.load(std::memory_order_relaxed)) {
    work_signal_.fetch_add(1, std::memory_order_seq_cst);
    futex_wake_one(work_signal_);
  }
}

bool CpuDevice::any_queued() {
  int n = num_streams();
  for (int i = 0; i < n; ++i)
    if (stream(i).has_queued()) return true;
  return false;
}

void CpuDevice::scheduler_loop() {
  if (pinned_) pin_to_cpu(cpu_of_core_[0].load());
  while (true) {
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
    if (pinned_ && num_cores_ > 1 && submit_cpu_.load(std::memory_order_relaxed) == cpu_of_core_[0].load())
      move_off_host_cpu();
    // Idle: poll the queues for a while, then sleep until a submit wakes us. The poll
    // yields now and then: should the host thread share this CPU, it gets to run.
    int64_t t0 = now_ns();
    bool queued = false;
    for (int k = 1; !(queued = any_queued()); ++k) {
      _mm_pause();
      if (k % 64 == 0) {
        if (now_ns() - t0 > kSchedulerSpinNs) break;
        sched_yield();
      }
    }
    if (queued) continue;
    uint32_t sig = work_signal_.load(std::memory_order_acquire);
    sched_sleeping_.store(true, std::memory_order_seq_cst);
    if (!any_queued() && !stop_.load()) futex_wait(work_signal_, sig);
    sched_sleeping_.store(false, std::memory_order_relaxed);
  }
}

// The OS may move the (unpinned) host thread onto the scheduler's CPU, where the two
// take turns and every launch waits for a time slice. Swap CPUs with a helper core,
// which sleeps between fanned-out kernels and so shares the host's CPU cheaply.
void CpuDevice::move_off_host_cpu() {
  int64_t now = now_ns();
  if (now - last_move_ns_ < 10'000'000) return;  // at most every 10 ms: the host may wander
  last_move_ns_ = now;
  int host = submit_cpu_.load(std::memory_order_relaxed);
  for (int k = 1; k < num_cores_; ++k) {
    int other = cpu_of_core_[k].load();
    if (other == host) continue;
    cpu_of_core_[k].store(cpu_of_core_[0].load());
    cpu_of_core_[0].store(other);
    pin_to_cpu(other);
    pin_gen_.fetch_add(1, std::memory_order_release);
    return;
  }
}

void CpuDevice::helper_loop(int core) {
  uint32_t pinned_gen = pin_gen_.load();
  if (pinned_) pin_to_cpu(cpu_of_core_[core].load());
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
    if (pinned_ && pin_gen_.load(std::memory_order_acquire) != pinned_gen) {
      pinned_gen = pin_gen_.load(std::memory_order_acquire);
      pin_to_cpu(cpu_of_core_[core].load());
    }
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
