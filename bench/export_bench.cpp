// Export speed: a synthetic profile of N events (default 1M; ops, launches, kernel slices
// on 4 cores, allocs) written as trace.json and as profile.db, and loaded back. Each
// figure is printed beside a plain write of the same number of bytes in the same run
// (the disk's own speed), so the exporter's cost reads as a ratio.
//   export_bench [events] [folder]
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "opscope/profiler/atomic_file.h"
#include "opscope/profiler/chrome_trace.h"
#include "opscope/profiler/store.h"
#include "opscope/profiler/trace.h"

using namespace opscope;
using namespace opscope::prof;
namespace fs = std::filesystem;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// CPU seconds of this process (user + system): on a shared, loaded machine the wall
// time also counts the waits for a core; this does not.
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

struct Timed {
  double wall = 0, cpu = 0;
};

template <class F>
Timed timed(F&& f) {
  double c0 = cpu_seconds();
  auto t0 = std::chrono::steady_clock::now();
  f();
  return {seconds_since(t0), cpu_seconds() - c0};
}

// Each op: the op, its launch, one kernel slice per core; every 16th op an alloc and a free.
Trace synthetic(size_t n_events) {
  constexpr int kCores = 4;
  static const char* kOps[] = {"rms_norm", "mul", "mean", "add", "rsqrt", "matmul"};
  Trace t;
  t.base_time_ns = 1'700'000'000'000'000'000;
  t.wall_time_ns = 1'733'000'000'000'000'000;
  t.config_json = R"({"activities":["framework","runtime","device"],"record_shapes":true})";
  t.devices.push_back({0, "cpu:0", "4-core CPU device", kCores});
  t.tracks.push_back({Track::Kind::host_thread, "main thread", 1000, -1, -1});
  for (int c = 0; c < kCores; ++c)
    t.tracks.push_back({Track::Kind::device_core, fmt::format("cpu:0 core {}", c), 0, 0, c});
  t.dropped_per_track.assign(t.tracks.size(), 0);
  t.events.reserve(n_events);
  int64_t now = 1000;
  uint64_t op_id = 1, launch_id = 1;
  auto push = [&](TraceEvent e) {
    if (t.events.size() < n_events) t.events.push_back(std::move(e));
  };
  for (size_t i = 0; t.events.size() < n_events; ++i) {
    const char* name = kOps[i % 6];
    TraceEvent op;
    op.kind = EventKind::op;
    op.t0 = now;
    op.t1 = now + 2'345;
    op.id = op_id++;
    op.value = int64_t(i);
    op.name = name;
    op.shapes = "[(4096, 4096) f32, (4096) f32]";
    op.track = 0;
    push(op);
    if (i % 16 == 0) {
      TraceEvent a;
      a.kind = EventKind::alloc;
      a.t0 = a.t1 = now + 100;
      a.id = 0x7f0000000000 + i * 4096;
      a.bytes = a.value = 67'108'864;
      a.device = 0;
      push(a);
      a.kind = EventKind::free;
      a.t0 = a.t1 = now + 200;
      a.value = 0;
      push(a);
    }
    TraceEvent l;
    l.kind = EventKind::launch;
    l.t0 = now + 300;
    l.t1 = now + 1'300;
    l.id = launch_id++;
    l.parent = op.id;
    l.name = fmt::format("{}_f32", name);
    l.device = 0;
    l.stream = 0;
    l.bytes = 134'217'728;
    l.flops = 16'777'216;
    push(l);
    for (int c = 0; c < kCores; ++c) {
      TraceEvent k = l;
      k.kind = EventKind::kernel;
      k.t0 = now + 1'500 + c * 7;
      k.t1 = k.t0 + 987'654;
      k.track = 1 + c;
      k.stream = -1;
      k.bytes = l.bytes / kCores;
      k.flops = l.flops / kCores;
      push(k);
    }
    now += 1'000'000;
  }
  return t;
}

// Writes `bytes` bytes through the same atomic path: the disk's speed for this size.
void probe_write(const std::string& path, size_t bytes) {
  std::string chunk(1 << 20, 'x');
  AtomicFile f(path);
  for (size_t done = 0; done < bytes; done += chunk.size())
    f.write(std::string_view(chunk).substr(0, std::min(chunk.size(), bytes - done)));
  f.commit();
}

}  // namespace

int main(int argc, char** argv) {
  size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1'000'000;
  fs::path dir = argc > 2 ? fs::path(argv[2])
                          : fs::temp_directory_path() / fmt::format("opscope_export_bench_{}", ::getpid());
  fs::create_directories(dir);
  Trace t = synthetic(n);
  fmt::print("export of {} events ({} kernel slices) to {}\n", t.events.size(),
             std::count_if(t.events.begin(), t.events.end(),
                           [](const TraceEvent& e) { return e.kind == EventKind::kernel; }),
             dir.string());

  // The formatter alone: the document streamed into /dev/null.
  std::FILE* null = std::fopen("/dev/null", "wb");
  Timed json_fmt = timed([&] { write_chrome_trace(t, null); });
  std::fclose(null);

  std::string json_path = (dir / "trace.json").string();
  Timed json_file = timed([&] { save_chrome_trace(t, json_path); });
  size_t json_bytes = fs::file_size(json_path);
  Timed json_probe = timed([&] { probe_write((dir / "probe.bin").string(), json_bytes); });

  std::string db_path = (dir / "profile.db").string();
  Timed db_file = timed([&] { save_profile_db(t, db_path); });
  size_t db_bytes = fs::file_size(db_path);
  Timed db_probe = timed([&] { probe_write((dir / "probe.bin").string(), db_bytes); });
  fs::remove(dir / "probe.bin");

  Timed both = timed([&] { export_profile(t, dir.string()); });
  Trace back;
  Timed load = timed([&] { back = load_profile(dir.string()); });

  fmt::print("  {:<27} {:>8} {:>8} {:>10} {:>8}\n", "", "wall s", "cpu s", "ns/event", "MB");
  auto line = [&](const char* what, Timed s, size_t bytes, Timed probe) {
    fmt::print("  {:<27} {:8.3f} {:8.3f} {:10.1f} {:8.1f}", what, s.wall, s.cpu,
               s.wall * 1e9 / double(n), double(bytes) / 1e6);
    if (probe.wall > 0)
      fmt::print("   {:.2f}x wall, {:.2f}x cpu of a plain atomic write of as many bytes", s.wall / probe.wall,
                 s.cpu / std::max(probe.cpu, 1e-3));
    fmt::print("\n");
  };
  line("trace.json to /dev/null", json_fmt, json_bytes, {});
  line("trace.json (atomic file)", json_file, json_bytes, json_probe);
  line("profile.db (atomic file)", db_file, db_bytes, db_probe);
  line("export_profile (both)", both, json_bytes + db_bytes,
       {json_probe.wall + db_probe.wall, json_probe.cpu + db_probe.cpu});
  line("load_profile", load, db_bytes, {});
  fmt::print("  loaded back {} events\n", back.events.size());
  fs::remove_all(dir);
  return back.events.size() == t.events.size() ? 0 : 1;
}
