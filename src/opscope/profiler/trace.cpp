#include "opscope/profiler/trace.h"

namespace opscope::prof {

const char* kind_name(EventKind k) {
  switch (k) {
    case EventKind::op: return "op";
    case EventKind::range: return "range";
    case EventKind::launch: return "launch";
    case EventKind::alloc: return "alloc";
    case EventKind::free: return "free";
    case EventKind::sync: return "sync";
    case EventKind::kernel: return "kernel";
    case EventKind::api: return "api";
  }
  return "unknown";
}

}  // namespace opscope::prof
