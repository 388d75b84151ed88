#include "opscope/importer/convert.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "opscope/importer/links.h"

namespace opscope::importer {

using prof::EventKind;
using prof::TraceEvent;
using prof::Track;

namespace {

// The integer a pid/tid text ends with: "7" → 7, "stream 7" → 7, "-1" → -1.
bool trailing_int(std::string_view s, int64_t& out) {
  size_t end = s.size();
  size_t b = end;
  while (b > 0 && s[b - 1] >= '0' && s[b - 1] <= '9') --b;
  if (b == end || end - b > 18) return false;
  int64_t v = 0;
  for (size_t i = b; i < end; ++i) v = v * 10 + (s[i] - '0');
  out = b > 0 && s[b - 1] == '-' ? -v : v;
  return true;
}

std::string format_of(const RawTrace& t, LaunchRule rule, bool self_referencing) {
  if (t.legacy_array) return "legacy-array";
  if (t.old_names || rule == LaunchRule::lower_external_id) return "kineto-2021";
  if (self_referencing) return "kineto-2022";
  if (rule == LaunchRule::external_id || t.has_base_time) return "kineto-2024";
  return "kineto-2022";
}

bool is_sync_call(std::string_view name) { return name.find("Synchronize") != std::string_view::npos; }

std::string gpu_description(const GpuProperties* p, int64_t id) {
  if (!p) return fmt::format("GPU {} (the trace has no deviceProperties for it)", id);
  std::string d = p->name.empty() ? fmt::format("GPU {}", id) : p->name;
  std::vector<std::string> parts;
  if (p->compute_major > 0) parts.push_back(fmt::format("sm_{}{}", p->compute_major, p->compute_minor));
  if (p->num_sms > 0) parts.push_back(fmt::format("{} SMs", p->num_sms));
  if (p->total_memory > 0) parts.push_back(fmt::format("{:.1f} GiB", double(p->total_memory) / double(1 << 30)));
  for (size_t i = 0; i < parts.size(); ++i) d += (i ? ", " : " (") + parts[i];
  return parts.empty() ? d : d + ")";
}

int64_t earliest_ts(const RawTrace& t) {
  int64_t first = INT64_MAX;
  for (const RawEvent& e : t.events) first = std::min(first, e.ts);
  return first;
}

// The Unix-epoch ns that ts counts from: baseTimeNanoseconds where ts is relative to it
// (2024+), else 0 (ts since the epoch). A file with both a base and epoch-sized ts
// (after 1973) counts from the epoch.
int64_t clock_origin(const RawTrace& t, int64_t earliest) {
  constexpr int64_t k1973 = 100'000'000'000'000'000;
  return t.has_base_time && earliest < k1973 ? t.base_time_ns : 0;
}

}  // namespace

int64_t first_time_ns(const RawTrace& t) {
  int64_t first = earliest_ts(t);
  if (first == INT64_MAX) return first;
  return clock_origin(t, first) + first;
}

FileReport append_trace(const RawTrace& t, prof::Trace& out, AppendContext& ctx, int64_t rank) {
  const auto& ev = t.events;
  const size_t n = ev.size();
  FileReport rep;
  rep.file = t.file;
  rep.rank = rank;
  rep.world_size = t.world_size;
  rep.backend = t.backend;
  bool self_referencing = false;
  LaunchRule rule = detect_launch_rule(t, self_referencing);
  rep.format = format_of(t, rule, self_referencing);
  rep.launch_rule = launch_rule_name(rule);
  if (!t.gpus.empty()) {
    rep.gpu_name = t.gpus.front().name;
    rep.gpu_memory = t.gpus.front().total_memory;
    rep.gpu_sms = t.gpus.front().num_sms;
  }
  Warnings warn = t.warnings;
  const int64_t shift = clock_origin(t, earliest_ts(t)) - out.base_time_ns;

  // Devices: the GPUs (deviceProperties first, then any other seen), a CPU for host memory.
  std::map<int64_t, int32_t> gpu_device;
  int32_t cpu_device = -1;
  auto next_device = [&] {
    int32_t next = 0;
    for (const prof::DeviceInfo& d : out.devices) next = std::max(next, d.index + 1);
    return next;
  };
  auto gpu = [&](int64_t id) {
    auto [it, fresh] = gpu_device.try_emplace(id, -1);
    if (!fresh) return it->second;
    const GpuProperties* props = nullptr;
    for (const GpuProperties& p : t.gpus)
      if (p.id == id) props = &p;
    prof::DeviceInfo d;
    d.index = next_device();
    d.name = fmt::format("{}cuda:{}", ctx.prefix, id);
    d.description = gpu_description(props, id);
    d.num_cores = props ? int32_t(props->num_sms) : 0;
    out.devices.push_back(d);
    return it->second = d.index;
  };
  for (const GpuProperties& p : t.gpus) gpu(p.id);
  auto cpu = [&] {
    if (cpu_device < 0) {
      cpu_device = next_device();
      out.devices.push_back({cpu_device, ctx.prefix + "cpu", "host memory (torch.profiler's CPU allocator)", 0});
    }
    return cpu_device;
  };

  // Tracks.
  auto add_track = [&](Track tr) {
    tr.rank = int32_t(rank);
    out.tracks.push_back(std::move(tr));
    out.dropped_per_track.resize(out.tracks.size(), 0);
    return int32_t(out.tracks.size() - 1);
  };
  std::map<std::pair<uint32_t, uint32_t>, int32_t> host_track;
  std::map<std::pair<int32_t, int64_t>, int32_t> gpu_track;
  std::unordered_set<uint32_t> pids;
  auto on_host = [](Category c) {
    return !on_gpu(c) && c != Category::flow && c != Category::fwdbwd && c != Category::trace_span;
  };
  for (const RawEvent& e : ev)
    if (on_host(e.category)) pids.insert(e.pid);
  auto host = [&](const RawEvent& e) {
    auto [it, fresh] = host_track.try_emplace({e.pid, e.tid}, -1);
    if (!fresh) return it->second;
    Track tr;
    const std::string& tid = t.strings[e.tid];
    int64_t os_tid = 0;
    trailing_int(tid, os_tid);
    tr.os_tid = os_tid;
    auto named = t.thread_names.find({e.pid, e.tid});
    std::string name = named != t.thread_names.end() && !named->second.empty() ? named->second : "thread " + tid;
    if (pids.size() > 1) name += " (pid " + t.strings[e.pid] + ")";
    tr.name = ctx.prefix + name;
    return it->second = add_track(std::move(tr));
  };
  auto device_track = [&](const RawEvent& e, int32_t& device, int64_t& stream) {
    int64_t id = e.device;
    if (id == kNone && !trailing_int(t.strings[e.pid], id)) {
      warn.add("GPU events whose pid names no device (put on device 0)", e.index);
      id = 0;
    }
    stream = e.stream;
    if (stream == kNone && !trailing_int(t.strings[e.tid], stream)) stream = -1;
    device = gpu(id);
    auto [it, fresh] = gpu_track.try_emplace({device, stream}, -1);
    if (!fresh) return it->second;
    Track tr;
    tr.kind = Track::Kind::device_core;
    tr.device = device;
    tr.core = int32_t(stream);
    tr.name = stream < 0 ? fmt::format("{}cuda:{} device-wide", ctx.prefix, id)
                         : fmt::format("{}cuda:{} stream {}", ctx.prefix, id, stream);
    return it->second = add_track(std::move(tr));
  };

  // Host tracks first (so the nesting sweep has them), in order of appearance.
  std::vector<int32_t> track(n, -1);
  for (size_t i = 0; i < n; ++i)
    if (on_host(ev[i].category)) track[i] = host(ev[i]);
  Nesting nesting = nest(t, track);
  std::vector<int32_t> launcher = launching_ops(t, rule, nesting);

  // Correlation: per id, the runtime call (the first; a repeat is an error in the file),
  // the bytes its GPU work moved, and the launch id once given. One map, one lookup.
  struct Link {
    int32_t call = -1;
    bool work = false, work_seen = false;
    int64_t bytes = 0;
    uint64_t launch = 0;
  };
  std::unordered_map<int64_t, Link> links;
  links.reserve(n / 2);
  for (size_t i = 0; i < n; ++i) {
    const RawEvent& e = ev[i];
    if (e.correlation == kNone) continue;
    if (runtime_call(e.category)) {
      Link& l = links[e.correlation];
      if (l.call >= 0) warn.add("runtime calls with a correlation id an earlier call has (linked by the first only)", e.index);
      else l.call = int32_t(i);
    } else if (device_work(e.category)) {
      Link& l = links[e.correlation];
      l.work = true;
      l.bytes += std::max<int64_t>(0, e.bytes == kNone ? 0 : e.bytes);
    }
  }
  auto link_of = [&](const RawEvent& e) -> Link* {
    if (e.correlation == kNone) return nullptr;
    auto it = links.find(e.correlation);
    return it == links.end() ? nullptr : &it->second;
  };
  auto launch_of = [&](Link& l) {
    if (!l.launch) l.launch = ctx.next_launch_id++;
    return l.launch;
  };
  // Flows pair by id: each start should have an end and each end a start.
  std::unordered_map<int64_t, std::pair<int32_t, int32_t>> flows;  // id → (first s, first f) index
  flows.reserve(n / 4);
  for (const RawEvent& e : ev) {
    if (e.category != Category::flow || e.flow_id == kNone) continue;
    auto& p = flows.try_emplace(e.flow_id, -1, -1).first->second;
    if (e.ph == 's' && p.first < 0) p.first = int32_t(e.index);
    if (e.ph == 'f' && p.second < 0) p.second = int32_t(e.index);
  }
  for (auto& [id, p] : flows) {
    rep.flows_without_finish += p.first >= 0 && p.second < 0;
    rep.flows_without_start += p.second >= 0 && p.first < 0;
  }

  // Ids: every scope an op id; each launch a launch id that its first GPU event shares.
  std::vector<uint64_t> scope_id(n, 0);
  for (size_t i = 0; i < n; ++i)
    if (is_scope(t, ev[i])) scope_id[i] = ctx.next_op_id++;
  auto op_id = [&](int32_t i) { return i >= 0 ? scope_id[size_t(i)] : 0; };
  std::map<int32_t, int64_t> allocated;  // device → bytes, where the trace lacks Total Allocated

  out.events.reserve(out.events.size() + n);
  for (size_t i = 0; i < n; ++i) {
    const RawEvent& e = ev[i];
    TraceEvent x;
    // Saturating: a crafted file's times must not overflow (each is within ±4e18 ns).
    if (__builtin_add_overflow(e.ts, shift, &x.t0)) x.t0 = e.ts < 0 ? INT64_MIN : INT64_MAX;
    if (__builtin_add_overflow(x.t0, e.dur, &x.t1)) x.t1 = INT64_MAX;
    x.name = t.strings[e.name];
    const Category c = e.category;
    if (c == Category::flow || c == Category::fwdbwd || c == Category::trace_span) continue;
    if (is_scope(t, e)) {
      x.kind = is_op(t, e) ? EventKind::op : EventKind::range;
      x.id = scope_id[i];
      x.parent = op_id(nesting.scope[i]);
      x.shapes = t.strings[e.detail];
      x.track = track[i];
      rep.ops += x.kind == EventKind::op;
    } else if (runtime_call(c)) {
      x.track = track[i];
      Link* l = link_of(e);
      if (l && l->call == int32_t(i) && l->work) {
        x.kind = EventKind::launch;
        x.bytes = l->bytes;  // a launch carries what its work moves, as opscope's own do
        x.id = launch_of(*l);
        x.parent = op_id(launcher[i]);
        ++rep.launches;
      } else {
        x.kind = is_sync_call(x.name) ? EventKind::sync : EventKind::api;
        x.parent = op_id(nesting.scope[i]);
      }
    } else if (on_gpu(c)) {
      int64_t stream = -1;
      x.track = device_track(e, x.device, stream);
      x.stream = int32_t(stream);
      if (device_work(c)) {
        x.kind = EventKind::kernel;
        x.bytes = std::max<int64_t>(0, e.bytes == kNone ? 0 : e.bytes);
        if (e.bandwidth_gbps >= 0) x.value = std::llround(double(e.bandwidth_gbps) * 1000);  // MB/s
        x.shapes = t.strings[e.detail];
        ++rep.gpu_events;
        Link* l = link_of(e);
        if (!l || l->call < 0) {
          ++rep.gpu_events_without_launch;
          x.id = ctx.next_launch_id++;
        } else {
          // The launch's id for its first GPU event; a launch with several (a graph, a
          // copy in parts) gives the others their own ids, so each counts its own time.
          x.id = l->work_seen ? ctx.next_launch_id++ : launch_of(*l);
          l->work_seen = true;
          x.parent = op_id(launcher[size_t(l->call)]);
        }
      } else {
        // Syncs and GPU-side annotations: on the GPU's row, counted by no table.
        x.kind = c == Category::gpu_sync ? EventKind::sync : EventKind::api;
        Link* l = link_of(e);
        if (l && l->call >= 0) x.parent = op_id(launcher[size_t(l->call)]);
      }
    } else if (c == Category::cpu_instant && x.name == "[memory]") {
      if (e.bytes == kNone || e.bytes == 0) {
        warn.add("[memory] events with no Bytes skipped", e.index);
        continue;
      }
      x.kind = e.bytes > 0 ? EventKind::alloc : EventKind::free;
      x.t1 = x.t0;
      x.id = uint64_t(e.addr);
      x.bytes = e.bytes > 0 ? e.bytes : -e.bytes;
      x.device = e.device_type > 0 ? gpu(std::max(0, e.device_id)) : cpu();
      int64_t& running = allocated[x.device];
      if (__builtin_add_overflow(running, e.bytes, &running)) running = e.bytes > 0 ? INT64_MAX : INT64_MIN;
      x.value = e.total_allocated != kNone ? e.total_allocated : running;
      x.parent = op_id(nesting.scope[i]);
      x.track = track[i];
      ++rep.memory_events;
    } else {
      // python_function, other instants, categories of other accelerators: kept as
      // generic events on their thread.
      x.kind = EventKind::api;
      x.parent = op_id(nesting.scope[i]);
      x.track = track[i];
    }
    out.events.push_back(std::move(x));
  }
  rep.warnings = warn.lines();
  return rep;
}

}  // namespace opscope::importer
