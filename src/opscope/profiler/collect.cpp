#include "opscope/profiler/collect.h"

#include <unistd.h>

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "opscope/profiler/symbolize.h"
#include "opscope/runtime/device.h"

namespace opscope::prof::detail {

namespace {

struct Drained {
  int64_t os_tid = 0;
  int32_t core_track = -1;
  int64_t dropped = 0;
  size_t begin = 0, end = 0;  // its records in the drained vector
};

// Copies [tail, head) of every ring and advances tail; frees rings their owners retired.
int64_t drain(std::vector<Record>& recs, std::vector<Drained>& rings) {
  Registry& reg = registry();
  std::lock_guard<std::mutex> g(reg.mutex);
  size_t total = 0;
  for (Ring* r : reg.rings) total += r->head.load(std::memory_order_acquire) - r->tail.load(std::memory_order_relaxed);
  recs.reserve(total + 1024);  // (a ring may still grow while we drain)
  advise_huge(recs.data(), recs.capacity() * sizeof(Record));
  std::vector<Ring*> keep;
  for (Ring* r : reg.rings) {
    uint64_t h = r->head.load(std::memory_order_acquire);
    uint64_t t = r->tail.load(std::memory_order_relaxed);
    uint64_t origin = r->origin.load(std::memory_order_relaxed);
    Drained d;
    d.os_tid = r->os_tid;
    d.core_track = r->core_track.load(std::memory_order_relaxed);
    d.begin = recs.size();
    uint64_t idx = (t - origin) % r->cap;
    for (uint64_t i = t; i < h; ++i) {
      recs.push_back(r->data[idx]);
      if (++idx == r->cap) idx = 0;
    }
    d.end = recs.size();
    r->tail.store(h, std::memory_order_release);
    uint64_t dropped = r->dropped.load(std::memory_order_relaxed);
    d.dropped = int64_t(dropped - r->dropped_base);
    r->dropped_base = dropped;
    if (d.end > d.begin || d.dropped) rings.push_back(d);
    if (r->retired.load(std::memory_order_acquire)) free_ring(r);
    else keep.push_back(r);
  }
  reg.rings.swap(keep);
  int64_t lost = reg.lost;
  reg.lost = 0;
  return lost;
}

std::string device_name(int device) {
  Device* d = Device::by_index(device);
  return d ? d->name() : fmt::format("device{}", device);
}

// "cpu:0 core 1", or "cpu:0 stream 3" for a stream its own engine runs.
std::string lane_name(int32_t key) {
  if (key & kEngineTrack) return fmt::format("{} stream {}", device_name(key >> 16), key & 0x7fff);
  return fmt::format("{} core {}", device_name(key >> 16), key & 0xffff);
}

// Tracks: host threads (the main thread first, then by OS tid), then device cores.
class TrackTable {
 public:
  void want_host(int64_t tid, int32_t core_track) {
    auto [it, fresh] = host_.try_emplace(tid, -1);
    if (core_track >= 0) it->second = core_track;
  }
  void want_core(int32_t key) { cores_.emplace(key, -1); }

  std::vector<Track> build() {
    std::vector<Track> out;
    int64_t pid = getpid();
    std::vector<int64_t> tids;
    for (auto& [tid, ct] : host_) tids.push_back(tid);
    std::stable_partition(tids.begin(), tids.end(), [&](int64_t t) { return t == pid; });
    for (int64_t tid : tids) {
      Track t;
      t.kind = Track::Kind::host_thread;
      t.os_tid = tid;
      int32_t ct = host_[tid];
      t.name = tid == pid  ? "main thread"
               : ct >= 0   ? fmt::format("thread {} ({})", tid, lane_name(ct))
                           : fmt::format("thread {}", tid);
      host_index_[tid] = int32_t(out.size());
      out.push_back(std::move(t));
    }
    for (auto& [key, idx] : cores_) {
      Track t;
      t.kind = Track::Kind::device_core;
      t.device = key >> 16;
      t.core = key & 0x7fff;  // an engine's track: its stream's id, as a GPU's stream track
      t.name = lane_name(key);
      idx = int32_t(out.size());
      out.push_back(std::move(t));
    }
    return out;
  }
  int32_t host(int64_t tid) const { return host_index_.at(tid); }
  int32_t core(int32_t key) const { return cores_.at(key); }

 private:
  std::map<int64_t, int32_t> host_;  // tid -> core track key of a device worker, or -1
  std::map<int64_t, int32_t> host_index_;
  std::map<int32_t, int32_t> cores_;  // (device << 16 | core) -> track index
};

int32_t core_key(const Record& r) {
  return (int32_t(r.device) << 16) | (r.kind & kEngineLane ? kEngineTrack | (r.lane & 0x7fff) : r.lane & 0xffff);
}

}  // namespace

Trace collect(const Window& w, const ProfilerConfig& config) {
  std::vector<Record> recs;
  std::vector<Drained> rings;
  int64_t lost = drain(recs, rings);

  Trace trace;
  trace.base_time_ns = w.start_ns;
  trace.wall_time_ns = w.start_wall_ns;
  trace.config_json = config.to_json();
  for (int i = 0; i < Device::kMaxDevices; ++i)
    if (Device* d = Device::by_index(i))
      trace.devices.push_back({d->index(), d->name(), d->description(), d->num_cores()});

  // Times in ns; records of an earlier window (late writers) are dropped here.
  auto ns = [&](const Record& r, int64_t t) { return r.kind & kTicks ? w.timebase.to_ns(t) : t; };
  // Kernels that ran while stop() waited for the devices but were launched after it
  // began (by other threads) are not part of the window.
  std::unordered_set<uint64_t> launched;
  bool check_launched = w.layers & kRuntime;
  if (check_launched)
    for (const Record& r : recs)
      if (EventKind(r.kind & kKindMask) == EventKind::launch) launched.insert(r.id);
  struct Key {
    int64_t t0;
    uint32_t kind;
    uint32_t index;  // into recs
    bool operator<(const Key& o) const { return t0 != o.t0 ? t0 < o.t0 : kind != o.kind ? kind < o.kind : index < o.index; }
  };
  std::vector<Key> order;
  std::vector<int32_t> ring_of(recs.size());
  order.reserve(recs.size());
  for (size_t k = 0; k < rings.size(); ++k)
    for (size_t i = rings[k].begin; i < rings[k].end; ++i) {
      Record& r = recs[i];
      r.t0 = ns(r, r.t0);
      r.t1 = ns(r, r.t1);
      if (r.t0 < w.start_ns) continue;
      if (check_launched && r.t0 >= w.stop_ns && EventKind(r.kind & kKindMask) == EventKind::kernel &&
          !launched.count(r.id))
        continue;
      ring_of[i] = int32_t(k);
      order.push_back({r.t0, uint32_t(r.kind & kKindMask), uint32_t(i)});
    }
  std::sort(order.begin(), order.end());
  std::vector<uint32_t> keep(order.size());  // indices into recs, in time order
  for (size_t i = 0; i < order.size(); ++i) keep[i] = order[i].index;
  std::vector<Key>().swap(order);

  // Tracks.
  TrackTable tracks;
  for (uint32_t i : keep) {
    const Record& r = recs[i];
    if (EventKind(r.kind & kKindMask) == EventKind::kernel) tracks.want_core(core_key(r));
    else tracks.want_host(rings[size_t(ring_of[i])].os_tid, rings[size_t(ring_of[i])].core_track);
  }
  for (const Drained& d : rings)
    if (d.dropped) {
      if (d.core_track >= 0) tracks.want_core(d.core_track);
      else tracks.want_host(d.os_tid, -1);
    }
  trace.tracks = tracks.build();
  trace.dropped_per_track.assign(trace.tracks.size(), 0);
  for (const Drained& d : rings)
    if (d.dropped) trace.dropped_per_track[size_t(d.core_track >= 0 ? tracks.core(d.core_track) : tracks.host(d.os_tid))] += d.dropped;
  trace.dropped = lost;
  for (int64_t n : trace.dropped_per_track) trace.dropped += n;

  // Names: interned indices in one pass under the table's lock; static names copied.
  std::vector<uint32_t> name_ids;
  for (uint32_t i : keep) {
    const Record& r = recs[i];
    if (!(r.kind & kNamePtr)) name_ids.push_back(uint32_t(r.name));
    if (r.aux && (EventKind(r.kind & kKindMask) == EventKind::op || (r.kind & kEngineLane))) name_ids.push_back(r.aux);
    if (r.bytes < 0 && EventKind(r.kind & kKindMask) == EventKind::op) name_ids.push_back(uint32_t(-r.bytes - 1));
  }
  std::sort(name_ids.begin(), name_ids.end());
  name_ids.erase(std::unique(name_ids.begin(), name_ids.end()), name_ids.end());
  std::unordered_map<uint32_t, std::string> names;
  NameTable::get().resolve(name_ids, names);

  // Call sites (with_stack), resolved once per distinct address.
  std::unordered_map<uintptr_t, std::string> sources;
  if (config.with_stack) {
    std::vector<uintptr_t> addrs;
    for (uint32_t i : keep) {
      EventKind k = EventKind(recs[i].kind & kKindMask);
      if ((k == EventKind::op || k == EventKind::range) && recs[i].bytes > 0) addrs.push_back(uintptr_t(recs[i].bytes));
    }
    std::sort(addrs.begin(), addrs.end());
    addrs.erase(std::unique(addrs.begin(), addrs.end()), addrs.end());
    std::vector<std::string> where = symbolize(addrs);
    for (size_t i = 0; i < addrs.size(); ++i) sources.emplace(addrs[i], std::move(where[i]));
  }

  trace.events.reserve(keep.size());
  advise_huge(trace.events.data(), trace.events.capacity() * sizeof(TraceEvent));
  for (uint32_t i : keep) {
    const Record& r = recs[i];
    EventKind k = EventKind(r.kind & kKindMask);
    TraceEvent& e = trace.events.emplace_back();
    e.kind = k;
    e.t0 = r.t0 - w.start_ns;
    e.t1 = std::max(r.t1, r.t0) - w.start_ns;
    e.id = r.id;
    e.parent = r.parent;
    if (r.kind & kNamePtr) e.name = reinterpret_cast<const char*>(uintptr_t(r.name));
    else if (auto it = names.find(uint32_t(r.name)); it != names.end()) e.name = it->second;
    e.device = r.device;
    switch (k) {
      case EventKind::op:
      case EventKind::range:
        e.value = r.value;
        if (r.aux)
          if (auto it = names.find(r.aux); it != names.end()) e.shapes = it->second;
        if (r.bytes < 0) {  // a call site given as text (op_begin_described)
          if (auto it = names.find(uint32_t(-r.bytes - 1)); it != names.end()) e.source = it->second;
        } else if (config.with_stack && r.bytes) {
          if (auto it = sources.find(uintptr_t(r.bytes)); it != sources.end()) e.source = it->second;
        }
        break;
      case EventKind::launch:
      case EventKind::kernel:
        e.bytes = r.bytes;
        e.flops = r.value;
        if (k == EventKind::kernel && (r.kind & kEngineLane)) {
          e.stream = r.lane;
          if (auto it = names.find(r.aux); r.aux && it != names.end()) e.shapes = it->second;
        }
        break;
      case EventKind::alloc:
      case EventKind::free:
        e.bytes = r.bytes;
        e.value = r.value;
        break;
      case EventKind::sync: break;
      case EventKind::api: break;  // CUPTI's runtime calls come from cupti_convert, never from these buffers
    }
    if (k == EventKind::launch || k == EventKind::sync) e.stream = r.lane;
    const Drained& d = rings[size_t(ring_of[i])];
    e.track = k == EventKind::kernel ? tracks.core(core_key(r)) : tracks.host(d.os_tid);
  }
  return trace;
}

}  // namespace opscope::prof::detail
