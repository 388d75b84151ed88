#include "opscope/profiler/annotate.h"

#include <cstdio>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

namespace opscope::prof {

namespace {
struct Annotators {
  std::mutex m;
  std::vector<std::pair<std::string, TraceAnnotator>> list;
  std::set<std::string> reported;
};
// Leaked on purpose: the OPSCOPE_PROFILE session collects from an atexit handler.
Annotators& annotators() {
  static Annotators* a = new Annotators;
  return *a;
}
}  // namespace

void set_trace_annotator(const std::string& key, TraceAnnotator fn) {
  Annotators& a = annotators();
  std::lock_guard<std::mutex> g(a.m);
  for (auto& [k, f] : a.list)
    if (k == key) {
      f = std::move(fn);
      return;
    }
  a.list.emplace_back(key, std::move(fn));
}

void annotate_trace(Trace& trace) {
  Annotators& a = annotators();
  std::vector<std::pair<std::string, TraceAnnotator>> list;
  {
    std::lock_guard<std::mutex> g(a.m);
    list = a.list;
  }
  for (auto& [key, fn] : list) {
    if (!fn) continue;
    try {
      fn(trace);
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> g(a.m);
      if (a.reported.insert(key).second)
        std::fprintf(stderr, "opscope: the profile lacks the %s annotations: %s\n", key.c_str(), e.what());
    }
  }
}

}  // namespace opscope::prof
