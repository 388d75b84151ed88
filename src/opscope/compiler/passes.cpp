// The pass pipeline: each pass a function, each switchable, each visible in explain.
#include <fmt/format.h>

#include <cstdlib>
#include <sstream>

#include "opscope/compiler/passes.h"
#include "opscope/core/error.h"

namespace opscope::compiler {

PassOptions pass_options_from_env(PassOptions base) {
  const char* e = std::getenv("OPSCOPE_COMPILE_DISABLE");
  if (!e || !*e) return base;
  std::stringstream in(e);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    if (item == "dce") base.dce = false;
    else if (item == "cse") base.cse = false;
    else if (item == "fold") base.fold = false;
    else if (item == "fuse") base.fuse = false;
    else if (item == "all") base = PassOptions{false, false, false, false};
    else fail("compile", "OPSCOPE_COMPILE_DISABLE names an unknown pass '{}' (passes: dce, cse, fold, fuse, all)", item);
  }
  return base;
}

void run_passes(Graph& g, const PassOptions& opt, std::string* log) {
  if (log) *log += "-- traced --\n" + g.str();
  auto step = [&](const char* name, bool on, void (*pass)(Graph&)) {
    if (!on) {
      if (log) *log += fmt::format("-- {}: off --\n", name);
      return;
    }
    pass(g);
    if (log) *log += fmt::format("-- after {} --\n", name) + g.str();
  };
  step("dce", opt.dce, dce);
  step("cse", opt.cse, cse);
  step("fold", opt.fold, fold_constants);
  // Folding and CSE leave dead nodes behind (the constants they replaced).
  if (opt.cse || opt.fold) step("dce", opt.dce, dce);
  step("fuse", opt.fuse, fuse);
}

}  // namespace opscope::compiler
