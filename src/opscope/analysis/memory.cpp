#include "opscope/analysis/memory.h"

#include <cstdlib>
#include <fmt/format.h>
#include <map>
#include <unordered_map>

namespace opscope::analysis {

namespace {

bool is_memory(EventKind k) { return k == EventKind::alloc || k == EventKind::free; }

// The op/range `id` and its enclosing ones, outermost first: "rmsnorm naive > mul".
std::string op_path(const Trace& trace, uint64_t id) {
  if (!id) return "";
  std::unordered_map<uint64_t, const TraceEvent*> scopes;
  for (const TraceEvent& e : trace.events)
    if ((e.kind == EventKind::op || e.kind == EventKind::range) && e.id) scopes.emplace(e.id, &e);
  std::vector<const std::string*> names;
  // The bound guards against a parent cycle in a corrupt trace.
  for (uint64_t a = id; a && names.size() < 64;) {
    auto it = scopes.find(a);
    if (it == scopes.end()) break;
    names.push_back(&it->second->name);
    a = it->second->parent == a ? 0 : it->second->parent;
  }
  std::string out;
  for (auto n = names.rbegin(); n != names.rend(); ++n) out += (out.empty() ? "" : " > ") + **n;
  return out;
}

// A time since the profile's start: "12.3 ms", "4.5 us", "800 ns".
std::string when(int64_t ns) {
  if (ns >= 1'000'000) return fmt::format("{:.1f} ms", double(ns) / 1e6);
  if (ns >= 1'000) return fmt::format("{:.1f} us", double(ns) / 1e3);
  return fmt::format("{} ns", ns);
}

}  // namespace

bool has_memory_events(const Trace& trace) {
  for (const TraceEvent& e : trace.events)
    if (is_memory(e.kind)) return true;
  return false;
}

std::vector<DeviceMemory> memory_summary(const Trace& trace) {
  std::map<int32_t, DeviceMemory> by_device;
  for (const TraceEvent& e : trace.events) {  // in time order
    if (!is_memory(e.kind)) continue;
    bool alloc = e.kind == EventKind::alloc;
    auto [it, fresh] = by_device.try_emplace(e.device);
    DeviceMemory& m = it->second;
    if (fresh) {
      m.device = e.device;
      // `value` is the device's allocated bytes after this event.
      m.start_bytes = alloc ? e.value - e.bytes : e.value + e.bytes;
      m.peak_bytes = m.start_bytes - 1;  // any first event sets the peak
    }
    (alloc ? m.allocs : m.frees)++;
    (alloc ? m.allocated_bytes : m.freed_bytes) += e.bytes;
    m.end_bytes = e.value;
    if (e.value > m.peak_bytes) {
      m.peak_bytes = e.value;
      m.peak_time_ns = e.t0;
      m.peak_op = e.parent;
    }
  }
  std::vector<DeviceMemory> out;
  for (auto& [d, m] : by_device) {
    m.name = fmt::format("device {}", d);
    for (const DeviceInfo& info : trace.devices)
      if (info.index == d && !info.name.empty()) m.name = info.name;
    m.peak_op_path = op_path(trace, m.peak_op);
    out.push_back(std::move(m));
  }
  return out;
}

std::string memory_summary_text(const Trace& trace) {
  std::string out;
  for (const DeviceMemory& m : memory_summary(trace))
    out += fmt::format("{} memory: peak {} at {}{}\n", m.name, format_memory(m.peak_bytes, 1), when(m.peak_time_ns),
                       m.peak_op_path.empty() ? "" : " in " + m.peak_op_path);
  return out;
}

}  // namespace opscope::analysis
