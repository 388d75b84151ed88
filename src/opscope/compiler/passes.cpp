// The pass pipeline: each pass a function, each switchable, each visible in explain.
#include <fmt/format.h>

#include <cstdlib>
#include <sstream>

#include "opscope/compiler/passes.h"
#include "opscope/core/error.h"

namespace opscope::compiler {

bool disable_pass(PassOptions& opt, const std::string& name) {
  if (name == "dce") opt.dce = false;
  else if (name == "cse") opt.cse = false;
  else if (name == "fold") opt.fold = false;
  else if (name == "fuse") opt.fuse = false;
  else if (name == "attention") opt.attention = false;
  else if (name == "pack") opt.pack = false;
  else if (name == "residual") opt.residual = false;
  else if (name == "rotary") opt.rotary = false;
  else if (name == "all") opt = PassOptions{false, false, false, false, false, false, false, false};
  else return false;
  return true;
}

PassOptions pass_options_from_env(PassOptions base) {
  const char* e = std::getenv("OPSCOPE_COMPILE_DISABLE");
  if (!e || !*e) return base;
  std::stringstream in(e);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty() && !disable_pass(base, item))
      fail("compile", "OPSCOPE_COMPILE_DISABLE names an unknown pass '{}' (passes: {})", item, kPassNames);
  return base;
}

void run_passes(Graph& g, const PassOptions& opt, std::string* log) {
  std::string last = log ? g.str() : std::string();
  if (log) *log += "-- traced --\n" + last;
  auto step = [&](const char* name, bool on, auto&& pass) {
    if (!on) {
      if (log) *log += fmt::format("-- {}: off --\n", name);
      return;
    }
    if (!log) return pass(g);
    pass(g);
    std::string after = g.str();
    // An unchanged graph is said, not printed again: the log stays readable.
    *log += after == last ? fmt::format("-- after {} -- (unchanged)\n", name)
                          : fmt::format("-- after {} --\n", name) + after;
    last = std::move(after);
  };
  step("dce", opt.dce, dce);
  step("cse", opt.cse, cse);
  step("fold", opt.fold, fold_constants);
  // Folding and CSE leave dead nodes behind (the constants they replaced).
  if (opt.cse || opt.fold) step("dce", opt.dce, dce);
  step("fuse", opt.fuse, [pack = opt.pack, attention = opt.attention, residual = opt.residual,
                          rotary = opt.rotary](Graph& gr) {
    elide_clones(gr);
    sink_reshapes(gr);  // first: a bias add and its activation behind a view meet, and stay an add
    fold_matmul_bias(gr);
    if (attention) fuse_attention(gr);  // before the scores' steps would fuse into a kernel
    if (rotary) fuse_rotary(gr);  // before its muls and add would fuse into a kernel
    if (pack) fold_matmul_epilogue(gr);
    if (pack && residual) fold_matmul_residual(gr);
    fuse(gr);
  });
}

}  // namespace opscope::compiler
