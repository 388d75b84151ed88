#include "opscope/analysis/advisor/profile_ops.h"

#include <algorithm>

#include "opscope/analysis/advisor/op_kinds.h"
#include "opscope/core/error.h"

namespace opscope::advisor {

using prof::EventKind;

std::vector<std::string_view> ProfileOps::context_of(const TraceEvent* e) const {
  std::vector<std::string_view> path;
  for (uint64_t id = e->parent; id && path.size() < 64;) {
    auto it = scopes.find(id);
    if (it == scopes.end()) break;
    if (it->second->kind == EventKind::range) path.push_back(it->second->name);
    id = it->second->parent;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

uint64_t ProfileOps::innermost_range(const TraceEvent* e) const {
  for (uint64_t id = e->parent; id;) {
    auto it = scopes.find(id);
    if (it == scopes.end()) break;
    if (it->second->kind == EventKind::range) return id;
    id = it->second->parent;
  }
  return 0;
}

uint64_t ProfileOps::enclosing(const TraceEvent* e, std::string_view name) const {
  for (uint64_t id = e->parent; id;) {
    auto it = scopes.find(id);
    if (it == scopes.end()) break;
    if (it->second->name == name) return id;
    id = it->second->parent;
  }
  return 0;
}

int64_t shape_bytes(const TraceEvent& op) {
  std::vector<int64_t> in = input_bytes(op.shapes);
  if (in.empty()) return 0;
  int64_t sum = 0;
  for (int64_t b : in) sum += b;
  return reduction(op.name) ? sum : sum + *std::max_element(in.begin(), in.end());
}

ProfileOps profile_ops(const Trace& trace) {
  ProfileOps p;
  std::unordered_map<uint64_t, int64_t> alloc_bytes;  // op id → bytes it allocated
  for (const TraceEvent& e : trace.events) {
    switch (e.kind) {
      case EventKind::op:
      case EventKind::range:
        p.scopes[e.id] = &e;
        p.any_shapes = p.any_shapes || (!e.shapes.empty() && e.kind == EventKind::op);
        break;
      case EventKind::launch: {
        LaunchSpan& l = p.launches[e.id];
        l.bytes = e.bytes;
        l.flops = e.flops;
        l.op = e.parent;
        l.has_launch = true;
        l.submit = e.t1;
        break;
      }
      case EventKind::kernel: {
        LaunchSpan& l = p.launches[e.id];
        l.t0 = std::min(l.t0, e.t0);
        l.t1 = std::max(l.t1, e.t1);
        l.slice_bytes += e.bytes;
        l.slices++;
        if (e.stream >= 0) l.stream = e.stream, p.gpu = true;
        if (!l.op) l.op = e.parent;
        break;
      }
      case EventKind::alloc:
        if (e.parent) alloc_bytes[e.parent] += e.bytes;
        break;
      default: break;
    }
  }
  if (p.scopes.empty()) fail("advise", "the profile has no framework ops (was the framework layer recorded?)");

  // A launch counts at its launching op: the outermost op above it, autograd's wrappers
  // aside (a backward node is not an op a user wrote; the aten ops inside it are).
  auto unit_op = [&](uint64_t id) -> uint64_t {
    uint64_t top = 0;
    for (int steps = 0; id && steps < 4096; ++steps) {
      auto it = p.scopes.find(id);
      if (it == p.scopes.end()) break;
      if (it->second->kind == EventKind::op && !autograd_wrapper(it->second->name)) top = id;
      id = it->second->parent;
    }
    return top;
  };
  std::vector<std::pair<LaunchSpan*, uint64_t>> ran;  // each launch and its op
  std::unordered_map<uint64_t, int64_t> launches_of;
  for (auto& [id, l] : p.launches) {
    if (!l.ran()) continue;  // no slice on a traced core
    if (!l.has_launch) l.bytes = l.slice_bytes;
    uint64_t top = unit_op(l.op);
    ran.emplace_back(&l, top);
    if (top) launches_of[top]++;
  }
  for (auto& [l, top] : ran) {
    // A GPU kernel that is its op's only launch moves what the op's shapes say.
    if (l->bytes == 0 && l->stream >= 0 && top && launches_of[top] == 1) l->bytes = shape_bytes(*p.scopes[top]);
    const int64_t span = l->t1 - l->t0;
    p.total_device_ns += span;
    p.kernels++;
    p.samples.push_back({double(span), double(l->bytes), l->slices > 1, l->flops <= l->bytes});
    if (!top) continue;
    Op& o = p.ops[top];
    o.ev = p.scopes[top];
    o.device_ns += span;
    o.bytes += l->bytes;
    o.launches++;
    o.fanned += l->slices > 1;
    o.slices += l->slices;
    o.kernels.push_back(l);
  }
  for (auto& [id, o] : p.ops) {
    if (auto it = alloc_bytes.find(id); it != alloc_bytes.end()) o.out_bytes = it->second;
    std::sort(o.kernels.begin(), o.kernels.end(), [](const LaunchSpan* a, const LaunchSpan* b) { return a->t0 < b->t0; });
    o.range = p.innermost_range(o.ev);
  }
  return p;
}

}  // namespace opscope::advisor
