// Hand-built trace events for tests that check what is computed from a Trace.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "opscope/analysis/key_averages.h"
#include "opscope/profiler/session.h"
#include "opscope/profiler/trace.h"
#include "opscope/runtime/device.h"

namespace opscope::test {

// An op or range `id` nested in `parent` (0: top level), over [t0, t1], with its
// recorded input shapes (record_shapes).
inline prof::TraceEvent scope(prof::EventKind kind, const std::string& name, uint64_t id, uint64_t parent,
                              int64_t t0, int64_t t1, const std::string& shapes = "") {
  prof::TraceEvent e;
  e.kind = kind;
  e.name = name;
  e.id = id;
  e.parent = parent;
  e.t0 = t0;
  e.t1 = t1;
  e.shapes = shapes;
  return e;
}

// An alloc or free of `bytes` at t in op/range `parent`, `after` bytes allocated on the
// device once it happened.
inline prof::TraceEvent mem(prof::EventKind kind, int64_t t, uint64_t parent, int64_t bytes, int64_t after,
                            int32_t device = 0) {
  prof::TraceEvent e;
  e.kind = kind;
  e.t0 = e.t1 = t;
  e.id = 0x1000 + uint64_t(t);
  e.parent = parent;
  e.bytes = bytes;
  e.value = after;
  e.device = device;
  return e;
}

// key_averages' row named `name` (a test failure, and an empty row, when there is none).
inline const analysis::KeyAverage& row(const analysis::KeyAverages& ka, const std::string& name) {
  for (const auto& r : ka.rows())
    if (r.name == name) return r;
  static analysis::KeyAverage none;
  ADD_FAILURE() << "no row " << name;
  return none;
}

// The trace of a profile around f(): the device finishes what came before it first, and
// what f launched before the profile stops.
template <class F> prof::Trace profiled(F&& f) {
  cpu().synchronize();
  prof::ProfilerConfig cfg;
  prof::Profiler session(cfg);
  session.start();
  f();
  cpu().synchronize();
  session.stop();
  return session.trace();
}

}  // namespace opscope::test
