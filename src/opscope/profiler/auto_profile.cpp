#include "opscope/profiler/auto_profile.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "opscope/profiler/session.h"

namespace opscope::prof {

namespace {

// Leaked on purpose: used from an atexit handler, after other statics may be gone.
struct AutoState {
  std::mutex m;
  DefaultExporter exporter;
  Profiler* session = nullptr;
};
AutoState& state() {
  static AutoState* s = new AutoState;
  return *s;
}

void finish() {
  AutoState& s = state();
  Profiler* p = s.session;
  if (!p) return;
  try {
    p->stop();
    DefaultExporter ex;
    {
      std::lock_guard<std::mutex> g(s.m);
      ex = s.exporter;
    }
    if (ex) ex(p->trace(), p->config().output_dir);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "opscope: profile not written: %s\n", e.what());
  }
}

// Runs when the library is loaded.
struct AutoStart {
  AutoStart() {
    try {
      if (!ProfilerConfig::env_enabled()) return;
      ProfilerConfig c = ProfilerConfig::from_env();
      auto* p = new Profiler(std::move(c));
      p->start();
      state().session = p;
      std::atexit(finish);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "opscope: OPSCOPE_PROFILE ignored: %s\n", e.what());
    }
  }
} g_auto_start;

}  // namespace

void set_default_exporter(DefaultExporter exporter) {
  AutoState& s = state();
  std::lock_guard<std::mutex> g(s.m);
  s.exporter = std::move(exporter);
}

bool auto_profile_running() {
  Profiler* p = state().session;
  return p && p->running();
}

}  // namespace opscope::prof
