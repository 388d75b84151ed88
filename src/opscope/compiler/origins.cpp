#include "opscope/compiler/origins.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_set>

#include "opscope/profiler/annotate.h"
#include "opscope/profiler/trace.h"

namespace opscope::compiler {

namespace {
thread_local const Origin* t_origin = nullptr;

struct KernelOrigins {
  std::vector<std::string> ops, modules;  // distinct, in order of first registration
  bool shared = false;
};

std::mutex g_mutex;
std::map<std::string, KernelOrigins>* g_origins = new std::map<std::string, KernelOrigins>;  // leaked: read at exit

void add_unique(std::vector<std::string>& v, const std::string& s) {
  if (!s.empty() && std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}
}  // namespace

const std::string& Origin::module() const {
  static const std::string none;
  return modules.empty() ? none : modules.back();
}

OriginScope::OriginScope(const Origin* o) : prev_(t_origin) { t_origin = o; }
OriginScope::~OriginScope() { t_origin = prev_; }
const Origin* current_origin() { return t_origin; }

LaunchScope launch_scope(const std::vector<const Origin*>& origins) {
  std::vector<const std::vector<std::string>*> stacks;
  for (const Origin* o : origins)
    if (o && !o->modules.empty()) stacks.push_back(&o->modules);
  LaunchScope s;
  if (stacks.empty()) return s;
  const std::vector<std::string>* deepest = stacks[0];
  for (auto* st : stacks)
    if (st->size() > deepest->size()) deepest = st;
  auto prefix_of = [](const std::vector<std::string>& a, const std::vector<std::string>& b) {
    return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
  };
  bool chain = std::all_of(stacks.begin(), stacks.end(), [&](auto* st) { return prefix_of(*st, *deepest); });
  if (chain) {
    s.ranges.assign(deepest->begin() + 1, deepest->end());
    return s;
  }
  // The common ancestor, then one range naming each module the kernel came from.
  size_t common = deepest->size();
  for (auto* st : stacks) {
    size_t k = 0;
    while (k < common && k < st->size() && (*st)[k] == (*deepest)[k]) ++k;
    common = k;
  }
  if (common > 0) s.ranges.assign(deepest->begin() + 1, deepest->begin() + long(common));
  std::vector<std::string> leaves;
  for (auto* st : stacks) add_unique(leaves, st->back());
  std::string name;
  for (const std::string& l : leaves) name += (name.empty() ? "" : " + ") + l;
  s.ranges.push_back(name);
  s.shared = true;
  return s;
}

void register_kernel_origins(const std::string& kernel, const std::vector<const Origin*>& origins, bool shared) {
  std::lock_guard<std::mutex> g(g_mutex);
  static bool installed = false;
  if (!installed) {
    prof::set_trace_annotator("compiler.kernel_origins", annotate_trace_origins);
    installed = true;
  }
  KernelOrigins& k = (*g_origins)[kernel];
  for (const Origin* o : origins) {
    if (!o) continue;
    add_unique(k.ops, o->op);
    add_unique(k.modules, o->module());
  }
  k.shared = k.shared || shared;
}

void annotate_trace_origins(prof::Trace& trace) {
  std::map<std::string, KernelOrigins> known;
  {
    std::lock_guard<std::mutex> g(g_mutex);
    known = *g_origins;
  }
  if (known.empty()) return;
  std::set<std::string> ran;
  for (const prof::TraceEvent& ev : trace.events)
    if ((ev.kind == prof::EventKind::launch || ev.kind == prof::EventKind::kernel) && known.count(ev.name))
      ran.insert(ev.name);
  if (ran.empty()) return;
  using nlohmann::ordered_json;
  ordered_json cfg = trace.config_json.empty() ? ordered_json::object()
                                               : ordered_json::parse(trace.config_json, nullptr, false);
  if (cfg.is_discarded() || !cfg.is_object()) return;  // not ours to rewrite
  ordered_json& out = cfg["kernel_origins"];
  if (!out.is_object()) out = ordered_json::object();
  for (const std::string& name : ran) {
    const KernelOrigins& k = known[name];
    out[name] = {{"ops", k.ops}, {"modules", k.modules}, {"shared", k.shared}};
  }
  trace.config_json = cfg.dump();
}

}  // namespace opscope::compiler
