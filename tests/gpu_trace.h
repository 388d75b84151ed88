// Hand-built GPU traces for the analyses' and the advisor's tests: a host thread and
// GPU streams per rank, event by event, times in ns.
#pragma once
#include <fmt/format.h>

#include <string>

#include "opscope/analysis/rank_view.h"
#include "opscope/analysis/trace.h"

namespace opscope::analysis {

struct GpuTrace {
  Trace t;
  uint64_t next_id = 1;

  int32_t host(int32_t rank = -1) {
    t.tracks.push_back({Track::Kind::host_thread, "main thread", 1, -1, -1, rank});
    return int32_t(t.tracks.size() - 1);
  }
  int32_t stream(int32_t s, int32_t rank = -1) {
    t.tracks.push_back({Track::Kind::device_core, fmt::format("cuda:0 stream {}", s), 0, 0, s, rank});
    return int32_t(t.tracks.size() - 1);
  }
  TraceEvent& add(EventKind k, int32_t track, int64_t t0, int64_t t1, std::string name = "") {
    TraceEvent e;
    e.kind = k;
    e.track = track;
    e.t0 = t0;
    e.t1 = t1;
    e.name = std::move(name);
    t.events.push_back(std::move(e));
    return t.events.back();
  }
  // A launch call on `host` over [c0, c1] and its kernel on `stream` over [k0, k1].
  void launch(int32_t host, int64_t c0, int64_t c1, int32_t stream, int64_t k0, int64_t k1, const std::string& kernel) {
    uint64_t id = next_id++;
    add(EventKind::launch, host, c0, c1, "cudaLaunchKernel").id = id;
    TraceEvent& k = add(EventKind::kernel, stream, k0, k1, kernel);
    k.id = id;
    k.stream = t.tracks[size_t(stream)].core;
    k.device = 0;
  }
  // Work whose launch fell outside the window.
  void kernel(int32_t stream, int64_t k0, int64_t k1, const std::string& name) {
    TraceEvent& k = add(EventKind::kernel, stream, k0, k1, name);
    k.id = next_id++;
    k.stream = t.tracks[size_t(stream)].core;
  }
  void step(int32_t host, int n, int64_t t0, int64_t t1) {
    add(EventKind::range, host, t0, t1, fmt::format("ProfilerStep#{}", n)).id = next_id++;
  }
  RankView view(int64_t rank = -1) const { return rank_view(t, rank); }
};

// Two ranks of two steps: a gemm on stream 7, then an all-reduce on stream 8 that runs
// until 800 ns into the step. Rank 1's gemm takes 600 ns, rank 0's 400: rank 0 waits
// for rank 1 in its all-reduce.
inline GpuTrace two_ranks() {
  GpuTrace g;
  for (int r = 0; r < 2; ++r) {
    int32_t h = g.host(r), s7 = g.stream(7, r), s8 = g.stream(8, r);
    for (int step = 0; step < 2; ++step) {
      int64_t t = step * 1000;
      g.step(h, step, t, t + 900);
      int64_t compute = r == 1 ? 600 : 400;
      g.launch(h, t, t + 5, s7, t + 10, t + 10 + compute, "gemm");
      g.launch(h, t + 6, t + 8, s8, t + 10 + compute, t + 800, "ncclDevKernel_AllReduce");
    }
  }
  return g;
}

}  // namespace opscope::analysis
