#include "opscope/explorer/correlation.h"

#include <algorithm>

namespace opscope::explorer {

using prof::EventKind;

void CorrelationIndex::Links::sort() {
  bool sorted = true;
  for (size_t i = 1; i < keys.size() && sorted; ++i) sorted = keys[i - 1] <= keys[i];
  if (sorted) return;  // events were added in order: (key, event) is sorted too
  std::vector<uint32_t> order(keys.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return keys[a] < keys[b]; });
  std::vector<uint64_t> k(keys.size());
  std::vector<uint32_t> e(events.size());
  for (size_t i = 0; i < order.size(); ++i) k[i] = keys[order[i]], e[i] = events[order[i]];
  keys = std::move(k);
  events = std::move(e);
}

std::span<const uint32_t> CorrelationIndex::Links::find(uint64_t key) const {
  auto [lo, hi] = std::equal_range(keys.begin(), keys.end(), key);
  return {events.data() + (lo - keys.begin()), size_t(hi - lo)};
}

CorrelationIndex::CorrelationIndex(const prof::Trace& trace) : trace_(trace) {
  const auto& ev = trace.events;
  // Room for every event: the part not filled is never touched, so costs no memory,
  // and the lists never move while they grow.
  for (Links* l : {&op_, &launch_, &children_, &launches_of_, &kernels_of_}) {
    l->keys.reserve(ev.size());
    l->events.reserve(ev.size());
  }
  for (uint32_t i = 0; i < ev.size(); ++i) {
    const auto& e = ev[i];
    switch (e.kind) {
      case EventKind::op:
      case EventKind::range:
        op_.add(e.id, i);
        if (e.parent) children_.add(e.parent, i);
        break;
      case EventKind::launch:
        launch_.add(e.id, i);
        if (e.parent) launches_of_.add(e.parent, i);
        break;
      case EventKind::kernel: kernels_of_.add(e.id, i); break;
      default: break;
    }
  }
  for (Links* l : {&op_, &launch_, &children_, &launches_of_, &kernels_of_}) l->sort();
}

int64_t CorrelationIndex::op_by_id(uint64_t id) const {
  auto found = op_.find(id);
  return found.empty() ? -1 : int64_t(found.front());
}
int64_t CorrelationIndex::launch_by_id(uint64_t id) const {
  auto found = launch_.find(id);
  return found.empty() ? -1 : int64_t(found.front());
}
std::span<const uint32_t> CorrelationIndex::launches_of_op(uint64_t id) const {
  return launches_of_.find(id);
}
std::span<const uint32_t> CorrelationIndex::kernels_of_launch(uint64_t id) const {
  return kernels_of_.find(id);
}
std::span<const uint32_t> CorrelationIndex::child_ops(uint64_t id) const { return children_.find(id); }

int64_t CorrelationIndex::launch_device_ns(uint32_t launch) const {
  const auto& ks = kernels_of_launch(trace_.events[launch].id);
  if (ks.empty()) return 0;
  int64_t a = INT64_MAX, b = INT64_MIN;
  for (uint32_t k : ks) {
    a = std::min(a, trace_.events[k].t0);
    b = std::max(b, trace_.events[k].t1);
  }
  return b - a;
}

Chain CorrelationIndex::chain(uint32_t event, size_t limit) const {
  Chain c;
  const auto& ev = trace_.events;
  const auto& e = ev.at(event);
  uint64_t op_id = 0;
  switch (e.kind) {
    case EventKind::op:
    case EventKind::range: op_id = e.id; break;
    case EventKind::launch:
      op_id = e.parent;
      c.launches.push_back(event);
      break;
    case EventKind::kernel: {
      int64_t l = launch_by_id(e.id);
      if (l >= 0) c.launches.push_back(uint32_t(l));
      op_id = l >= 0 ? ev[l].parent : e.parent;
      break;
    }
    default: return c;
  }
  // Enclosing ops, walking parent links (bounded, in case a corrupt profile has a cycle).
  for (uint64_t id = op_id; id && c.ops.size() < 256;) {
    int64_t o = op_by_id(id);
    if (o < 0) break;
    c.ops.push_back(uint32_t(o));
    id = ev[o].parent;
  }
  std::reverse(c.ops.begin(), c.ops.end());

  auto add_launch_kernels = [&](uint32_t launch) {
    for (uint32_t k : kernels_of_launch(ev[launch].id)) {
      if (e.kind == EventKind::kernel || c.kernels.size() < limit) c.kernels.push_back(k);
      else c.truncated = true;
    }
  };
  if (e.kind == EventKind::op || e.kind == EventKind::range) {
    // The op and everything nested in it (depth-first; bounded by the limit).
    std::vector<uint64_t> stack{e.id};
    size_t visited = 0;
    while (!stack.empty() && visited < 1'000'000) {
      uint64_t id = stack.back();
      stack.pop_back();
      ++visited;
      for (uint32_t l : launches_of_op(id)) {
        if (c.launches.size() < limit) c.launches.push_back(l);
        else c.truncated = true;
      }
      for (uint32_t child : child_ops(id)) stack.push_back(ev[child].id);
    }
    std::sort(c.launches.begin(), c.launches.end());
    for (uint32_t l : c.launches) add_launch_kernels(l);
  } else {
    for (uint32_t l : c.launches) add_launch_kernels(l);
  }
  std::sort(c.kernels.begin(), c.kernels.end());
  return c;
}

}  // namespace opscope::explorer
