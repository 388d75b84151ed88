#include "opscope/analysis/advisor/region_kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <unordered_map>

namespace opscope::advisor {

using prof::EventKind;

RegionKernels region_kernels(const prof::Trace& t, std::string_view scope) {
  std::unordered_map<uint64_t, const prof::TraceEvent*> scopes;
  struct L { int64_t t0 = INT64_MAX, t1 = INT64_MIN, bytes = 0; uint64_t op = 0; const std::string* name = nullptr; };
  std::unordered_map<uint64_t, L> launches;
  for (const auto& e : t.events) {
    if (e.kind == EventKind::op || e.kind == EventKind::range) scopes[e.id] = &e;
    if (e.kind == EventKind::launch) launches[e.id].bytes = e.bytes;
    if (e.kind == EventKind::kernel) {
      L& l = launches[e.id];
      l.t0 = std::min(l.t0, e.t0);
      l.t1 = std::max(l.t1, e.t1);
      l.op = e.parent;
      l.name = &e.name;
    }
  }
  std::unordered_map<uint64_t, bool> inside;  // scope id → within `scope`, memoized
  auto in_region = [&](uint64_t id) {
    std::vector<uint64_t> path;
    bool found = false;
    for (; id; ) {
      if (auto m = inside.find(id); m != inside.end()) { found = m->second; break; }
      auto it = scopes.find(id);
      if (it == scopes.end()) break;
      path.push_back(id);
      if (it->second->name == scope) { found = true; break; }
      id = it->second->parent;
    }
    for (uint64_t p : path) inside[p] = found;
    return found;
  };
  RegionKernels out;
  for (auto& [id, l] : launches)
    if (l.t1 >= l.t0 && in_region(l.op)) {
      KernelSum& k = out[fmt::format("{} {} B", *l.name, l.bytes)];
      k.launches++;
      k.spans.push_back(l.t1 - l.t0);
    }
  for (auto& [name, k] : out) {
    std::nth_element(k.spans.begin(), k.spans.begin() + long(k.spans.size() / 2), k.spans.end());
    k.ns = k.launches * k.spans[k.spans.size() / 2];
  }
  return out;
}

int64_t total_ns(const RegionKernels& r) {
  int64_t n = 0;
  for (auto& [name, k] : r) n += k.ns;
  return n;
}

double changed_saved_ns(const RegionKernels& eager, const RegionKernels& compiled) {
  double saved = 0;
  for (auto& [name, k] : eager) {
    auto it = compiled.find(name);
    if (it == compiled.end() || it->second.launches != k.launches) saved += double(k.ns);
  }
  for (auto& [name, k] : compiled) {
    auto it = eager.find(name);
    if (it == eager.end() || it->second.launches != k.launches) saved -= double(k.ns);
  }
  return saved;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::optional<analysis::Peaks> recorded_peaks(const prof::Trace& t) {
  analysis::Peaks p = analysis::profile_peaks(t);
  if (!p.known() && p.fused_math_ns.empty()) return std::nullopt;
  return p;
}

}  // namespace opscope::advisor
