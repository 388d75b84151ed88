// The text of `opscope compile --explain`: what one signature compiled into.
#include <fmt/format.h>

#include "opscope/compiler/compile.h"

namespace opscope {

std::string CompileReport::str() const {
  std::string s = fmt::format("compiled function {}  signature {}\n", name, signature);
  s += pass_log.empty() ? "-- traced --\n" + traced_graph + "-- compiled --\n" + compiled_graph : pass_log;
  if (eager_fallback) {
    s += fmt::format("runs eagerly: {}\n", fallback_reason);
    return s;
  }
  s += fmt::format("fused kernels: {}   eager nodes: {}\n", kernels.size(), eager_nodes);
  for (size_t i = 0; i < kernels.size(); ++i) s += fmt::format("  {}  (entry {})\n", kernels[i], symbols[i]);
  if (!hash.empty()) {
    s += fmt::format("artifact: {}  hash {}  ({})\n", artifact_dir, hash, cache_hit ? "cache hit" : "built");
    if (!rebuilt_because.empty()) s += fmt::format("  rebuilt: {}\n", rebuilt_because);
  }
  s += fmt::format("time: trace {:.2f} ms, passes {:.2f} ms, codegen {:.2f} ms, build {:.1f} ms, load {:.2f} ms\n",
                   trace_ms, passes_ms, codegen_ms, build_ms, load_ms);
  return s;
}

}  // namespace opscope
