#include "opscope/profiler/sampler.h"

#include <linux/perf_event.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "opscope/profiler/hooks.h"
#include "opscope/profiler/sample_cost.h"

namespace opscope::prof {

namespace detail {
namespace {

long sys_perf_event_open(perf_event_attr* attr, int tid, int cpu, int group, unsigned long flags) {
  return syscall(SYS_perf_event_open, attr, tid, cpu, group, flags);
}
std::atomic<PerfEventOpenFn> g_open{sys_perf_event_open};

constexpr size_t kDataPages = 128;  // 512 KiB a core: ~1.6 s of samples at 10 kHz before the reader must run
constexpr int kPollMs = 50;

struct CoreThread {
  int tid;
  int32_t core_key;
};

// One sampled thread: its event and the ring the OS writes its samples into.
struct Stream {
  int fd = -1;
  void* map = nullptr;
  size_t map_bytes = 0;
  size_t data_bytes = 0;
  int tid = 0;
  int32_t core_key = 0;
  bool retired = false;  // its thread exited: disabled and drained, closed at the end
};

struct Sampler {
  std::mutex m;  // guards everything below
  std::vector<CoreThread> threads;
  bool active = false;
  bool chosen = false;   // the event was picked (at the first thread opened)
  bool failed = false;   // the OS refused every event: no more tries this window
  perf_event_attr attr{};
  int64_t cap = 0;
  std::map<int32_t, int64_t> per_core;  // samples kept per core, against the cap
  std::vector<Stream> streams;
  SamplerReport report;
  std::thread reader;
  std::atomic<bool> stop{false};
  int wake = -1;  // eventfd: stop() wakes the reader instead of waiting out its poll
};

Sampler& sampler() {
  static Sampler* s = new Sampler;  // core threads may exit after static destructors ran
  return *s;
}

int64_t paranoid_level() {
  std::ifstream f("/proc/sys/kernel/perf_event_paranoid");
  int64_t v = -100;
  return f >> v ? v : -100;
}

std::string refusal(int err) {
  int64_t level = paranoid_level();
  std::string why = fmt::format("perf_event_open refused: {}", std::strerror(err));
  if (err == EACCES || err == EPERM) {
    if (level > 2)
      return why + fmt::format(" (kernel.perf_event_paranoid is {}: run as root, set it to 2 or less with "
                               "`sysctl kernel.perf_event_paranoid=2`, or give the process CAP_PERFMON)", level);
    return why + " (a container or seccomp profile may forbid perf_event_open: run with CAP_PERFMON or a "
                 "seccomp profile that allows it)";
  }
  if (err == ENOSYS) return why + " (this kernel or container has no perf events)";
  return why;
}

perf_event_attr base_attr(int64_t rate_hz, bool hardware, bool kernel) {
  perf_event_attr a{};
  a.size = sizeof(a);
  if (hardware) {
    a.type = PERF_TYPE_HARDWARE;
    a.config = PERF_COUNT_HW_CPU_CYCLES;
    a.freq = 1;
    a.sample_freq = uint64_t(rate_hz);
  } else {
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_CPU_CLOCK;
    a.sample_period = uint64_t(1'000'000'000 / rate_hz);  // ns of the thread's CPU time
  }
  a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TIME;
  a.exclude_kernel = kernel ? 0 : 1;
  a.exclude_hv = 1;
  a.use_clockid = 1;
  a.clockid = CLOCK_MONOTONIC;  // the trace's clock
  a.watermark = 1;
  a.wakeup_watermark = uint32_t(kDataPages * 4096 / 2);
  return a;
}

long open_for(Sampler& s, int tid, int& err) {
  long fd = g_open.load()(&s.attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
  err = fd < 0 ? errno : 0;
  return fd;
}

// Picks the event on the first thread: cycles, else cpu-clock; with the OS's time in
// the samples where allowed, else user code only. Returns the fd, or -1.
long choose_event(Sampler& s, int tid, int64_t rate_hz) {
  int err = 0, first_err = 0;
  for (bool hardware : {true, false})
    for (bool kernel : {true, false}) {
      s.attr = base_attr(rate_hz, hardware, kernel);
      long fd = open_for(s, tid, err);
      if (fd >= 0) {
        s.chosen = true;
        s.report.event = hardware ? "cycles" : "cpu-clock";
        s.report.hardware = hardware;
        s.report.kernel_ips = kernel;
        s.report.period = hardware ? 0 : int64_t(s.attr.sample_period);
        return fd;
      }
      // Keep the most telling reason: a refusal over "no such event".
      if (!first_err || err == EACCES || err == EPERM) first_err = err;
      if (err == ESRCH) return -1;  // the thread is gone; try again with the next one
    }
  s.failed = true;
  s.report.warning = refusal(first_err);
  return -1;
}

void open_stream(Sampler& s, const CoreThread& t) {
  if (s.failed) return;
  int err = 0;
  long fd = s.chosen ? open_for(s, t.tid, err) : choose_event(s, t.tid, s.report.rate_hz);
  if (fd < 0) return;
  Stream st;
  st.fd = int(fd);
  st.tid = t.tid;
  st.core_key = t.core_key;
  long page = sysconf(_SC_PAGESIZE);
  // Fewer pages when the locked-memory limit (perf_event_mlock_kb) refuses the ring.
  for (size_t pages = kDataPages; pages >= 8 && !st.map; pages /= 2) {
    size_t bytes = (pages + 1) * size_t(page);
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, st.fd, 0);
    if (p != MAP_FAILED) {
      st.map = p;
      st.map_bytes = bytes;
      st.data_bytes = pages * size_t(page);
    }
  }
  if (!st.map) {
    int e = errno;
    close(st.fd);
    if (s.report.warning.empty())
      s.report.warning = fmt::format("cannot map a sample ring for core {} ({}; see kernel.perf_event_mlock_kb)",
                                     t.core_key & 0xffff, std::strerror(e));
    return;
  }
  s.streams.push_back(st);
  ++s.report.threads;
}

void copy_out(const char* data, size_t size, uint64_t at, void* to, size_t n) {
  size_t off = size_t(at % size);
  size_t first = std::min(n, size - off);
  std::memcpy(to, data + off, first);
  if (first < n) std::memcpy(static_cast<char*>(to) + first, data, n - first);
}

// Moves what the OS wrote into the report (under the lock).
void drain(Sampler& s, Stream& st) {
  auto* pg = static_cast<perf_event_mmap_page*>(st.map);
  const char* data = static_cast<const char*>(st.map) + sysconf(_SC_PAGESIZE);
  uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
  uint64_t tail = pg->data_tail;
  int64_t& kept = s.per_core[st.core_key];
  while (tail < head) {
    perf_event_header h;
    copy_out(data, st.data_bytes, tail, &h, sizeof(h));
    if (h.size < sizeof(h)) break;  // never written so: stop rather than spin
    uint64_t body[4] = {};
    copy_out(data, st.data_bytes, tail + sizeof(h), body, std::min<size_t>(sizeof(body), h.size - sizeof(h)));
    if (h.type == PERF_RECORD_SAMPLE) {
      if (kept < s.cap) {
        s.report.samples.push_back({int64_t(body[1]), body[0], st.core_key});
        ++kept;
      } else {
        ++s.report.dropped;
      }
    } else if (h.type == PERF_RECORD_LOST) {
      s.report.lost += int64_t(body[1]);
    }
    tail += h.size;
  }
  __atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
}

void reader_loop(Sampler& s) {
  std::vector<pollfd> fds;
  while (!s.stop.load()) {
    fds.clear();
    if (s.wake >= 0) fds.push_back({s.wake, POLLIN, 0});
    {
      std::lock_guard<std::mutex> g(s.m);
      for (const Stream& st : s.streams)
        if (!st.retired) fds.push_back({st.fd, POLLIN, 0});
    }
    poll(fds.data(), fds.size(), kPollMs);
    std::lock_guard<std::mutex> g(s.m);
    for (Stream& st : s.streams)
      if (!st.retired) drain(s, st);
  }
}

}  // namespace

void set_perf_event_open_for_testing(PerfEventOpenFn fn) { g_open.store(fn ? fn : sys_perf_event_open); }

void sampler_begin(const ProfilerConfig& config) {
  Sampler& s = sampler();
  // Measured (once, ~5 ms) before taking the lock that core threads starting now need.
  bool rate_auto = (config.layers & kInstructions) && config.sample_rate_hz == ProfilerConfig::kAutoSampleRate;
  std::optional<int64_t> cost = rate_auto ? sample_cost_ns() : std::nullopt;  // nullopt: refused, said below
  std::lock_guard<std::mutex> g(s.m);
  s.report = SamplerReport{};
  s.streams.clear();
  s.per_core.clear();
  s.chosen = s.failed = false;
  if (!(config.layers & kInstructions)) return;
  s.report.started = true;
  s.report.rate_hz = config.sample_rate_hz;
  if (rate_auto) {
    s.report.rate_auto = true;
    s.report.sample_cost_ns = cost.value_or(0);
    s.report.rate_hz = cost ? rate_within_budget(*cost, ProfilerConfig::kSampleCostBudget,
                                                 ProfilerConfig::kMaxAutoSampleRateHz)
                            : ProfilerConfig::kMaxAutoSampleRateHz;
  }
  s.cap = config.max_events;
  for (const CoreThread& t : s.threads)
    if (config.cores.contains(t.core_key & 0xffff)) open_stream(s, t);
  s.active = true;
  s.stop.store(false);
  if (s.wake < 0) s.wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);  // -1: the reader polls out its time
  s.reader = std::thread([&s] { reader_loop(s); });
}

SamplerReport sampler_end() {
  Sampler& s = sampler();
  {
    std::lock_guard<std::mutex> g(s.m);
    if (!s.active) return std::move(s.report);
    s.active = false;
  }
  s.stop.store(true);
  if (s.wake >= 0) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(s.wake, &one, sizeof(one));
  }
  if (s.reader.joinable()) s.reader.join();
  if (s.wake >= 0) {
    uint64_t drained;
    [[maybe_unused]] ssize_t n = read(s.wake, &drained, sizeof(drained));
  }
  std::lock_guard<std::mutex> g(s.m);
  for (Stream& st : s.streams) {
    if (!st.retired) {
      ioctl(st.fd, PERF_EVENT_IOC_DISABLE, 0);
      drain(s, st);
    }
    munmap(st.map, st.map_bytes);
    close(st.fd);
  }
  s.streams.clear();
  if (!s.report.warning.empty()) {
    static std::once_flag once;
    std::string w = s.report.warning;
    std::call_once(once, [&] { std::fprintf(stderr, "opscope: no instruction samples: %s\n", w.c_str()); });
  }
  return std::move(s.report);
}

}  // namespace detail

// ---- instrumentation points (hooks.h) ----

void on_core_thread_start(int device, int core) {
  detail::Sampler& s = detail::sampler();
  detail::CoreThread t{int(syscall(SYS_gettid)), (int32_t(device) << 16) | (core & 0xffff)};
  std::lock_guard<std::mutex> g(s.m);
  s.threads.push_back(t);
  if (s.active) detail::open_stream(s, t);
}

void on_core_thread_exit() {
  detail::Sampler& s = detail::sampler();
  int tid = int(syscall(SYS_gettid));
  std::lock_guard<std::mutex> g(s.m);
  std::erase_if(s.threads, [&](const detail::CoreThread& t) { return t.tid == tid; });
  for (detail::Stream& st : s.streams)
    if (st.tid == tid && !st.retired) {
      ioctl(st.fd, PERF_EVENT_IOC_DISABLE, 0);
      detail::drain(s, st);
      st.retired = true;
    }
}

}  // namespace opscope::prof
