#include "opscope/importer/links.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

namespace opscope::importer {

bool is_op(const RawTrace& t, const RawEvent& e) {
  return e.ph == 'X' && (e.category == Category::cpu_op || (t.legacy_array && e.category == Category::none));
}

bool is_scope(const RawTrace& t, const RawEvent& e) {
  return is_op(t, e) || (e.ph == 'X' && e.category == Category::user_annotation);
}

LaunchRule detect_launch_rule(const RawTrace& t, bool& self_referencing) {
  int64_t both = 0, same = 0, lower = 0;
  for (const RawEvent& e : t.events) {
    if (!runtime_call(e.category)) continue;
    if (e.external_id_lower != kNone) ++lower;
    if (e.external_id == kNone || e.correlation == kNone) continue;
    ++both;
    same += e.external_id == e.correlation;
  }
  self_referencing = both > 0 && same == both;
  if (t.legacy_array) return LaunchRule::enclosing_op;
  if (lower > 0 && both == 0) return LaunchRule::lower_external_id;
  if (both > 0 && !self_referencing) return LaunchRule::external_id;
  return LaunchRule::enclosing_op;
}

Nesting nest(const RawTrace& t, const std::vector<int32_t>& track) {
  const auto& ev = t.events;
  Nesting n;
  n.scope.assign(ev.size(), -1);
  n.op.assign(ev.size(), -1);
  std::vector<uint8_t> scope(ev.size()), op(ev.size());
  std::vector<uint32_t> order;
  order.reserve(ev.size());
  for (size_t i = 0; i < ev.size(); ++i) {
    if (track[i] < 0) continue;
    scope[i] = is_scope(t, ev[i]);
    op[i] = is_op(t, ev[i]);
    order.push_back(uint32_t(i));
  }
  // Per track in time order; at one start, scopes first, the longest first, a range
  // before an op of the same span (annotations wrap the ops they name).
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const RawEvent &x = ev[a], &y = ev[b];
    if (track[a] != track[b]) return track[a] < track[b];
    if (x.ts != y.ts) return x.ts < y.ts;
    if (scope[a] != scope[b]) return scope[a] > scope[b];
    if (x.dur != y.dur) return x.dur > y.dur;
    if (op[a] != op[b]) return op[a] < op[b];
    return a < b;
  });
  struct Open {
    uint32_t event;
    int64_t end;
    int32_t op;  // innermost op at or below this entry
  };
  std::vector<Open> stack;
  int32_t current = -1;
  for (uint32_t i : order) {
    const RawEvent& e = ev[i];
    if (track[i] != current) stack.clear(), current = track[i];
    while (!stack.empty() && stack.back().end <= e.ts)
      stack.pop_back();
    if (!stack.empty()) {
      n.scope[i] = int32_t(stack.back().event);
      n.op[i] = stack.back().op;
    }
    if (scope[i]) stack.push_back({i, e.ts + e.dur, op[i] ? int32_t(i) : n.op[i]});
  }
  return n;
}

std::vector<int32_t> launching_ops(const RawTrace& t, LaunchRule rule, const Nesting& nesting) {
  const auto& ev = t.events;
  std::vector<int32_t> out(ev.size(), -1);
  std::unordered_map<int64_t, int32_t> op_of_id;
  if (rule != LaunchRule::enclosing_op)
    for (size_t i = 0; i < ev.size(); ++i) {
      if (!is_op(t, ev[i])) continue;
      int64_t id = rule == LaunchRule::external_id ? ev[i].external_id : ev[i].external_id_lower;
      if (id != kNone) op_of_id.try_emplace(id, int32_t(i));
    }
  for (size_t i = 0; i < ev.size(); ++i) {
    if (!runtime_call(ev[i].category)) continue;
    out[i] = nesting.op[i];
    if (rule == LaunchRule::enclosing_op) continue;
    int64_t id = rule == LaunchRule::external_id ? ev[i].external_id : ev[i].external_id_lower;
    if (id == kNone) continue;
    if (auto it = op_of_id.find(id); it != op_of_id.end()) out[i] = it->second;
  }
  return out;
}

}  // namespace opscope::importer
