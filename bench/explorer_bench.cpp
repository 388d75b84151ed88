// The explorer at scale: a synthetic profile of 1M events saved to disk, then opened the
// way `opscope explore` opens it (load the SQLite store + build the indexes; budget 2 s),
// then timeline queries as the UI sends them while zooming and panning (answer built and
// serialized as the server does; budget 100 ms each), and a few over HTTP on loopback.
//   explorer_bench [events]   (default 1000000)
#include "opscope/explorer/httplib.h"
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>
#include <unistd.h>

#include "opscope/explorer/api.h"
#include "opscope/explorer/server.h"
#include "opscope/explorer/synthetic.h"
#include "opscope/profiler/store.h"

using namespace opscope::explorer;
using Clock = std::chrono::steady_clock;

static double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

struct Stats {
  std::vector<double> ms;
  size_t max_drawables = 0;
  void print(const char* what) {
    std::sort(ms.begin(), ms.end());
    fmt::print("  {:<34} n={:<3} median {:7.2f} ms   max {:7.2f} ms   max drawables/lane {}\n", what,
               ms.size(), ms[ms.size() / 2], ms.back(), max_drawables);
  }
};

int main(int argc, char** argv) {
  int64_t events = argc > 1 ? std::stoll(argv[1]) : 1'000'000;
  auto dir = std::filesystem::temp_directory_path() / fmt::format("opscope_explorer_bench_{}", ::getpid());

  auto t = Clock::now();
  SyntheticSpec spec;
  spec.events = events;
  spec.threads = 2;
  auto trace = synthetic_trace(spec);
  fmt::print("synthetic profile: {} events, {} tracks, generated in {:.0f} ms\n", trace.events.size(),
             trace.tracks.size(), ms_since(t));
  t = Clock::now();
  opscope::prof::export_profile(trace, dir.string());
  fmt::print("saved (trace.json + profile.db) in {:.0f} ms\n", ms_since(t));
  trace = {};

  t = Clock::now();
  ProfilePtr p = open_profile(dir.string());
  double open_ms = ms_since(t);
  if (!p->ok()) {
    fmt::print("open failed: {}\n", p->error());
    return 1;
  }
  t = Clock::now();
  TimelineIndex again(p->trace());
  double index_ms = ms_since(t);
  fmt::print("open (load store + index): {:.0f} ms  [budget 2000 ms: {}]   of which index {:.0f} ms, {} lanes\n",
             open_ms, open_ms < 2000 ? "ok" : "OVER", index_ms, p->timeline().lanes().size());

  ExplorerApi api({p});
  const int64_t b = p->timeline().begin(), e = p->timeline().end(), span = e - b;
  const int px = 2 * 1400;  // the UI asks for twice the plot width
  auto query = [&](int64_t t0, int64_t t1, Stats& s) {
    auto start = Clock::now();
    ApiResponse r = api.get("/api/profiles/0/timeline",
                            {{"t0", std::to_string(t0)}, {"t1", std::to_string(t1)}, {"px", std::to_string(px)}});
    std::string body = r.body.dump();
    s.ms.push_back(ms_since(start));
    for (const auto& lane : r.body["lanes"]) s.max_drawables = std::max(s.max_drawables, lane["e"].size());
  };
  fmt::print("timeline queries (JSON built and serialized, px={}):\n", px);
  Stats full;
  for (int i = 0; i < 5; ++i) query(b, e, full);
  full.print("whole profile");
  // Zoom in step by step around a point, as the wheel does, then pan at the deepest level.
  Stats zoom, pan;
  int64_t mid = b + span * 37 / 100;
  for (double f = 1.0; f > 1e-6; f *= 0.5) {
    int64_t w = std::max<int64_t>(1000, int64_t(double(span) * f));
    query(mid - w / 2, mid + w / 2, zoom);
  }
  zoom.print("zoom 1x .. 1e-6x (21 steps)");
  for (double f : {0.1, 0.001}) {
    int64_t w = int64_t(double(span) * f);
    for (int i = 0; i < 20; ++i) query(b + i * w / 4, b + i * w / 4 + w, pan);
  }
  pan.print("pan at 10% and 0.1% of the span");
  Stats other;
  for (int i = 0; i < 3; ++i) {
    auto start = Clock::now();
    api.get("/api/profiles/0/range", {{"t0", std::to_string(b)}, {"t1", std::to_string(e)}}).body.dump();
    other.ms.push_back(ms_since(start));
  }
  other.print("range statistics, whole profile");
  Stats summary;
  auto start = Clock::now();
  api.get("/api/profiles/0/summary", {}).body.dump();
  summary.ms.push_back(ms_since(start));
  summary.print("summary (first, uncached)");

  // Over HTTP on loopback, as the browser sees it: Chromium's Accept-Encoding (httplib on
  // its own would answer it with Brotli at its slowest setting: 0.9 s a whole-profile query).
  ExploreOptions opts;
  opts.port = 0;
  opts.requests_per_second = 0;
  ExplorerServer server({p}, opts);
  int port = server.bind();
  std::thread th([&] { server.run(); });
  httplib::Client c("127.0.0.1", port);
  Stats http;
  for (int i = 0; i < 10; ++i) {
    int64_t w = span >> (2 * i);
    auto s = Clock::now();
    auto res = c.Get(fmt::format("/api/profiles/0/timeline?t0={}&t1={}&px={}", mid - w / 2, mid + w / 2, px).c_str(),
                     {{"Accept-Encoding", "gzip, deflate, br, zstd"}});
    http.ms.push_back(ms_since(s));
    if (!res || res->status != 200) fmt::print("HTTP query failed\n");
  }
  http.print("over HTTP (as a browser), zooming");
  server.stop();
  th.join();

  double worst = std::max({full.ms.back(), zoom.ms.back(), pan.ms.back(), http.ms.back()});
  fmt::print("worst timeline query: {:.1f} ms  [budget 100 ms: {}]\n", worst, worst < 100 ? "ok" : "OVER");
  std::filesystem::remove_all(dir);
  return 0;
}
