#include "opscope/profiler/cupti_convert.h"

#include <cxxabi.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "opscope/core/error.h"

namespace opscope::prof {

namespace {

const ClockSample& best(std::span<const ClockSample> s) {
  return *std::min_element(s.begin(), s.end(),
                           [](const ClockSample& a, const ClockSample& b) { return a.bracket() < b.bracket(); });
}

// The host time of the CUPTI read: the bracket's midpoint (off by at most half of it).
int64_t mid(const ClockSample& s) { return s.host_before + s.bracket() / 2; }

constexpr int64_t kMinDriftSpanNs = 1'000'000;
constexpr double kMaxDrift = 1e-3;

}  // namespace

int64_t ClockFit::to_host(int64_t cupti) const {
  return host_ref + std::llround(double(cupti - cupti_ref) * rate);
}

ClockFit fit_clock(std::span<const ClockSample> start, std::span<const ClockSample> stop) {
  if (start.empty()) fail("cupti", "no clock samples at start: cannot align CUPTI's clock to the host's");
  for (auto samples : {start, stop})
    for (const ClockSample& s : samples)
      if (s.bracket() < 0) fail("cupti", "a clock sample's host reads go backwards ({} then {})", s.host_before, s.host_after);
  const ClockSample& a = best(start);
  ClockFit fit;
  fit.cupti_ref = a.cupti;
  fit.host_ref = mid(a);
  // +1: the midpoint is rounded down to whole ns.
  fit.error_ns = (a.bracket() + 1) / 2 + 1;
  if (stop.empty()) return fit;
  const ClockSample& b = best(stop);
  fit.error_ns = std::max(fit.error_ns, (b.bracket() + 1) / 2 + 1);
  int64_t span = b.cupti - a.cupti;
  if (span < kMinDriftSpanNs) return fit;
  double rate = double(mid(b) - mid(a)) / double(span);
  if (std::abs(rate - 1.0) > kMaxDrift) return fit;
  fit.rate = rate;
  fit.drift_measured = true;
  return fit;
}

const char* copy_name(CopyKind k) {
  switch (k) {
    case CopyKind::h2d: return "Memcpy HtoD";
    case CopyKind::d2h: return "Memcpy DtoH";
    case CopyKind::d2d: return "Memcpy DtoD";
    case CopyKind::h2h: return "Memcpy HtoH";
    case CopyKind::peer: return "Memcpy PtoP";
    case CopyKind::other: return "Memcpy";
    case CopyKind::memset: return "Memset";
  }
  return "Memcpy";
}

std::string api_name(std::string_view n) {
  size_t v = n.rfind("_v");
  if (v != std::string_view::npos && v + 2 < n.size() &&
      std::all_of(n.begin() + std::ptrdiff_t(v) + 2, n.end(), [](char c) { return c >= '0' && c <= '9'; }))
    n = n.substr(0, v);
  return std::string(n);
}

std::string kernel_name(std::string_view n) {
  if (n.substr(0, 2) != "_Z") return std::string(n);
  std::string mangled(n);
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : mangled;
}

std::string device_tracing_json(const DeviceActivity& a) {
  nlohmann::json j;
  j["source"] = "cupti";
  j["clock"] = {
      {"method",
       "cuptiGetTimestamp read between two CLOCK_MONOTONIC reads at start and stop; the reading with the smallest "
       "host bracket at each end; offset from the start reading, drift from the two"},
      {"error_bound_ns", a.clock.error_ns},
      {"rate", a.clock.rate},
      {"drift_measured", a.clock.drift_measured},
      {"cupti_ref_ns", a.clock.cupti_ref},
      {"host_ref_ns", a.clock.host_ref}};
  j["dropped_records"] = a.dropped_records;
  j["buffers_refused"] = a.buffers_refused;
  j["buffers_used"] = a.buffers_used;
  j["buffer_kb"] = a.buffer_kb;
  j["kernels"] = a.kernels.size();
  j["copies"] = a.copies.size();
  j["api_calls"] = a.api_calls.size();
  return j.dump();
}

void merge_device_activity(Trace& trace, const DeviceActivity& a) {
  // CUPTI correlation -> our launch id; our launch id -> its launch event.
  std::unordered_map<uint32_t, uint64_t> launch_of;
  for (const ExternalCorrelation& x : a.external) launch_of[x.correlation] = x.launch_id;
  std::unordered_map<uint64_t, size_t> launch_event;
  for (size_t i = 0; i < trace.events.size(); ++i)
    if (trace.events[i].kind == EventKind::launch) launch_event.emplace(trace.events[i].id, i);

  // CUDA ordinal -> our device index (the trace's "cuda:N"; added when missing).
  std::unordered_map<uint32_t, int32_t> device_of;
  auto device = [&](uint32_t ordinal) {
    auto [it, fresh] = device_of.try_emplace(ordinal, -1);
    if (!fresh) return it->second;
    std::string name = fmt::format("cuda:{}", ordinal);
    int32_t next = 0;
    for (const DeviceInfo& d : trace.devices) {
      if (d.name == name) return it->second = d.index;
      next = std::max(next, d.index + 1);
    }
    trace.devices.push_back({next, name, fmt::format("CUDA device {} (seen by CUPTI)", ordinal), 0});
    return it->second = next;
  };
  // Tracks: one per (device, stream); host threads by OS tid.
  std::map<std::pair<int32_t, uint32_t>, int32_t> stream_track;
  std::map<int64_t, int32_t> thread_track;
  for (size_t i = 0; i < trace.tracks.size(); ++i) {
    const Track& t = trace.tracks[i];
    if (t.kind == Track::Kind::host_thread) thread_track.emplace(t.os_tid, int32_t(i));
  }
  auto add_track = [&](Track t) {
    trace.tracks.push_back(std::move(t));
    trace.dropped_per_track.resize(trace.tracks.size(), 0);
    return int32_t(trace.tracks.size() - 1);
  };
  auto gpu_track = [&](uint32_t ordinal, uint32_t stream) {
    int32_t dev = device(ordinal);
    auto [it, fresh] = stream_track.try_emplace({dev, stream}, -1);
    if (fresh) {
      Track t;
      t.kind = Track::Kind::device_core;
      t.device = dev;
      t.core = int32_t(stream);
      t.name = fmt::format("cuda:{} stream {}", ordinal, stream);
      it->second = add_track(std::move(t));
    }
    return it->second;
  };
  auto host_track = [&](int64_t tid) {
    auto [it, fresh] = thread_track.try_emplace(tid, -1);
    if (fresh) {
      Track t;
      t.os_tid = tid;
      t.name = fmt::format("thread {}", tid);
      it->second = add_track(std::move(t));
    }
    return it->second;
  };

  const int64_t base = trace.base_time_ns;
  std::vector<TraceEvent> added;
  added.reserve(a.kernels.size() + a.copies.size() + a.api_calls.size());
  // Times, ids and the launch's op; false when the record maps before the window.
  auto fill = [&](TraceEvent& e, int64_t start, int64_t end, uint32_t correlation) {
    e.t0 = a.clock.to_host(start) - base;
    e.t1 = std::max(a.clock.to_host(end) - base, e.t0);
    if (e.t0 < 0) return false;
    auto l = launch_of.find(correlation);
    if (l == launch_of.end()) return true;
    e.id = l->second;
    if (auto le = launch_event.find(e.id); le != launch_event.end()) e.parent = trace.events[le->second].parent;
    return true;
  };
  for (const GpuKernelRecord& k : a.kernels) {
    TraceEvent e;
    e.kind = EventKind::kernel;
    if (!fill(e, k.start, k.end, k.correlation)) continue;
    e.name = kernel_name(k.name);
    // One GPU kernel is the whole launch: its bytes and flops are the launch's, and so is
    // its name ("rms_norm_f32", as on the CPU device, so tables and diffs match across
    // devices); the device function CUPTI saw stays as its source.
    if (auto le = launch_event.find(e.id); e.id && le != launch_event.end()) {
      const TraceEvent& launch = trace.events[le->second];
      e.bytes = launch.bytes;
      e.flops = launch.flops;
      if (!launch.name.empty()) {
        e.source = std::move(e.name);
        e.name = launch.name;
      }
    }
    e.device = device(k.device);
    e.stream = int32_t(k.stream);
    e.track = gpu_track(k.device, k.stream);
    added.push_back(std::move(e));
  }
  for (const GpuCopyRecord& c : a.copies) {
    TraceEvent e;
    e.kind = EventKind::kernel;
    if (!fill(e, c.start, c.end, c.correlation)) continue;
    e.name = copy_name(c.kind);
    e.bytes = c.bytes;  // bandwidth = bytes / (t1 - t0)
    e.device = device(c.device);
    e.stream = int32_t(c.stream);
    e.track = gpu_track(c.device, c.stream);
    added.push_back(std::move(e));
  }
  for (const ApiRecord& r : a.api_calls) {
    TraceEvent e;
    e.kind = EventKind::api;
    if (!fill(e, r.start, r.end, r.correlation)) continue;
    e.name = api_name(r.name);
    e.track = host_track(r.thread);
    added.push_back(std::move(e));
  }

  trace.dropped += a.dropped_records;
  trace.device_tracing_json = device_tracing_json(a);
  if (added.empty()) return;
  size_t n = trace.events.size();
  trace.events.insert(trace.events.end(), std::make_move_iterator(added.begin()), std::make_move_iterator(added.end()));
  auto by_time = [](const TraceEvent& x, const TraceEvent& y) {
    return x.t0 != y.t0 ? x.t0 < y.t0 : uint8_t(x.kind) < uint8_t(y.kind);
  };
  std::stable_sort(trace.events.begin() + std::ptrdiff_t(n), trace.events.end(), by_time);
  std::inplace_merge(trace.events.begin(), trace.events.begin() + std::ptrdiff_t(n), trace.events.end(), by_time);
}

}  // namespace opscope::prof
