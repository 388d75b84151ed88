#include "opscope/runtime/cpu_device.h"

#include <immintrin.h>
#include <pthread.h>
#include <sched.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

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
// A scheduler whose queued launch waits for another device's stream sleeps this long at a
// time: that device does not wake it (engines of its own streams do, at once).
constexpr int64_t kBlockedSleepNs = 200'000;
// A core on the CPU the host thread runs on (with as many cores as CPUs, the last one)
// takes a time slice from the host whenever it works: the host's next launches wait.
// While the host submits, it joins only launches this big (bytes moved, plus flops at 4
// per byte); measured on 2 vCPUs, RMSNorm on 8-64 MiB ran 1.3-2x faster with it, on
// 0.5-2 MiB 1.5-2.5x slower. A launch that a thread in wait_for waits for (the end of a
// forward: synchronize, .cpu()) it joins whatever its size: until that launch has run,
// the host sleeps and that CPU is free (efficientnet_b0's forward 16.3 -> 13.5 ms,
// regnet_y_400mf 11.1 -> 9.4). Launches after it do not: the host may be running again.
constexpr int64_t kHostCoreMinCost = int64_t(8) << 20;

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

CpuSchedule env_schedule() {
  const char* v = std::getenv("OPSCOPE_CPU_SCHEDULE");
  if (!v || !*v || std::string_view(v) == "steal") return CpuSchedule::steal;
  if (std::string_view(v) == "static") return CpuSchedule::static_slices;
  fail("OPSCOPE_CPU_SCHEDULE", "'{}' is not a schedule (steal or static)", v);
}

}  // namespace

CpuDevice::CpuDevice(int num_cores, bool pin, int64_t memory_bytes, CpuSchedule schedule)
    : Device(DeviceType::cpu) {
  // First: a bad OPSCOPE_CPU_MEMORY or OPSCOPE_CPU_SCHEDULE throws before any thread starts.
  allocator().set_capacity(memory_bytes == 0 ? cpu_memory_capacity() : memory_bytes);
  schedule_ = schedule == CpuSchedule::from_env ? env_schedule() : schedule;
  static std::atomic<uint64_t> instances{0};
  instance_ = ++instances;
  num_cores_ = num_cores > 0 ? num_cores : int(allowed_cpus().size());
  pinned_ = pin;
  host_cpu_ = sched_getcpu();
  std::vector<int> cpus = core_cpus(num_cores_, host_cpu_);
  cpu_of_core_ = std::make_unique<std::atomic<int>[]>(num_cores_);
  slices_ = std::make_unique<Slice[]>(size_t(num_cores_));
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
  // The default schedule goes unsaid: profiles from before it keep comparing equal in diff.
  return fmt::format("CPU device {} with {} cores (worker threads{}{}), {} hardware threads", name(), num_cores_,
                     pinned_ ? fmt::format(", pinned to CPUs {}", cpus) : "",
                     schedule_ == CpuSchedule::static_slices ? ", static schedule" : "", hardware_cores());
}

void CpuDevice::notify_work() {
  // The submit published the launch; the fence orders that before reading
  // sched_sleeping_ (Dekker with the scheduler's store-then-check), so either the
  // scheduler sees the launch or this sees it asleep. No shared counter is written
  // while the scheduler polls: that cache line would bounce at every launch.
  // Where the submitting thread runs, published only when it changes (a store per
  // launch would bounce a line between the host and the scheduler).
  // Keyed by the device's instance too: a new device can take an old one's index.
  thread_local struct {
    uint64_t instance;
    int cpu;
  } t_seen[kMaxDevices];
  int c = sched_getcpu();
  auto& seen = t_seen[index()];
  if (c != seen.cpu || seen.instance != instance_) {
    seen = {instance_, c};
    submit_cpu_.store(c, std::memory_order_relaxed);
  }
  wake_scheduler();
}

// An engine retired a launch (its stream's `completed` moved, seq_cst): a launch on the
// cores may have been waiting for it while the scheduler slept.
void CpuDevice::notify_progress() { wake_scheduler(); }

void CpuDevice::wake_scheduler() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sched_sleeping_.load(std::memory_order_relaxed)) {
    work_signal_.fetch_add(1, std::memory_order_seq_cst);
    futex_wake_one(work_signal_);
  }
}

namespace {
// The sampler (instructions layer) samples the threads of live cores.
struct CoreThreadMark {
  CoreThreadMark(int device, int core) { prof::on_core_thread_start(device, core); }
  ~CoreThreadMark() { prof::on_core_thread_exit(); }
};
}  // namespace

bool CpuDevice::any_queued() {
  int n = num_streams();
  for (int i = 0; i < n; ++i)
    if (!stream(i).engine() && stream(i).has_queued()) return true;
  return false;
}

// Queued and no longer waiting for another stream: what the cores can run now.
bool CpuDevice::any_ready() {
  int n = num_streams();
  for (int i = 0; i < n; ++i)
    if (!stream(i).engine() && stream(i).ready_head()) return true;
  return false;
}

// A queued launch waits for a stream of another device, whose progress nobody announces.
bool CpuDevice::waits_on_other_device() {
  int n = num_streams();
  for (int i = 0; i < n; ++i) {
    if (stream(i).engine()) continue;
    if (Launch* l = stream(i).head())
      for (auto& [s, seq] : l->waits)
        if (&s->device() != this && s->completed() < seq) return true;
  }
  return false;
}

void CpuDevice::scheduler_loop() {
  CoreThreadMark mark(index(), 0);
  if (pinned_) pin_to_cpu(cpu_of_core_[0].load());
  while (true) {
    bool did = false;
    int n = num_streams();
    for (int i = 0; i < n; ++i) {
      Stream& s = stream(i);
      if (s.engine()) continue;  // its own engine runs it
      if (Launch* l = s.ready_head()) {
        execute(*l, s);
        s.retire_head();
        did = true;
      }
    }
    // The host thread moved onto this CPU (the OS may put it there when it wakes): while
    // both run, they take turns by time slices of milliseconds, so leave now, not at the
    // next idle moment (a queue that never drains never has one).
    if (pinned_ && num_cores_ > 1 && submit_cpu_.load(std::memory_order_relaxed) == cpu_of_core_[0].load())
      move_off_host_cpu();
    if (did) continue;
    if (stop_.load()) {
      bool empty = true;
      for (int i = 0; i < n; ++i) empty = empty && (stream(i).engine() || stream(i).query());
      if (empty) break;
    }
    // Idle: poll the queues for a while, then sleep until a submit wakes us. The poll
    // yields now and then: should the host thread share this CPU, it gets to run.
    // Launches still waiting for another stream (a collective on an engine, say) do not
    // keep it polling: it sleeps, and the engine's notify_progress wakes it.
    int64_t t0 = now_ns();
    bool ready = false;
    for (int k = 1; !(ready = any_ready()); ++k) {
      _mm_pause();
      if (k % 64 == 0) {
        if (now_ns() - t0 > kSchedulerSpinNs) break;
        sched_yield();
      }
    }
    if (ready) continue;
    uint32_t sig = work_signal_.load(std::memory_order_acquire);
    sched_sleeping_.store(true, std::memory_order_seq_cst);
    if (!any_ready() && !stop_.load()) {
      sleeps_.fetch_add(1, std::memory_order_relaxed);
      if (waits_on_other_device())
        futex_wait_for(work_signal_, sig, kBlockedSleepNs);
      else
        futex_wait(work_signal_, sig);
    }
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
  CoreThreadMark mark(index(), core);
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
    // The generation first, then stop_: the destructor sets stop_ before it bumps job_gen_,
    // so a generation read after the bump comes with stop_ set. Checked the other way round,
    // a stop between the two reads left this thread waiting on a generation no one would
    // bump again, and the destructor's join hung (Elementwise.SplitAcrossCores, once).
    seen = job_gen_.load(std::memory_order_seq_cst);
    if (stop_.load(std::memory_order_seq_cst)) return;
    if (pinned_ && pin_gen_.load(std::memory_order_acquire) != pinned_gen) {
      pinned_gen = pin_gen_.load(std::memory_order_acquire);
      pin_to_cpu(cpu_of_core_[core].load());
    }
    run_chunks(core);
  }
}

bool CpuDevice::shares_host_cpu(uint32_t core) const {
  return pinned_ && cpu_of_core_[core].load(std::memory_order_relaxed) == submit_cpu_.load(std::memory_order_relaxed);
}

void CpuDevice::record_error(std::exception_ptr e) {
  std::lock_guard<std::mutex> g(job_err_m_);
  if (!job_err_) job_err_ = e;
}

// Units [begin, end) of the launch; an exception is kept for execute() to report.
void CpuDevice::run_body(Launch& l, int64_t begin, int64_t end) {
  if (begin >= end) return;
  try {
    l.body(begin, end);
  } catch (...) {
    record_error(std::current_exception());
  }
}

namespace {
constexpr uint64_t pack(uint32_t seq, uint32_t a, uint32_t b) { return uint64_t(seq) << 32 | uint64_t(a) << 16 | b; }
uint32_t seq_of(uint64_t w) { return uint32_t(w >> 32); }
uint32_t hi16(uint64_t w) { return uint32_t(w >> 16) & 0xffff; }
uint32_t lo16(uint64_t w) { return uint32_t(w) & 0xffff; }

// A chunk of job `seq` from a slice: its owner takes the front, other cores the back.
// Once a core holds a chunk, the job cannot finish (so job_ and the slices stay) until
// that core adds it to job_done_.
bool take(std::atomic<uint64_t>& slice, uint32_t seq, bool front, uint32_t& chunk) {
  uint64_t w = slice.load(std::memory_order_acquire);
  while (seq_of(w) == seq && hi16(w) < lo16(w)) {
    uint64_t next = front ? w + (uint64_t(1) << 16) : w - 1;
    if (slice.compare_exchange_weak(w, next, std::memory_order_acq_rel, std::memory_order_acquire)) {
      chunk = front ? hi16(w) : lo16(w) - 1;
      return true;
    }
  }
  return false;
}
}  // namespace

// Runs this core's chunks of the current job, then (unless static) what is left of the
// other slices (only cores with a slice take: the launch's grain asked for no more).
// Then records one kernel event for what this core did of the launch and counts its
// chunks done, after which it no longer touches the launch.
void CpuDevice::run_chunks(int core) {
  const uint64_t job = job_word_.load(std::memory_order_acquire);
  const uint32_t seq = seq_of(job), n = hi16(job), per = lo16(job);
  Launch* l = nullptr;
  uint32_t done = 0, chunk = 0;
  int64_t units = 0, t0 = 0;
  const bool trace = prof::layers() & prof::kDevice;
  auto run = [&](uint32_t slice) {
    if (!l) {
      l = job_;
      if (trace) t0 = now_ns();
    }
    int64_t total = int64_t(n) * per, c = int64_t(slice) * per + chunk;
    int64_t begin = l->work * c / total, end = l->work * (c + 1) / total;
    run_body(*l, begin, end);
    units += end - begin;
    ++done;
  };
  if (uint32_t(core) < n)
    while (take(slices_[core].word, seq, true, chunk)) run(uint32_t(core));
  if (schedule_ == CpuSchedule::steal)
    for (uint32_t k = 1; uint32_t(core) < n && k < n; ++k) {
      uint32_t victim = (uint32_t(core) + k) % n;
      while (take(slices_[victim].word, seq, false, chunk)) run(victim);
    }
  if (!done) return;
  if (trace && units > 0) prof::on_kernel(*l, index(), core, t0, now_ns(), l->work ? l->bytes * units / l->work : 0);
  job_done_.fetch_add(done, std::memory_order_acq_rel);
}

void CpuDevice::execute(Launch& l, Stream& s) {
  if (l.kind == Launch::Kind::marker) {
    if (l.event) l.event->time_ns.store(now_ns(), std::memory_order_release);
    return;
  }
  if (s.failed() || !l.body) return;  // skipped: an earlier kernel on this stream failed
  int64_t grain = l.grain > 0 ? l.grain : 1;
  int64_t grains = std::max<int64_t>(1, (l.work + grain - 1) / grain);
  uint32_t n = uint32_t(std::min<int64_t>(num_cores_, grains));
  if (schedule_ == CpuSchedule::steal && n > 1 && n == uint32_t(num_cores_) && shares_host_cpu(n - 1) &&
      (l.bytes > 0 || l.flops > 0) && l.bytes + l.flops / 4 < kHostCoreMinCost && s.waited() < l.seq)
    --n;  // (a launch that says nothing of its cost keeps every core)
  // A few chunks per slice, so what a late core leaves can be shared out.
  const uint32_t per = schedule_ == CpuSchedule::static_slices || n == 1
                           ? 1
                           : uint32_t(std::clamp<int64_t>(grains / n, 1, std::min<int64_t>(kChunksPerCore, 0xffff / n)));
  const uint32_t nchunks = n * per;
  if (nchunks <= 1) {
    // Too little work to share: run it here, without touching the cores' shared lines.
    bool trace = prof::layers() & prof::kDevice;
    int64_t t0 = trace ? now_ns() : 0;
    run_body(l, 0, l.work);
    if (trace && l.work > 0) prof::on_kernel(l, index(), 0, t0, now_ns(), l.bytes);
  } else {
    job_ = &l;
    job_done_.store(0, std::memory_order_relaxed);
    ++job_seq_;
    for (uint32_t c = 0; c < n; ++c) slices_[c].word.store(pack(job_seq_, 0, per), std::memory_order_relaxed);
    job_word_.store(pack(job_seq_, n, per), std::memory_order_release);
    job_gen_.fetch_add(1, std::memory_order_seq_cst);
    if (helpers_sleeping_.load(std::memory_order_seq_cst) > 0) futex_wake_all(job_gen_);
    run_chunks(0);
    while (job_done_.load(std::memory_order_acquire) < nchunks) _mm_pause();
  }
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

// The device lives until exit and its cores keep running while exit() destroys other
// libraries' statics: a core inside oneDNN then (a matmul queued before exit) read freed
// memory. exit() runs handlers and destructors in the reverse order of registration, so
// this one, registered when the device starts and again at a library's first call (a
// kernel's own statics exist by then), waits for the queued work before they go.
void drain_cpu_at_exit() {
  static const auto drain = [] {
    CpuDevice* d = __atomic_load_n(&g_cpu, __ATOMIC_ACQUIRE);
    if (!d) return;
    try {
      d->synchronize();
    } catch (...) {  // a kernel's error: nobody is left to report it to
    }
  };
  std::atexit(+drain);
}

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
    drain_cpu_at_exit();
  }
  return *g_cpu;
}

}  // namespace opscope
